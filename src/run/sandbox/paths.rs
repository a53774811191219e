//! Which folders a confined plugin may use: the platform-neutral half of the
//! sandbox, kept apart from the system calls so it can be tested on its own.
//!
//! Reading is allowed on the system (interpreters, libraries, `/etc`), the
//! plugin's own folders, and where its interpreter lives; with
//! `filesystem:read`, on everything but the `/proc` entries of other processes. Interpreters installed
//! under the home folder (pyenv, nvm, asdf, …) must keep working without opening
//! the whole home folder, whose dotfiles hold credentials. So only the known
//! interpreter-manager folders are allowed, plus the install prefix of the
//! interpreter the entrypoint's `#!` line names, and never a folder that holds
//! the home folder or a catch-all like `~/.local`.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::Policy;
use crate::plugins::manifest::Permission;

/// One folder (with everything beneath it) or one file, and what the plugin may
/// do there. The OS layer turns it into a rule, keeping only the rights it
/// actually restricts for this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allow {
    pub path: PathBuf,
    /// Read files, list folders, execute.
    pub read: bool,
    /// Create, change, rename and delete.
    pub write: bool,
    /// The call fails when this path cannot be opened; other paths are
    /// skipped when missing (not every system has `/lib64` or `/nix`).
    pub required: bool,
}

/// System folders a plugin may always read and execute from.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
    // CPU counts and topology.
    "/sys",
    // /etc/resolv.conf is a link into it under systemd-resolved.
    "/run/systemd/resolve",
];

/// The parts of `/proc` that describe the machine rather than a process.
///
/// Not `/proc` itself: on some kernels a Landlock-confined process can still
/// read `/proc/PID/environ` and `maps` of an unconfined process of the same user
/// (they are checked through `mm_access`, which lets it through), and the host's
/// environment holds the API keys plugins must not see. The child's own
/// `/proc/PID` is allowed by the OS layer, in the child, where its pid is known.
const PROC_GLOBAL: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
];

/// Devices a plugin may always read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Interpreter-manager folders under the home folder, with the variable that
/// moves each one. Only folders that hold interpreters and packages, never
/// credentials: `~/.cargo/bin`, not `~/.cargo` (which holds `credentials.toml`).
const MANAGERS: &[(Option<&str>, &str)] = &[
    (Some("PYENV_ROOT"), ".pyenv"),
    (Some("NVM_DIR"), ".nvm"),
    (Some("ASDF_DATA_DIR"), ".asdf"),
    (Some("VOLTA_HOME"), ".volta"),
    (Some("RUSTUP_HOME"), ".rustup"),
    (Some("BUN_INSTALL"), ".bun"),
    (Some("DENO_INSTALL"), ".deno"),
    (None, ".rbenv"),
    (None, ".nodenv"),
    (None, ".fnm"),
    (None, ".local/share/fnm"),
    (None, ".local/share/mise"),
    (None, ".local/bin"),
    (None, ".local/lib"),
];

/// Everything the plugin described by `policy` may use.
pub(crate) fn allowed(policy: &Policy<'_>) -> Vec<Allow> {
    let mut out = Vec::new();
    let mut push = |path: PathBuf, read, write, required| {
        if !out.iter().any(|a: &Allow| a.path == path) {
            out.push(Allow {
                path,
                read,
                write,
                required,
            });
        }
    };
    push(policy.data_dir.into(), true, true, true);
    push(policy.tmp_dir.into(), true, true, true);
    push(policy.plugin_dir.into(), true, false, true);
    for device in DEVICES {
        push(device.into(), true, true, false);
    }
    // Scoped grants: exactly these folders. Required: a missing folder fails
    // the call with its name rather than running with less than was granted.
    let home = var(policy, "HOME").map(PathBuf::from);
    for p in policy.permissions {
        if let Some(folder) = p.folder(home.as_deref()) {
            push(folder, true, p.writes(), true);
        }
    }
    if policy.grants(Permission::FilesystemRead) {
        // Read everywhere, except the other processes' /proc entries.
        if let Ok(entries) = std::fs::read_dir("/") {
            for entry in entries.flatten() {
                let path = entry.path();
                if path != Path::new("/proc") {
                    push(path, true, false, false);
                }
            }
        }
        for file in PROC_GLOBAL {
            push(file.into(), true, false, false);
        }
        return out;
    }
    for dir in SYSTEM.iter().chain(PROC_GLOBAL) {
        push(dir.into(), true, false, false);
    }
    if let Ok(real) = policy.entrypoint.canonicalize() {
        push(real, true, false, false);
    }
    let home = home.as_deref();
    for dir in manager_dirs(policy, home) {
        push(dir, true, false, false);
    }
    for dir in interpreter_dirs(policy, home) {
        push(dir, true, false, false);
    }
    out
}

/// A variable of the child's environment, else of the host's; empty is unset.
fn var(policy: &Policy<'_>, name: &str) -> Option<OsString> {
    policy
        .env
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os(name))
        .filter(|v| !v.is_empty())
}

/// The interpreter-manager folders that exist.
fn manager_dirs(policy: &Policy<'_>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for (moved_by, default) in MANAGERS {
        let dir = match moved_by.and_then(|v| var(policy, v)) {
            Some(dir) => PathBuf::from(dir),
            None => match home {
                Some(home) => home.join(default),
                None => continue,
            },
        };
        if dir.is_dir() && !too_broad(&dir, home) {
            dirs.push(dir);
        }
    }
    let cargo_bin = match var(policy, "CARGO_HOME") {
        Some(dir) => PathBuf::from(dir).join("bin"),
        None => home.map(|h| h.join(".cargo/bin")).unwrap_or_default(),
    };
    if cargo_bin.is_dir() && !too_broad(&cargo_bin, home) {
        dirs.push(cargo_bin);
    }
    dirs
}

