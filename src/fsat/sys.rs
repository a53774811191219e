//! The raw POSIX calls relative to a folder descriptor (`openat`, `mkdirat`,
//! `unlinkat`, `renameat`, `fstatat`, reading a folder's names), each a thin
//! safe wrapper: a name is passed as a NUL-terminated copy, a descriptor is
//! borrowed for the call, `EINTR` is retried, and a new descriptor is owned
//! the moment it exists.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// `name` as a C string; a name holding a NUL byte names nothing.
pub(super) fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a file name holds a NUL byte"))
}

/// Retries `call` while it fails with `EINTR`; `-1` is failure.
fn retry(mut call: impl FnMut() -> libc::c_int) -> io::Result<libc::c_int> {
    loop {
        let r = call();
        if r != -1 {
            return Ok(r);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Takes ownership of a descriptor a call just returned.
pub(super) fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful `openat`/`openat2`:
    // it is open and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// `openat(dir, name, flags | O_CLOEXEC)`; `name` is one component or `.`.
pub(super) fn openat(dir: BorrowedFd<'_>, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let name = c_name(name)?;
    let fd = retry(|| {
        // SAFETY: `name` is NUL-terminated and outlives the call; `dir` is
        // open for the call (borrowed); without O_CREAT no mode is read.
        unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC) }
    })?;
    Ok(owned(fd))
}

/// `mkdirat(dir, name, mode)`: fails with `EEXIST` on any existing entry,
/// a link included (never followed).
pub(super) fn mkdirat(dir: BorrowedFd<'_>, name: &OsStr, mode: libc::mode_t) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: as in `openat`: a NUL-terminated name and a borrowed, open descriptor.
    retry(|| unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) }).map(drop)
}

/// `unlinkat(dir, name, flags)`: removes the entry itself (a link, not what
/// it points at); `AT_REMOVEDIR` removes an empty folder.
pub(super) fn unlinkat(dir: BorrowedFd<'_>, name: &OsStr, flags: libc::c_int) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: as in `openat`: a NUL-terminated name and a borrowed, open descriptor.
    retry(|| unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// `renameat(from, from_name, to, to_name)`: moves the entry itself.
pub(super) fn renameat(
    from: BorrowedFd<'_>,
    from_name: &OsStr,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
) -> io::Result<()> {
    let (a, b) = (c_name(from_name)?, c_name(to_name)?);
    retry(|| {
        // SAFETY: both names are NUL-terminated and outlive the call; both
        // descriptors are open for the call (borrowed).
        unsafe { libc::renameat(from.as_raw_fd(), a.as_ptr(), to.as_raw_fd(), b.as_ptr()) }
    })
    .map(drop)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry itself, a link
/// reported as a link.
pub(super) fn lstatat(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<libc::stat> {
    let name = c_name(name)?;
    // SAFETY: `stat` is plain old data; all zeroes is a valid value that
    // `fstatat` overwrites on success.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    retry(|| {
        // SAFETY: a NUL-terminated name, a borrowed open descriptor, and a
        // pointer to a `stat` that lives across the call.
        unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        }
    })?;
    Ok(st)
}

/// Whether a `stat` describes a symbolic link.
pub(super) fn is_link(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// The names in the folder `dir` (without `.` and `..`), read through a new
/// open file description of it (`openat(dir, ".")`), so reading never moves
/// the held descriptor's offset and a later read sees every name again.
pub(super) fn names(dir: BorrowedFd<'_>) -> io::Result<Vec<OsString>> {
    let own = openat(dir, OsStr::new("."), libc::O_RDONLY | libc::O_DIRECTORY)?;
    let raw = own.into_raw_fd();
    // SAFETY: `raw` is an open folder descriptor this function owns; on
    // success `fdopendir` takes it over (released by `closedir` below).
    let stream = unsafe { libc::fdopendir(raw) };
    if stream.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: `fdopendir` failed, so `raw` is still ours to close.
        unsafe { libc::close(raw) };
        return Err(e);
    }
    let mut names = Vec::new();
    let result = loop {
        super::os::clear_errno();
        // SAFETY: `stream` is a valid, open directory stream used by this
        // thread only.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            let e = io::Error::last_os_error();
            break match e.raw_os_error() {
                Some(0) | None => Ok(()),
                Some(_) => Err(e),
            };
        }
        // SAFETY: `readdir` returned a valid entry whose `d_name` is a
        // NUL-terminated string, valid until the next `readdir` on `stream`;
        // it is copied before then.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            names.push(OsString::from_vec(name.to_vec()));
        }
    };
    // SAFETY: `stream` is open and not used after this.
    unsafe { libc::closedir(stream) };
    result.map(|()| names)
}

/// `fstat` of a borrowed descriptor.
pub(super) fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: `stat` is plain old data; all zeroes is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open for the call (borrowed); `st` lives across it.
    retry(|| unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}
