//! Default folders.

use std::path::{Component, Path, PathBuf};

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// `~/.plugins`.
pub fn default_plugins_dir() -> PathBuf {
    home().join(".plugins")
}

/// `$XDG_STATE_HOME/plughost`, or `~/.local/state/plughost`.
pub fn default_state_dir() -> PathBuf {
    match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("plughost"),
        None => home().join(".local/state/plughost"),
    }
}

/// plughost's configuration folder: `$XDG_CONFIG_HOME/plughost`, or
/// `~/.config/plughost`. It holds the user's `protected-paths` list and the
/// `profiles` folder.
pub fn default_config_dir() -> PathBuf {
    match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("plughost"),
        None => home().join(".config/plughost"),
    }
}

/// The profiles folder: `profiles` in [`default_config_dir`], one
/// `NAME.json` a profile (see [`crate::profile`]).
pub fn default_profiles_dir() -> PathBuf {
    default_config_dir().join("profiles")
}

/// `path` with `.` dropped and each `..` taking back the component before
/// it, without looking at the file system: `/home/u/notes/../.ssh` is
/// `/home/u/.ssh`, as a user reading it means it.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
