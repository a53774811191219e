//! Reading and replacing a client's file, and its backup.
//!
//! A write goes to a temporary file in the same folder, is synced, then
//! renamed over the file: a client reading at any moment sees the old file
//! or the new one, never half of one. The new file keeps the old one's mode
//! (a new file gets 0600: it may hold a bearer token). A symbolic link (a
//! dotfiles manager's) is followed, and the file it points to is replaced,
//! so the link stays.
//!
//! The backup is `FILE.plughost-backup`, next to the file: the file exactly
//! as it was before plughost first changed it, with the same mode. It is
//! found whatever plughost's options are, and `connect --undo` removes it
//! once the file is back.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a file held: its text and mode, or nothing.
#[derive(Debug, Clone)]
pub struct Contents {
    pub text: String,
    pub mode: u32,
}

/// The file a client's path names: a link is followed to its target, and a
/// relative path is made absolute.
pub fn resolve(path: &Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    std::fs::canonicalize(&path).unwrap_or(path)
}

/// Where the copy of `file` from before plughost changed it is kept.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".plughost-backup");
    PathBuf::from(name)
}

/// The file's text and mode; `None` when there is no file.
pub fn read(path: &Path) -> Result<Option<Contents>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        format!(
            "{} is not UTF-8 text, so it is not a configuration plughost can edit; it was left as it is",
            path.display()
        )
    })?;
    Ok(Some(Contents { text, mode }))
}

/// Replaces (or creates) `path` with `text` atomically, with `mode`
/// (default 0600); creates its folder when missing.
pub fn write(path: &Path, text: &str, mode: Option<u32>) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.plughost-{}.tmp", std::process::id()));
    let mode = mode.unwrap_or(0o600);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        f.write_all(text.as_bytes())?;
        // The umask may have taken bits away from the mode asked for.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    // The rename is durable once the folder is synced; a failure here is not
    // worth reporting as a failed write.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes `path`; a missing file is not an error.
pub fn remove(path: &Path) -> Result<(), String> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}
