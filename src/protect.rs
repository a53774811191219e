//! Paths no grant reaches unless it names them: the user's secrets and the
//! places that run code later. (plughost's own trust, its state and plugins
//! folders, is protected whatever a grant says; the host adds those.)
//!
//! | kind | what | a grant that reaches it |
//! |---|---|---|
//! | [`Kind::Secret`] | SSH and GPG keys, cloud and cluster credentials, registry tokens, keyrings, password stores, browser profiles, and the paths in the user's own list | reads and writes only with a scoped grant that names it (or a path in it); such a read grant needs approval |
//! | [`Kind::RunsLater`] | shell start-up files, `~/.gitconfig`, MCP client configurations, autostart and systemd user units, crontabs, `~/.local/bin` and `~/bin` | writes only with a scoped write grant that names it |
//!
//! The user adds secrets in `$XDG_CONFIG_HOME/plughost/protected-paths`
//! (`~/.config/plughost/protected-paths`): one path a line, absolute or
//! starting with `~`, `#` for comments. It is read once per process.
//!
//! The list is enforced by the kernel: the sandbox builds its Landlock rules
//! around these paths (`run/sandbox/paths.rs`), it does not check paths itself.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

/// How a path is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Neither read nor written without a grant that names it.
    Secret,
    /// Not written without a grant that names it: what is there runs later.
    RunsLater,
    /// plughost's own trust (its state and plugins folders, its binary and
    /// configuration): never written by a plugin, whatever it is granted.
    Trust,
}

/// What a plugin's state folder is, as a protected path: neither read nor
/// written (but for its own data and temp folders), whatever is granted.
pub(crate) const STATE: &str = "plughost's state (approvals, tokens, other plugins' data)";

/// What plughost's plugins folder, binary and configuration are, as
/// protected paths: never written, whatever is granted.
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "only the Linux sandbox builds rules from it")
)]
pub(crate) const OWN: &str = "plughost's plugins, binary or configuration";

/// One protected path and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProtectedPath {
    /// The path; it need not exist.
    pub path: PathBuf,
    /// How it is protected.
    pub kind: Kind,
    /// What is there, in a few words ("SSH keys").
    pub what: &'static str,
}

/// Secrets under the home folder, and what each holds.
const SECRETS: &[(&str, &str)] = &[
    (".ssh", "SSH keys"),
    (".gnupg", "GPG keys"),
    (".aws", "AWS credentials"),
    (".config/gcloud", "Google Cloud credentials"),
    (".azure", "Azure credentials"),
    (".kube", "Kubernetes credentials"),
    (".docker/config.json", "Docker registry credentials"),
    (".netrc", "network login passwords"),
    (".git-credentials", "git credentials"),
    (".config/git/credentials", "git credentials"),
    (".config/gh", "GitHub CLI tokens"),
    (".npmrc", "npm registry tokens"),
    (".pypirc", "PyPI tokens"),
    (".cargo/credentials.toml", "crates.io tokens"),
    (".cargo/credentials", "crates.io tokens"),
    (".terraform.d/credentials.tfrc.json", "Terraform tokens"),
    (".vault-token", "a Vault token"),
    (".local/share/keyrings", "the desktop keyring"),
    (".password-store", "a password store"),
    (".mozilla", "Firefox profiles"),
    (".config/google-chrome", "Chrome profiles"),
    (".config/chromium", "Chromium profiles"),
    (".config/BraveSoftware", "Brave profiles"),
    (".config/microsoft-edge", "Edge profiles"),
    ("Library/Keychains", "macOS keychains"),
    (
        "Library/Application Support/Google/Chrome",
        "Chrome profiles",
    ),
    ("Library/Application Support/Firefox", "Firefox profiles"),
];

