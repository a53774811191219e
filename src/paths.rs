//! Default folders.

use std::path::PathBuf;

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