/// The install prefixes of the interpreter named on the entrypoint's `#!` line,
/// following `#!/usr/bin/env X` through `PATH`, symlinks (a venv's python), and
/// interpreters that are themselves scripts (a pyenv shim), a few levels deep.
fn interpreter_dirs(policy: &Policy<'_>, home: Option<&Path>) -> Vec<PathBuf> {
    let path_var = var(policy, "PATH");
    let mut dirs = Vec::new();
    let mut script = policy.entrypoint.to_path_buf();
    for _ in 0..3 {
        let Some(line) = crate::plugins::shebang::read_line(&script) else {
            break;
        };
        let Some(program) = crate::plugins::shebang::interpreter(&line) else {
            break;
        };
        let Some(found) =
            crate::plugins::shebang::resolve(&program, path_var.as_ref(), policy.plugin_dir)
        else {
            break;
        };
        let real = found.canonicalize().unwrap_or_else(|_| found.clone());
        for exe in [&found, &real] {
            if let Some(dir) = install_prefix(exe, home)
                && !under_system(&dir)
                && !dirs.contains(&dir)
            {
                dirs.push(dir);
            }
        }
        script = real;
    }
    dirs
}

/// The folder an interpreter is installed in: the parent of its `bin` (or pyenv's
/// `shims`) folder, else its own folder. Falls back to narrower folders when
/// that would be too broad, and to nothing when even its own folder is.
fn install_prefix(exe: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let dir = exe.parent()?;
    let is_bin = dir
        .file_name()
        .is_some_and(|n| n == "bin" || n == "sbin" || n == "shims");
    let candidates = [is_bin.then(|| dir.parent()).flatten(), Some(dir)];
    candidates
        .into_iter()
        .flatten()
        .find(|c| !too_broad(c, home))
        .map(Path::to_path_buf)
}

/// Whether allowing `dir` would open far more than an interpreter: the root, a
/// top-level folder, the home folder or anything holding it, or a catch-all
/// folder of the home folder such as `~/.local` or `~/.config`.
fn too_broad(dir: &Path, home: Option<&Path>) -> bool {
    if !dir.is_absolute() {
        return true;
    }
    let depth = dir
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    if depth < 2 {
        return true;
    }
    let Some(home) = home.filter(|h| h.is_absolute() && *h != Path::new("/")) else {
        return false;
    };
    const CATCH_ALL: &[&str] = &[".local", ".local/share", ".config", ".cache", ".ssh"];
    home.starts_with(dir) || CATCH_ALL.iter().any(|c| dir == home.join(c))
}

/// Whether `dir` is already readable as part of the system.
fn under_system(dir: &Path) -> bool {
    SYSTEM.iter().any(|s| dir.starts_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_the_parent_of_bin_but_never_too_broad() {
        let home = Some(Path::new("/home/u"));
        let p = |s: &str| install_prefix(Path::new(s), home);
        assert_eq!(
            p("/home/u/.pyenv/shims/python3"),
            Some("/home/u/.pyenv".into())
        );
        assert_eq!(
            p("/home/u/.nvm/versions/node/v22/bin/node"),
            Some("/home/u/.nvm/versions/node/v22".into())
        );
        // ~/.local holds state and keyrings: only the bin folder.
        assert_eq!(
            p("/home/u/.local/bin/python3"),
            Some("/home/u/.local/bin".into())
        );
        // ~/bin's parent is the home folder itself.
        assert_eq!(p("/home/u/bin/python3"), Some("/home/u/bin".into()));
        // A top-level folder is too broad even as the interpreter's own folder.
        assert_eq!(p("/srv/python3"), None);
        assert_eq!(p("/python3"), None);
    }

    #[test]
    fn env_shebangs_are_followed_through_path_to_the_install_prefix() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let bin = root.join("tools/py/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = |p: &Path, text: &str| {
            std::fs::write(p, text).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        exe(&bin.join("fakepy"), "#!/bin/sh\n");
        let plugin = root.join("plugin");
        std::fs::create_dir_all(&plugin).unwrap();
        exe(&plugin.join("main"), "#!/usr/bin/env -S fakepy -u\n");
        let env = [
            ("PATH".into(), bin.clone().into_os_string()),
            ("HOME".into(), root.join("home").into_os_string()),
        ];
        let policy = Policy {
            plugin_dir: &plugin,
            data_dir: &plugin,
            tmp_dir: &plugin,
            entrypoint: &plugin.join("main"),
            permissions: &[],
            env: &env,
        };
        let dirs = interpreter_dirs(&policy, Some(&root.join("home")));
        assert_eq!(dirs, vec![root.join("tools/py")]);
    }

    #[test]
    fn too_broad_guards_home_and_its_ancestors() {
        let home = Some(Path::new("/home/u"));
        assert!(too_broad(Path::new("/"), home));
        assert!(too_broad(Path::new("/home"), home));
        assert!(too_broad(Path::new("/home/u"), home));
        assert!(too_broad(Path::new("/home/u/.config"), home));
        assert!(too_broad(Path::new("relative/dir"), home));
        assert!(!too_broad(Path::new("/home/u/.pyenv"), home));
        assert!(!too_broad(Path::new("/opt/python"), None));
    }
}
