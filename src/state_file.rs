//! The files plughost keeps in its state folder (approvals, secrets): read
//! without following a link or blocking on a FIFO, capped in size, and
//! written whole (a temp file, fsynced, renamed over the old one, the folder
//! fsynced) under an exclusive lock, with mode 0600.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Why a state file could not be read.
#[derive(Debug)]
pub(crate) enum Unreadable {
    /// It is a link, a folder, a FIFO…: what it is, in words.
    NotAFile(&'static str),
    /// It is larger than the cap: its size.
    TooLarge(u64),
    Io(io::Error),
}

/// The bytes of the regular file at `path` and its metadata, at most `max`
/// bytes; `None` when there is no file.
pub(crate) fn read(path: &Path, max: u64) -> Result<Option<(Vec<u8>, fs::Metadata)>, Unreadable> {
    read_with(path, max, libc::O_NOFOLLOW)
}

/// [`read`] of a file the user named, through symbolic links (a file kept
/// elsewhere, or a Kubernetes ConfigMap's link into its current version).
pub(crate) fn read_following(
    path: &Path,
    max: u64,
) -> Result<Option<(Vec<u8>, fs::Metadata)>, Unreadable> {
    read_with(path, max, 0)
}

fn read_with(
    path: &Path,
    max: u64,
    nofollow: libc::c_int,
) -> Result<Option<(Vec<u8>, fs::Metadata)>, Unreadable> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(nofollow | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Unreadable::NotAFile("a symbolic link"));
        }
        Err(e) => return Err(Unreadable::Io(e)),
    };
    let meta = file.metadata().map_err(Unreadable::Io)?;
    if !meta.file_type().is_file() {
        return Err(Unreadable::NotAFile(kind_of(&meta.file_type())));
    }
    if meta.len() > max {
        return Err(Unreadable::TooLarge(meta.len()));
    }
    // The file may grow between the check and the read: read one byte past
    // the limit at most.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    io::Read::read_to_end(&mut io::Read::take(&file, max + 1), &mut bytes)
        .map_err(Unreadable::Io)?;
    if bytes.len() as u64 > max {
        return Err(Unreadable::TooLarge(bytes.len() as u64));
    }
    Ok(Some((bytes, meta)))
}

/// What a file that is not a regular one is, in words.
fn kind_of(t: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a folder"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Makes `dir` (mode 0700) when it is missing.
pub(crate) fn make_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Writes `bytes` to `temp` in `dir`, fsyncs it, renames it over `path` and
/// fsyncs `dir`. The caller holds the lock, so the temp name is free.
pub(crate) fn write_atomically(
    dir: &Path,
    path: &Path,
    temp: &str,
    bytes: &[u8],
) -> io::Result<()> {
    let temp = dir.join(temp);
    match fs::remove_file(&temp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let written = (|| {
        // create_new is O_EXCL: a symlink in the temp file's place is not followed.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    File::open(dir)?.sync_all()
}

/// An exclusive `flock` on a lock file, released when dropped (the file
/// closes). A separate file, because the rename replaces the data file's inode.
pub(crate) struct Lock {
    _file: File,
}

impl Lock {
    pub(crate) fn exclusive(path: &Path) -> io::Result<Lock> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        loop {
            // SAFETY: flock on a descriptor we own; no memory is involved.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(Lock { _file: file });
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}