/// Places under the home folder whose contents run later, and what runs.
const RUNS_LATER: &[(&str, &str)] = &[
    (".bashrc", "a shell start-up file"),
    (".bash_profile", "a shell start-up file"),
    (".bash_login", "a shell start-up file"),
    (".bash_logout", "a shell start-up file"),
    (".profile", "a shell start-up file"),
    (".zshrc", "a shell start-up file"),
    (".zshenv", "a shell start-up file"),
    (".zprofile", "a shell start-up file"),
    (".zlogin", "a shell start-up file"),
    (".zlogout", "a shell start-up file"),
    (".cshrc", "a shell start-up file"),
    (".tcshrc", "a shell start-up file"),
    (".kshrc", "a shell start-up file"),
    (".config/fish", "shell start-up files"),
    (".xprofile", "a session start-up file"),
    (".xinitrc", "a session start-up file"),
    (".xsession", "a session start-up file"),
    (".pam_environment", "the login environment"),
    (".config/environment.d", "the login environment"),
    (
        ".gitconfig",
        "git configuration (hooks, aliases that run programs)",
    ),
    (
        ".config/git/config",
        "git configuration (hooks, aliases that run programs)",
    ),
    (".config/autostart", "programs started at login"),
    (".config/systemd/user", "systemd user units"),
    (".local/share/systemd/user", "systemd user units"),
    ("Library/LaunchAgents", "programs started at login"),
    (".local/bin", "programs on your PATH"),
    ("bin", "programs on your PATH"),
    (".config/Claude", "Claude Desktop's MCP configuration"),
    (".claude.json", "Claude Code's configuration"),
    (".claude", "Claude Code's settings and hooks"),
    (".cursor", "Cursor's MCP configuration"),
    (".codeium/windsurf", "Windsurf's MCP configuration"),
    (".codex", "Codex CLI's configuration"),
    (".gemini", "Gemini CLI's configuration"),
    (
        ".config/Code/User",
        "VS Code's settings and MCP configuration",
    ),
    (
        "Library/Application Support/Claude",
        "Claude Desktop's MCP configuration",
    ),
    (
        "Library/Application Support/Code/User",
        "VS Code's settings and MCP configuration",
    ),
];

/// Places outside the home folder whose contents run later.
const SYSTEM_RUNS_LATER: &[(&str, &str)] = &[("/var/spool/cron", "crontabs")];

/// Names inside a project (a folder a plugin may write) that run code later:
/// found by [`project_paths`].
pub(crate) const PROJECT_RUNS_LATER: &[(&str, &str)] = &[
    // The whole repository folder: git reads hooks, configuration and
    // where to find both from many places in it (`config`, `hooks`,
    // `commondir`, `modules/*/`, `worktrees/*/`, `info/`), and each runs
    // code for the user later. A plugin that must commit needs a grant
    // that names `.git`.
    (".git", "a git repository's hooks and configuration"),
    (".mcp.json", "a project's MCP configuration"),
    (".vscode/mcp.json", "a project's MCP configuration"),
    (".vscode/settings.json", "a project's editor settings"),
    (".cursor/mcp.json", "a project's MCP configuration"),
    (".gemini/settings.json", "a project's MCP configuration"),
    (".codex/config.toml", "a project's MCP configuration"),
    (".claude", "a project's Claude Code settings and hooks"),
];

/// The user's secrets and the places that run code later, for the home
/// folder `home`, with the user's own list. Paths that do not exist are
/// listed too: creating them is what a write must not do.
pub fn user_paths(home: Option<&Path>) -> Vec<ProtectedPath> {
    let mut out = Vec::new();
    if let Some(home) = home.filter(|h| h.is_absolute() && *h != Path::new("/")) {
        for (rel, what) in SECRETS {
            out.push(ProtectedPath {
                path: home.join(rel),
                kind: Kind::Secret,
                what,
            });
        }
        for (rel, what) in RUNS_LATER {
            out.push(ProtectedPath {
                path: home.join(rel),
                kind: Kind::RunsLater,
                what,
            });
        }
    }
    for (path, what) in SYSTEM_RUNS_LATER {
        out.push(ProtectedPath {
            path: PathBuf::from(path),
            kind: Kind::RunsLater,
            what,
        });
    }
    for path in USER_LIST.iter() {
        if let Some(path) = expand(path, home) {
            out.push(ProtectedPath {
                path,
                kind: Kind::Secret,
                what: "a path in your protected-paths list",
            });
        }
    }
    out
}

/// The protected path `path` names (is, or is inside), if any, for `home`.
pub(crate) fn named_by(path: &Path, home: Option<&Path>) -> Option<ProtectedPath> {
    user_paths_of(home)
        .iter()
        .filter(|p| path.starts_with(&p.path))
        .max_by_key(|p| p.path.as_os_str().len())
        .cloned()
}

/// [`user_paths`] for the home folder asked for last, kept: every approval
/// check of a call works out the tier of its grants, which asks this (a
/// call checks several times), and the list only depends on `home`.
fn user_paths_of(home: Option<&Path>) -> Arc<Vec<ProtectedPath>> {
    type Last = Option<(Option<PathBuf>, Arc<Vec<ProtectedPath>>)>;
    static LAST: Mutex<Last> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((h, paths)) = &*last
        && h.as_deref() == home
    {
        return paths.clone();
    }
    let paths = Arc::new(user_paths(home));
    *last = Some((home.map(Path::to_path_buf), paths.clone()));
    paths
}

