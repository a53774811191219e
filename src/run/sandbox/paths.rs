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
    /// List this folder only (its entries' names), nothing beneath it: a
    /// folder that holds a protected path, whose other entries are allowed
    /// one by one.
    pub list_only: bool,
    /// The call fails when this path cannot be opened; other paths are
    /// skipped when missing (not every system has `/lib64` or `/nix`).
    pub required: bool,
}

/// What [`allowed`] works out: the rules, and the folders whose entries were
/// allowed one by one around a protected path (a new entry in one of them
/// is not reached until the confinement is prepared again).
#[derive(Debug, Default)]
pub(crate) struct Allowed {
    pub rules: Vec<Allow>,
    pub enumerated: Vec<PathBuf>,
    /// The protected paths kept out of what was granted.
    pub protected: Vec<crate::protect::ProtectedPath>,
    /// Project files that run code later (`.git/hooks`, project MCP
    /// configurations) where the plugin may write: kept read-only by a mount
    /// namespace where one can be made (Landlock cannot keep them out without
    /// keeping the plugin from creating files in the project itself).
    pub read_only: Vec<crate::protect::ProtectedPath>,
    /// The folders the plugin may write that those projects were found in.
    pub project_roots: Vec<PathBuf>,
    /// With `mounts`: the protected paths under a write grant that a mount
    /// namespace keeps read-only instead of Landlock (see [`allowed`]).
    pub mounted: Vec<PathBuf>,
    /// The folders between a write grant and a path in `mounted`, pinned
    /// (mounted onto themselves) so that none can be renamed away and made
    /// again with other contents.
    pub pinned: Vec<PathBuf>,
    /// The plugin's own data and temp folders when they are inside a path
    /// in `mounted` (the state folder): mounted writable again.
    pub writable: Vec<PathBuf>,
    /// Grants reached through a symbolic link in a folder the plugin may
    /// write, each with that link: the plugin could point the grant
    /// anywhere before its next confinement, so the call is refused.
    pub changeable: Vec<(PathBuf, PathBuf)>,
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

/// Devices a plugin may always read and write: what a process needs, and
/// nothing that reaches a terminal, a disk or the kernel. Other devices
/// only with a grant that names them (or `/dev`), which needs approval;
/// `/dev/shm` with `filesystem:read` or `filesystem:write`.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Shared memory (POSIX semaphores and queues of Python's
/// `multiprocessing`): part of what `filesystem:read` and `filesystem:write`
/// give, not of `/dev`'s devices.
const SHM: &str = "/dev/shm";

/// The entries of `/dev` that reach a terminal or what is typed into one,
/// by the start of their names: terminals and pseudo-terminals (`tty*`,
/// `pts`, `ptmx`, `pty*`), consoles (`console`, `hvc*`, the virtual
/// console memory `vcs*`), and input devices (`input` reads keystrokes,
/// `uinput` types them). None is reachable, whatever a grant names.
const TERMINALS: &[&str] = &[
    "tty", "pts", "ptmx", "pty", "console", "hvc", "vcs", "input", "uinput",
];

/// The terminals in `/dev` (see [`TERMINALS`]), as they are now.
pub(crate) fn terminals() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = TERMINALS
        .iter()
        .map(|t| Path::new("/dev").join(t))
        .collect();
    if let Ok(entries) = std::fs::read_dir("/dev") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if TERMINALS.iter().any(|t| name.starts_with(t)) {
                let path = entry.path();
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    out
}

/// Whether a path a plugin may always use, past what is kept out of grants:
/// the process's own devices, shared memory, the machine's `/proc` files.
fn always_allowed(path: &Path) -> bool {
    DEVICES.iter().chain([&SHM]).any(|d| path == Path::new(d)) || path.starts_with("/proc")
}

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

/// What the plugin described by `policy` asks for, before the protected
/// paths are kept out of it.
///
/// Every path but the plugin's own is resolved here, once (see
/// [`resolve`]): a required one (a grant) reached through a link the
/// plugin may change goes to `changeable` instead, any other is left out.
/// Nothing after this looks the path up again but to open it, and that
/// open is checked against this path (`linux::moved`).
fn wanted(
    policy: &Policy<'_>,
    writable: &[PathBuf],
    changeable: &mut Vec<(PathBuf, PathBuf)>,
) -> Vec<Allow> {
    let mut out: Vec<Allow> = Vec::new();
    let mut push = |path: PathBuf, read: bool, write: bool, required: bool| {
        let path = if own(policy, &path) {
            path
        } else {
            match resolve(&path, writable) {
                Ok(real) => real,
                Err(link) => {
                    if required {
                        changeable.push((path, link));
                    }
                    return;
                }
            }
        };
        match out.iter_mut().find(|a| a.path == path) {
            Some(a) => {
                a.read |= read;
                a.write |= write;
                a.required |= required;
            }
            None => out.push(Allow {
                path,
                read,
                write,
                list_only: false,
                required,
            }),
        }
    };
    push(policy.data_dir.into(), true, true, true);
    push(policy.tmp_dir.into(), true, true, true);
    push(policy.plugin_dir.into(), true, false, true);
    for file in policy.also_read {
        push(file.clone(), true, false, true);
    }
    for device in DEVICES {
        push(device.into(), true, true, false);
    }
    // Scoped grants: exactly these folders. Required: a missing folder fails
    // the call with its name rather than running with less than was granted.
    let home = var(policy, "HOME").map(PathBuf::from);
    for p in policy.permissions {
        let Some(folder) = p.folder(home.as_deref()) else {
            continue;
        };
        // /proc shows a plugin its own process and the machine's files,
        // whatever a grant names: a grant in it gives the global files it
        // names (judged where the grant resolves).
        let resolved = resolve(&folder, writable).unwrap_or_else(|_| folder.clone());
        if resolved.starts_with("/proc") {
            for file in PROC_GLOBAL.iter().map(Path::new) {
                if file.starts_with(&resolved) {
                    push(file.into(), true, p.writes(), false);
                } else if resolved.starts_with(file) {
                    push(resolved.clone(), true, p.writes(), false);
                }
            }
            continue;
        }
        push(folder, true, p.writes(), true);
    }
    let (read_all, write_all) = (
        policy.grants(Permission::FilesystemRead),
        policy.grants(Permission::FilesystemWrite),
    );
    if read_all || write_all {
        push(SHM.into(), read_all, write_all, false);
    }
    if read_all || write_all {
        // Everywhere, except the other processes' /proc entries (the host's
        // environment holds the API keys plugins must not see).
        if let Ok(entries) = std::fs::read_dir("/") {
            for entry in entries.flatten() {
                let path = entry.path();
                if path != Path::new("/proc") {
                    push(path, read_all, write_all, false);
                }
            }
        }
    }
    if read_all {
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

/// Everything the plugin described by `policy` may use: what it asks for,
/// with every protected path it does not name kept out (see
/// [`crate::protect`]): its secrets unreadable, the places that run code
/// later and plughost's own trust unwritable, the state folder (approvals,
/// tokens, other plugins' data) neither. Landlock can only allow, so a
/// folder that holds a protected path is not allowed whole: its entries are,
/// one by one, each but the protected one, and the folder itself can only
/// be listed. The data and temp folders (in the state folder) are allowed
/// as they are.
///
/// With `mounts` (a mount namespace can be made), a protected path in a
/// crowded folder that exists under a write grant, with no symbolic link on
/// the way, is kept from writes by a read-only mount instead, the folders
/// between it and the grant pinned: its folder then needs no rule per
/// entry. Each rule costs every spawn a little (the kernel copies the rules
/// into the child's domain), and the folder holding plughost's binary
/// (`/usr/bin`, a cargo target folder) can hold hundreds of files. Reads,
/// and paths that do not exist yet, stay with Landlock.
pub(crate) fn allowed(policy: &Policy<'_>, mounts: bool) -> Allowed {
    let home = var(policy, "HOME").map(PathBuf::from);
    let home = home.as_deref();
    let mut changeable = Vec::new();
    let wanted = wanted(policy, &writable_roots(policy, home), &mut changeable);
    let exclusions = Exclusions::of(policy, &wanted, home, mounts);
    let mut out = Allowed {
        changeable,
        protected: exclusions.protected.clone(),
        read_only: exclusions.projects.clone(),
        project_roots: exclusions.roots.clone(),
        mounted: exclusions.mounted.clone(),
        pinned: exclusions.pinned.clone(),
        writable: exclusions.writable.clone(),
        ..Allowed::default()
    };
    for a in wanted {
        if own(policy, &a.path) {
            out.rules.push(a);
            continue;
        }
        if a.read {
            carve(&a, false, &exclusions.read, &mut out);
        }
        if a.write {
            carve(&a, true, &exclusions.write, &mut out);
        }
    }
    out.rules = without_covered(out.rules);
    out
}

/// Whether `path` is the plugin's own (its data and temp folders, the files
/// it was given, the devices every process may use): allowed as named,
/// where no link on the way is the plugin's to change. Every other rule's
/// path is real (its links resolved when judged).
pub(crate) fn own(policy: &Policy<'_>, path: &Path) -> bool {
    path == policy.data_dir
        || path == policy.tmp_dir
        || policy.also_read.iter().any(|f| f == path)
        || always_allowed(path)
}

/// `rules` less those a rule on a folder above already covers (`/dev/null`
/// beside `/dev`, `/usr/bin` beside `/usr` when `/bin` links there, an
/// entrypoint in its plugin's folder): the kernel copies every rule into
/// each child's domain, so a rule that allows nothing more costs every
/// spawn for nothing. A required rule stays, as the check that its folder
/// exists. (A rule on a file also matches it reached by another path, a
/// hard link or another mount; without it, that path is refused.)
fn without_covered(rules: Vec<Allow>) -> Vec<Allow> {
    let covered = |r: &Allow, write: bool| {
        rules.iter().any(|a| {
            !a.list_only
                && a.path != r.path
                && r.path.starts_with(&a.path)
                && if write { a.write } else { a.read }
        })
    };
    let redundant = |r: &Allow| {
        !r.required
            && (!(r.read || r.list_only) || covered(r, false))
            && (!r.write || covered(r, true))
    };
    let keep: Vec<bool> = rules.iter().map(|r| !redundant(r)).collect();
    rules
        .into_iter()
        .zip(keep)
        .filter_map(|(r, keep)| keep.then_some(r))
        .collect()
}

/// The paths kept out of reads and of writes.
struct Exclusions {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    protected: Vec<crate::protect::ProtectedPath>,
    projects: Vec<crate::protect::ProtectedPath>,
    roots: Vec<PathBuf>,
    mounted: Vec<PathBuf>,
    pinned: Vec<PathBuf>,
    writable: Vec<PathBuf>,
}

impl Exclusions {
    fn of(policy: &Policy<'_>, wanted: &[Allow], home: Option<&Path>, mounts: bool) -> Exclusions {
        use crate::protect::{self, Kind};
        let scoped: Vec<(PathBuf, bool)> = policy
            .permissions
            .iter()
            .filter_map(|p| Some((p.folder(home)?, p.writes())))
            .collect();
        // A scoped grant names a protected path when it is that path or one in it.
        let named = |path: &Path, for_write: bool| {
            scoped
                .iter()
                .any(|(g, writes)| (*writes || !for_write) && g.starts_with(path))
        };
        let mut protected = protect::user_paths(home);
        // Projects (git repositories, MCP configurations) where the plugin may write.
        let mut projects = Vec::new();
        let write_roots: Vec<&Path> = if policy.grants(Permission::FilesystemWrite) {
            home.into_iter().collect()
        } else {
            wanted
                .iter()
                .filter(|a| a.write && a.path != policy.data_dir && a.path != policy.tmp_dir)
                .map(|a| a.path.as_path())
                .collect()
        };
        let roots: Vec<PathBuf> = write_roots.iter().map(|r| r.to_path_buf()).collect();
        // What a repository's configuration names but is not there yet (a
        // `core.hooksPath` folder before its first hook, an included file):
        // git reads it as soon as it exists, so it must not be made. Kept out
        // by Landlock, like a user path that does not exist: the folder it
        // would be made in is allowed entry by entry. (Not the fixed project
        // files, `.mcp.json` and the like: every project lacks some, and
        // none could then be given a new file at its top.)
        let mut not_yet = Vec::new();
        for root in write_roots {
            if root.is_dir() {
                for p in protect::project_paths(root) {
                    if named(&p.path, true) {
                        continue;
                    }
                    if p.path.exists() {
                        projects.push(p);
                    } else if p.what == protect::GIT_ELSEWHERE {
                        not_yet.push(p);
                    }
                }
            }
        }
        let mut read = Vec::new();
        let mut write = Vec::new();
        let mut ro = ReadOnlyMounts::new(policy, wanted, mounts);
        for p in &protected {
            let path = real(&p.path);
            match p.kind {
                Kind::Secret => {
                    if !named(&p.path, false) {
                        read.push(path.clone());
                    }
                    if !named(&p.path, true) {
                        ro.keep(&p.path, path, &mut write);
                    }
                }
                Kind::RunsLater if !named(&p.path, true) => ro.keep(&p.path, path, &mut write),
                _ => {}
            }
        }
        for p in not_yet {
            write.push(real(&p.path));
            protected.push(p);
        }
        // Terminals, whatever is granted; /proc but for the machine's files
        // (allowed as they are, see `always_allowed`); /dev but for the
        // devices every process needs, unless a grant names /dev or a
        // device in it.
        let mut kept_out = terminals();
        kept_out.push("/proc".into());
        if !named(Path::new("/dev"), false) {
            kept_out.push("/dev".into());
        }
        read.extend(kept_out.iter().cloned());
        write.extend(kept_out);
        for path in policy.private {
            read.push(real(path));
            ro.keep(path, real(path), &mut write);
        }
        for path in policy.trust {
            ro.keep(path, real(path), &mut write);
        }
        let (mounted, pinned, writable) = ro.finish(policy);
        protected.retain(|p| !named(&p.path, true));
        // plughost's own, so that a denial there is named as such (no grant
        // reaches it).
        protected.extend(policy.private.iter().map(|path| protect::ProtectedPath {
            path: real(path),
            kind: Kind::Trust,
            what: protect::STATE,
        }));
        protected.extend(policy.trust.iter().map(|path| protect::ProtectedPath {
            path: real(path),
            kind: Kind::Trust,
            what: protect::OWN,
        }));
        Exclusions {
            read,
            write,
            protected,
            projects,
            roots,
            mounted,
            pinned,
            writable,
        }
    }
}

/// More entries than this beside a protected path, and a mount keeps it
/// rather than a Landlock rule per entry (each rule costs every spawn about
/// a quarter of a microsecond).
const CROWDED: usize = 64;

/// Whether `dir` holds more than [`CROWDED`] entries.
fn crowded(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| entries.take(CROWDED + 1).count() > CROWDED)
}

/// Which protected paths a mount namespace keeps from writes (the rest go
/// to Landlock), and what else that takes.
struct ReadOnlyMounts {
    /// The folders the plugin may write, outer first: real paths.
    roots: Vec<PathBuf>,
    mounted: Vec<PathBuf>,
    pinned: Vec<PathBuf>,
}

impl ReadOnlyMounts {
    fn new(policy: &Policy<'_>, wanted: &[Allow], mounts: bool) -> ReadOnlyMounts {
        let mut roots: Vec<PathBuf> = if mounts {
            wanted
                .iter()
                .filter(|a| a.write && a.path != policy.data_dir && a.path != policy.tmp_dir)
                .map(|a| real(&a.path))
                .collect()
        } else {
            Vec::new()
        };
        roots.sort_by_key(|r| r.components().count());
        ReadOnlyMounts {
            roots,
            mounted: Vec::new(),
            pinned: Vec::new(),
        }
    }

    /// Keeps `path` (`real` resolved) from writes: by Landlock (`write`),
    /// or by a mount when Landlock would need a rule for each of many
    /// entries beside it, and it exists under a write grant with no link on
    /// the way (a link in a writable folder could be replaced; a path not
    /// made yet cannot be mounted).
    ///
    /// Landlock stays the first choice: its rules hold the files they were
    /// given, so a protected file replaced later (an editor's rename, an
    /// upgrade) is still out of reach of a process already running, which a
    /// mount made on the old file no longer holds.
    fn keep(&mut self, path: &Path, real: PathBuf, write: &mut Vec<PathBuf>) {
        let root = self
            .roots
            .iter()
            .find(|r| real.starts_with(r))
            .filter(|_| path == real && real.symlink_metadata().is_ok())
            .filter(|_| real.parent().is_some_and(crowded));
        let Some(root) = root else {
            write.push(real);
            return;
        };
        let mut at = real.parent();
        while let Some(dir) = at.filter(|d| d.starts_with(root) && *d != root.as_path()) {
            if !self.pinned.iter().any(|p| p == dir) {
                self.pinned.push(dir.to_path_buf());
            }
            at = dir.parent();
        }
        self.mounted.push(real);
    }

    /// The paths mounted read-only, the folders pinned and the plugin's own
    /// folders mounted writable again inside them.
    fn finish(self, policy: &Policy<'_>) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
        let writable = [policy.data_dir, policy.tmp_dir]
            .into_iter()
            .map(real)
            .filter(|own| self.mounted.iter().any(|m| own.starts_with(m)))
            .collect();
        (self.mounted, self.pinned, writable)
    }
}

/// The real paths of the folders the plugin may write, where a link it
/// makes could move a grant: its data and temp folders and its write
/// grants. None with `filesystem:write` everywhere, where there is nothing
/// more to gain.
fn writable_roots(policy: &Policy<'_>, home: Option<&Path>) -> Vec<PathBuf> {
    if policy.grants(Permission::FilesystemWrite) {
        return Vec::new();
    }
    let grants = policy
        .permissions
        .iter()
        .filter(|p| p.writes())
        .filter_map(|p| p.folder(home));
    [policy.data_dir.to_path_buf(), policy.tmp_dir.to_path_buf()]
        .into_iter()
        .chain(grants)
        .map(|p| real(&p))
        .collect()
}

/// `path` with its links resolved as the kernel would, component by
/// component (a missing tail kept as named under its real parent), or the
/// first link met that sits in one of `writable`: the plugin could have put
/// it there, and pointed the path anywhere. Approval named a path, and the
/// user meant where it led then, not where a plugin's link leads it now.
fn resolve(path: &Path, writable: &[PathBuf]) -> Result<PathBuf, PathBuf> {
    if !path.is_absolute() {
        return Ok(real(path));
    }
    // The names still to resolve, the next one last.
    let mut todo = Vec::new();
    push_names(&mut todo, path);
    let mut at = PathBuf::from("/");
    // The kernel's own limit on links followed in one lookup.
    let mut links = 40;
    while let Some(name) = todo.pop() {
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let link = match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(&next).ok(),
            _ => None,
        };
        let Some(target) = link else {
            // A folder or file, or nothing yet (what follows is kept as named).
            at = next;
            continue;
        };
        if writable.iter().any(|w| at.starts_with(w)) {
            return Err(next);
        }
        links -= 1;
        if links == 0 {
            // The open fails on its own (ELOOP).
            return Ok(path.to_path_buf());
        }
        if target.is_absolute() {
            at = PathBuf::from("/");
        }
        push_names(&mut todo, &target);
    }
    Ok(at)
}

/// Pushes the names of `path` onto `todo` so that its first is popped first.
fn push_names(todo: &mut Vec<OsString>, path: &Path) {
    todo.extend(path.components().rev().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_owned()),
        Component::ParentDir => Some("..".into()),
        _ => None,
    }));
}

