//! Linux: a relative path is resolved beneath a held folder by the kernel in
//! one call, `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS` (and `RESOLVE_NO_XDEV` where a mount point must not
//! be crossed): a link at any step, `/proc`'s magic links included, fails
//! the whole open with `ELOOP`, so no step is ever taken through something
//! a plugin swapped in. Where the kernel lacks `openat2` (before 5.6) or a
//! seccomp profile refuses it, the portable walk (`walk.rs`) does the same
//! one component at a time; the choice is made once per process.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{sys, walk};

/// Set once `openat2` turned out to be unavailable here.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens `rel` (names only: checked by the caller) beneath `dir` with
/// `flags`, following no link; `same_mount` refuses crossing a mount point.
pub(super) fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: libc::c_int,
    same_mount: bool,
) -> io::Result<OwnedFd> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        match openat2(dir, rel, flags, same_mount) {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOSYS | libc::EPERM | libc::E2BIG)
                ) =>
            {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
            done => return done,
        }
    }
    walk::open_beneath(dir, rel, flags, same_mount)
}

fn openat2(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: libc::c_int,
    same_mount: bool,
) -> io::Result<OwnedFd> {
    let bytes = rel.as_os_str().as_bytes();
    let path = CString::new(if bytes.is_empty() { b"." } else { bytes })
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))?;
    // SAFETY: `open_how` is plain old data; all zeroes is "no flags, no
    // mode, no resolve restrictions", every field set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    if same_mount {
        how.resolve |= libc::RESOLVE_NO_XDEV;
    }
    loop {
        // SAFETY: `openat2(dirfd, path, how, size)`: `dir` is open for the
        // call (borrowed), `path` is NUL-terminated and `how` a valid
        // `open_how` of the size passed, both outliving the call.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            return Ok(sys::owned(fd as libc::c_int));
        }
        let e = io::Error::last_os_error();
        // EAGAIN: a rename raced the lookup; the kernel asks to try again.
        if !matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) {
            return Err(e);
        }
    }
}

/// Sets `errno` to 0, to tell the end of a folder from a failed read.
pub(super) fn clear_errno() {
    // SAFETY: `__errno_location` returns this thread's `errno`, always valid.
    unsafe { *libc::__errno_location() = 0 };
}