/// The user's own list file: `$XDG_CONFIG_HOME/plughost/protected-paths`.
pub fn user_list_file() -> Option<PathBuf> {
    match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir).join("plughost/protected-paths")),
        None => std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".config/plughost/protected-paths")),
    }
}

/// The lines of the user's list, read once per process.
static USER_LIST: LazyLock<Vec<String>> = LazyLock::new(|| {
    let Some(file) = user_list_file() else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
});

/// `~/x` or `/x` as a path; anything else is ignored.
fn expand(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    match path.strip_prefix('~') {
        Some(rest) => Some(home?.join(rest.trim_start_matches('/'))),
        None => Path::new(path).is_absolute().then(|| PathBuf::from(path)),
    }
}

/// The project files that run code later (`.git/hooks`, project MCP
/// configurations) in the repositories and projects found under `root`:
/// folders up to [`PROJECT_DEPTH`] levels down, at most [`PROJECT_FOLDERS`]
/// folders visited, skipping dependency and build folders and not following
/// symbolic links. What is created later in a repository found here is
/// protected too; a repository made later is not, until the plugin version
/// is prepared again.
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "only the Linux sandbox builds rules from it")
)]
pub(crate) fn project_paths(root: &Path) -> Vec<ProtectedPath> {
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), 0usize)]);
    let mut visited = 0usize;
    while let Some((dir, depth)) = queue.pop_front() {
        visited += 1;
        if visited > PROJECT_FOLDERS {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut is_project = false;
        let mut subdirs = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if PROJECT_RUNS_LATER
                .iter()
                .any(|(rel, _)| rel.split('/').next() == Some(name))
            {
                is_project = true;
            }
            if kind.is_dir() && !kind.is_symlink() && !SKIP.contains(&name) && name != ".git" {
                subdirs.push(entry.path());
            }
        }
        if is_project {
            for (rel, what) in PROJECT_RUNS_LATER {
                out.push(ProtectedPath {
                    path: dir.join(rel),
                    kind: Kind::RunsLater,
                    what,
                });
            }
            for path in git_elsewhere(&dir) {
                if !out.iter().any(|p| p.path == path) {
                    out.push(ProtectedPath {
                        path,
                        kind: Kind::RunsLater,
                        what: GIT_ELSEWHERE,
                    });
                }
            }
        }
        if depth < PROJECT_DEPTH {
            subdirs.sort();
            queue.extend(subdirs.into_iter().map(|d| (d, depth + 1)));
        }
    }
    out
}

/// What the places [`git_elsewhere`] finds are, as protected paths.
pub(crate) const GIT_ELSEWHERE: &str = "where a git repository keeps its hooks or configuration";

/// The places outside `dir/.git` from which git, working in `dir`, reads
/// hooks or configuration, by git's own rules: the repository a `.git`
/// file points to (`gitdir:`, linked worktrees and submodules) and the
/// common folder it names (`commondir`), the hooks folder the
/// configuration names (`core.hooksPath`, as husky sets it), and the
/// files it includes (`include.path`, `includeIf.*.path`). Followed a few
/// levels, as git does.
fn git_elsewhere(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dot_git = dir.join(".git");
    let mut git_dirs = Vec::new();
    if dot_git.is_file() {
        if let Some(target) = gitdir_file(&dot_git) {
            git_dirs.push(target);
        }
    } else if dot_git.is_dir() {
        git_dirs.push(dot_git.clone());
    }
    let mut configs = Vec::new();
    let mut i = 0;
    while i < git_dirs.len() && i < 8 {
        let git_dir = git_dirs[i].clone();
        i += 1;
        if !git_dir.starts_with(&dot_git) && !out.contains(&git_dir) {
            out.push(git_dir.clone());
        }
        if let Ok(text) = std::fs::read_to_string(git_dir.join("commondir")) {
            let common = resolve_in(&git_dir, text.trim());
            if !git_dirs.contains(&common) {
                git_dirs.push(common);
            }
        }
        configs.push(git_dir.join("config"));
        configs.push(git_dir.join("config.worktree"));
    }
    let mut seen = 0;
    while let Some(config) = configs.pop() {
        seen += 1;
        if seen > 32 {
            break;
        }
        let Ok(text) = std::fs::read_to_string(&config) else {
            continue;
        };
        let folder = config.parent().unwrap_or(dir).to_path_buf();
        for (key, value) in git_config_paths(&text) {
            let path = match key {
                // Relative to where hooks run: the working tree.
                GitKey::HooksPath => resolve_in(dir, &value),
                GitKey::Include => resolve_in(&folder, &value),
            };
            if !path.starts_with(&dot_git) && !out.contains(&path) {
                out.push(path.clone());
            }
            if key == GitKey::Include {
                configs.push(path);
            }
        }
    }
    out
}