/// `path` with its symbolic links resolved as far as it exists: a protected
/// path that does not exist yet keeps its name under its real parent.
pub(crate) fn real(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(r) = at.canonicalize() {
            let mut out = r;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Most folders entered around protected paths for one rule: past it, the
/// rest of the folder is left out (denied), never allowed whole.
const MAX_ENUMERATED: usize = 256;

/// Adds the rules that allow `a` (its read side, or its write side) except
/// what `excluded` holds.
fn carve(a: &Allow, write: bool, excluded: &[PathBuf], out: &mut Allowed) {
    // Resolved once, by `wanted`.
    let path = a.path.clone();
    let mut budget = MAX_ENUMERATED;
    carve_in(&path, write, excluded, out, &mut budget, a.required);
}

fn carve_in(
    path: &Path,
    write: bool,
    excluded: &[PathBuf],
    out: &mut Allowed,
    budget: &mut usize,
    required: bool,
) {
    if excluded.iter().any(|e| path.starts_with(e)) {
        return;
    }
    let rule = |path: PathBuf, list_only: bool, required: bool| Allow {
        path,
        read: !write,
        write,
        list_only,
        required,
    };
    if !excluded.iter().any(|e| e.starts_with(path)) {
        out.rules.push(rule(path.to_path_buf(), false, required));
        return;
    }
    // It holds a protected path: its entries one by one.
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    if !write {
        out.rules.push(rule(path.to_path_buf(), true, false));
    }
    if !out.enumerated.iter().any(|e| e == path) {
        out.enumerated.push(path.to_path_buf());
    }
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        // A link is reached through where it points, if that is allowed.
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        carve_in(&entry.path(), write, excluded, out, budget, false);
    }
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
        let Ok(real) = found.canonicalize() else {
            break;
        };
        // The interpreter is judged where it resolves: a path spelled with
        // `..` (`#!../../../usr/bin/python3`) is only taken as written
        // when it has no such part (pyenv's shims are links whose own
        // folder is the prefix).
        let plain = found
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        for exe in [plain.then_some(&found), Some(&real)].into_iter().flatten() {
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
            trust: &[],
            private: &[],
            env: &env,
            egress: None,
            also_read: &[],
            namespaces: false,
        };
        let dirs = interpreter_dirs(&policy, Some(&root.join("home")));
        assert_eq!(dirs, vec![root.join("tools/py")]);
    }

    /// A protected file beside many others is mounted read-only (with the
    /// folders above it pinned) where mounts can be made; one beside a few
    /// is kept out by Landlock, entry by entry, as everything is without
    /// mounts.
    #[test]
    fn only_a_protected_path_in_a_crowded_folder_is_mounted() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let work = root.join("work");
        let bin = work.join("a/b/bin");
        let config = work.join("c/config");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&config).unwrap();
        for i in 0..=CROWDED {
            std::fs::write(bin.join(format!("tool-{i}")), "").unwrap();
        }
        let exe = bin.join("plughost");
        std::fs::write(&exe, "").unwrap();
        let plugin = root.join("plugin");
        std::fs::create_dir_all(&plugin).unwrap();
        let env = [("HOME".into(), root.join("home").into_os_string())];
        let permissions = [Permission::FilesystemWriteIn(work.display().to_string())];
        let trust = [exe.clone(), config.clone()];
        let policy = Policy {
            plugin_dir: &plugin,
            data_dir: &plugin,
            tmp_dir: &plugin,
            entrypoint: &plugin.join("main"),
            permissions: &permissions,
            trust: &trust,
            private: &[],
            env: &env,
            egress: None,
            also_read: &[],
            namespaces: true,
        };
        let with = allowed(&policy, true);
        assert_eq!(with.mounted, std::slice::from_ref(&exe));
        assert_eq!(
            with.pinned,
            [bin.clone(), work.join("a/b"), work.join("a")],
            "every folder between the grant and the file"
        );
        assert!(!with.enumerated.contains(&bin));
        assert!(
            with.enumerated.contains(&work.join("c")),
            "{:?}",
            with.enumerated
        );
        let without = allowed(&policy, false);
        assert!(without.mounted.is_empty() && without.pinned.is_empty());
        assert!(without.enumerated.contains(&bin));
        assert!(
            !without.rules.iter().any(|r| r.write && r.path == exe),
            "the binary itself gets no write rule"
        );
    }

    #[test]
    fn a_rule_beneath_one_that_allows_as_much_is_left_out() {
        let rule = |path: &str, read: bool, write: bool, required: bool| Allow {
            path: path.into(),
            read,
            write,
            list_only: false,
            required,
        };
        let rules = vec![
            rule("/dev", true, false, false),
            rule("/dev", false, true, false),
            // Covered by the read and the write rule on /dev together.
            rule("/dev/null", true, true, false),
            rule("/usr", true, false, false),
            // Writes are more than /usr allows.
            rule("/usr/lib", true, true, false),
            // Covered by /usr, but required: the check that it exists.
            rule("/usr/share", true, false, true),
            // A sibling with a common prefix is not beneath it.
            rule("/usr2/x", true, false, false),
            rule("/usr2", false, true, false),
        ];
        let kept: Vec<(String, bool, bool)> = without_covered(rules)
            .into_iter()
            .map(|a| (a.path.display().to_string(), a.read, a.write))
            .collect();
        assert_eq!(
            kept,
            [
                ("/dev".to_string(), true, false),
                ("/dev".to_string(), false, true),
                ("/usr".to_string(), true, false),
                ("/usr/lib".to_string(), true, true),
                ("/usr/share".to_string(), true, false),
                ("/usr2/x".to_string(), true, false),
                ("/usr2".to_string(), false, true),
            ]
        );
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

    #[test]
    fn a_path_resolves_unless_a_link_the_plugin_may_change_is_on_the_way() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let (w, elsewhere) = (root.join("w"), root.join("elsewhere"));
        std::fs::create_dir_all(w.join("real")).unwrap();
        std::fs::create_dir_all(elsewhere.join("deep")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, w.join("abs")).unwrap();
        std::os::unix::fs::symlink("real", w.join("rel")).unwrap();
        std::os::unix::fs::symlink(&w, root.join("to-w")).unwrap();
        let writable = std::slice::from_ref(&w);
        // In the writable folder, absolute or relative, whole or on the way.
        assert_eq!(resolve(&w.join("abs"), writable), Err(w.join("abs")));
        assert_eq!(resolve(&w.join("rel"), writable), Err(w.join("rel")));
        assert_eq!(resolve(&w.join("abs/deep"), writable), Err(w.join("abs")));
        assert_eq!(
            resolve(&w.join("real/../abs"), writable),
            Err(w.join("abs"))
        );
        // Reached through a link the plugin cannot change, into one it can.
        assert_eq!(
            resolve(&root.join("to-w/abs"), writable),
            Err(w.join("abs"))
        );
        // No link, a link outside, a path that does not exist yet: where
        // each leads, as the kernel would resolve it.
        assert_eq!(resolve(&w.join("real"), writable), Ok(w.join("real")));
        assert_eq!(
            resolve(&root.join("to-w/real"), writable),
            Ok(w.join("real"))
        );
        assert_eq!(
            resolve(&w.join("missing/abs"), writable),
            Ok(w.join("missing/abs"))
        );
        // With nothing writable, every link is followed.
        assert_eq!(
            resolve(&w.join("abs/deep"), &[]),
            Ok(elsewhere.join("deep"))
        );
        assert_eq!(resolve(&w.join("rel"), &[]), Ok(w.join("real")));
    }
}
