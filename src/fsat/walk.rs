//! The portable way to open a path beneath a held folder without following
//! a link: one `openat(…, O_NOFOLLOW)` per component, each from the
//! descriptor the step before returned. A link at any step fails with
//! `ELOOP`; a step onto another file system fails with `EXDEV` when the
//! caller asked to stay on one. Used on every system without `openat2`, and
//! on Linux where `openat2` is refused.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use super::sys;

/// Opens `rel` (names only: checked by the caller) beneath `dir` with
/// `flags`, following no link; `same_mount` refuses a step onto another
/// file system.
pub(super) fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: libc::c_int,
    same_mount: bool,
) -> io::Result<OwnedFd> {
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let dev = match same_mount {
        true => Some(sys::fstat(dir)?.st_dev),
        false => None,
    };
    let Some((last, folders)) = parts.split_last() else {
        return sys::openat(dir, OsStr::new("."), flags);
    };
    let mut held: Option<OwnedFd> = None;
    for name in folders {
        let at = held.as_ref().map_or(dir, AsFd::as_fd);
        let next = step(at, name, libc::O_RDONLY | libc::O_DIRECTORY)?;
        same_device(&next, dev)?;
        held = Some(next);
    }
    let at = held.as_ref().map_or(dir, AsFd::as_fd);
    let fd = step(at, last, flags)?;
    if flags & libc::O_DIRECTORY != 0 {
        same_device(&fd, dev)?;
    }
    Ok(fd)
}

/// One component with `O_NOFOLLOW`. A link met where a folder was asked for
/// may fail with `ENOTDIR` rather than `ELOOP`: it is reported as the link
/// it is.
fn step(at: BorrowedFd<'_>, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    match sys::openat(at, name, flags | libc::O_NOFOLLOW) {
        Err(e)
            if e.raw_os_error() == Some(libc::ENOTDIR)
                && sys::lstatat(at, name).is_ok_and(|st| sys::is_link(&st)) =>
        {
            Err(io::Error::from_raw_os_error(libc::ELOOP))
        }
        done => done,
    }
}

fn same_device(fd: &OwnedFd, dev: Option<libc::dev_t>) -> io::Result<()> {
    match dev {
        Some(dev) if sys::fstat(fd.as_fd())?.st_dev != dev => {
            Err(io::Error::from_raw_os_error(libc::EXDEV))
        }
        _ => Ok(()),
    }
}