/// The folder a `.git` file points to (`gitdir: PATH`).
fn gitdir_file(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(resolve_in(file.parent()?, target))
}

/// `value` as git reads a path: `~/` for the home folder, else relative to
/// `base`; `..` taken lexically, as git does before the path exists.
fn resolve_in(base: &Path, value: &str) -> PathBuf {
    let joined = match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(rest),
        None => base.join(value),
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A git configuration key whose value is a path that runs code later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GitKey {
    HooksPath,
    Include,
}

/// The `core.hooksPath`, `include.path` and `includeIf.*.path` values of a
/// git configuration file (sections and keys are case-insensitive; values
/// may be quoted).
fn git_config_paths(text: &str) -> Vec<(GitKey, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split([']', ' ', '"']).next().unwrap_or("");
            section = name.to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim().trim_matches('"').to_owned();
        let kind = match (section.as_str(), key.as_str()) {
            ("core", "hookspath") => GitKey::HooksPath,
            ("include" | "includeif", "path") => GitKey::Include,
            _ => continue,
        };
        if !value.is_empty() {
            out.push((kind, value));
        }
    }
    out
}

/// How deep [`project_paths`] looks.
pub(crate) const PROJECT_DEPTH: usize = 4;
/// How many folders [`project_paths`] visits at most.
pub(crate) const PROJECT_FOLDERS: usize = 20_000;
/// Folders [`project_paths`] does not descend into: dependencies, build
/// output, caches.
const SKIP: &[&str] = &[
    "node_modules",
    "target",
    ".cache",
    ".venv",
    "venv",
    "__pycache__",
    ".npm",
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".local",
    "proc",
    "sys",
    "dev",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_by_finds_the_most_specific_protected_path() {
        let home = Path::new("/home/u");
        let p = named_by(Path::new("/home/u/.ssh/id_ed25519"), Some(home)).unwrap();
        assert_eq!(p.path, home.join(".ssh"));
        assert_eq!(p.kind, Kind::Secret);
        let p = named_by(Path::new("/home/u/.config/gcloud/creds.json"), Some(home)).unwrap();
        assert_eq!(p.what, "Google Cloud credentials");
        assert!(named_by(Path::new("/home/u/notes"), Some(home)).is_none());
        assert_eq!(
            named_by(Path::new("/home/u/.bashrc"), Some(home))
                .unwrap()
                .kind,
            Kind::RunsLater
        );
    }

    #[test]
    fn projects_are_found_by_their_git_folder_or_mcp_configuration() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("work/site");
        std::fs::create_dir_all(repo.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.path().join("node_modules/dep/.git")).unwrap();
        let found = project_paths(root.path());
        assert!(found.iter().any(|p| p.path == repo.join(".git")));
        assert!(found.iter().any(|p| p.path == repo.join(".mcp.json")));
        assert!(
            found
                .iter()
                .all(|p| !p.path.starts_with(root.path().join("node_modules"))),
            "dependencies are skipped"
        );
    }

    /// Git reads hooks and configuration from places a `.git` folder names:
    /// each is protected as the folder is.
    #[test]
    fn what_git_reads_from_elsewhere_is_found_by_git_rules() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // A linked worktree: `.git` is a file naming its repository, whose
        // `commondir` names the main one.
        let main = r.join("main/.git");
        std::fs::create_dir_all(main.join("worktrees/wt")).unwrap();
        std::fs::write(main.join("worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(r.join("wt")).unwrap();
        std::fs::write(
            r.join("wt/.git"),
            format!("gitdir: {}\n", main.join("worktrees/wt").display()),
        )
        .unwrap();
        // The main repository's configuration: a hooks folder in the tree
        // (husky) and an included file, itself including another.
        std::fs::write(
            main.join("config"),
            "[core]\n\thooksPath = .husky\n[include]\n\tpath = ../extra.conf\n[includeIf \"gitdir:~/\"]\n  path = \"/abs/other.conf\"\n",
        )
        .unwrap();
        std::fs::write(r.join("main/extra.conf"), "[include]\npath = more.conf\n").unwrap();
        let found: Vec<PathBuf> = project_paths(r).into_iter().map(|p| p.path).collect();
        for want in [
            r.join("wt/.git"),
            main.join("worktrees/wt"),
            main.clone(),
            r.join("wt/.husky"),
            r.join("main/.husky"),
            r.join("main/extra.conf"),
            r.join("main/more.conf"),
            PathBuf::from("/abs/other.conf"),
        ] {
            assert!(found.contains(&want), "{} not in {found:?}", want.display());
        }
    }
}
