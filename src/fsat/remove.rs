//! Removing what a plugin left in a folder, through held descriptors.
//!
//! Each entry is first unlinked where it is (`unlinkat`: a file, a link, a
//! FIFO go at once, a link never followed); only what refuses because it is
//! a folder is opened, beneath the folder that holds it and without following
//! a link, then emptied through its own descriptor and removed with
//! `AT_REMOVEDIR`. A folder on another file system (a mount point) is not
//! entered: the removal fails there, leaving the rest removed. A plugin
//! racing the removal can only make it fail (a folder swapped for a link
//! between the two steps is met as a link), never redirect it.
//!
//! Depth costs one descriptor a level; past [`MAX_DEPTH`] levels a folder is
//! moved up into the folder being emptied (`renameat`, same file system) and
//! taken in a later pass, so any depth is removed with bounded descriptors.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Dir, sys};

/// Folders held open at once while removing one tree.
const MAX_DEPTH: usize = 32;

/// Passes over the emptied folder before giving up on a writer that keeps
/// adding to it (each pass also takes the trees moved up by the one before).
const MAX_PASSES: usize = 1024;

/// Removes everything in `top`.
pub(super) fn contents(top: &Dir) -> io::Result<()> {
    let dev = top.metadata()?.dev();
    for _ in 0..MAX_PASSES {
        let names = top.entries()?;
        if names.is_empty() {
            return Ok(());
        }
        for name in names {
            within(top, top, &name, dev, 0)?;
        }
    }
    Err(io::Error::other(
        "the folder kept filling while it was emptied",
    ))
}

/// Removes the entry `name` of `dir` and what it holds.
pub(super) fn entry(dir: &Dir, name: &OsStr) -> io::Result<()> {
    let dev = dir.metadata()?.dev();
    if let Some(sub) = unlink_or_open(dir, name, dev)? {
        contents(&sub)?;
        drop(sub);
        remove_empty(dir, name)?;
    }
    Ok(())
}

fn within(top: &Dir, dir: &Dir, name: &OsStr, dev: u64, depth: usize) -> io::Result<()> {
    let Some(sub) = unlink_or_open(dir, name, dev)? else {
        return Ok(());
    };
    if depth + 1 >= MAX_DEPTH {
        drop(sub);
        return sys::renameat(dir.fd(), name, top.fd(), &moved_name());
    }
    for child in sub.entries()? {
        within(top, &sub, &child, dev, depth + 1)?;
    }
    drop(sub);
    remove_empty(dir, name)
}

/// Unlinks the entry `name` of `dir`; `None` when it is gone. A folder
/// refuses: it comes back opened (no link followed, same file system) to be
/// emptied first.
fn unlink_or_open(dir: &Dir, name: &OsStr, dev: u64) -> io::Result<Option<Dir>> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let refused = match sys::unlinkat(dir.fd(), name, 0) {
            Ok(()) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            // A folder: EISDIR on Linux, EPERM where POSIX is followed.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EISDIR | libc::EPERM)) => e,
            Err(e) => return Err(e),
        };
        match dir.open_dir_in(Path::new(name), true) {
            Ok(sub) if sub.metadata()?.dev() != dev => return Err(mount_point(name)),
            Ok(sub) => return Ok(Some(sub)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => return Err(mount_point(name)),
            // Swapped for a link or a file since the unlink: unlink that.
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
                    && attempts < 3 => {}
            // Not a folder after all: the unlink's own error.
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Err(refused),
            Err(e) => return Err(e),
        }
    }
}

fn remove_empty(dir: &Dir, name: &OsStr) -> io::Result<()> {
    match sys::unlinkat(dir.fd(), name, libc::AT_REMOVEDIR) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        done => done,
    }
}

fn mount_point(name: &OsStr) -> io::Error {
    io::Error::other(format!(
        "{} is on another file system (a mount point): not entered",
        name.to_string_lossy()
    ))
}

const MOVED_PREFIX: &str = ".plughost-removing-";

/// A name for a tree moved up to be removed in a later pass.
fn moved_name() -> OsString {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{MOVED_PREFIX}{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
    .into()
}
