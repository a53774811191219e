//! `plughost-init`, the first process of a confined plugin's PID namespace
//! (see `init/main.rs` and `spawn_linux.rs`): its image in memory, and the
//! host's lifeline, which tells each one when the host is gone.
//!
//! Both are made once per host process and live as long as it: the image is
//! a sealed memfd the child `exec`s without a path (nothing on disk a plugin
//! could swap), and the lifeline is a pipe the host never writes to, whose
//! read end every init holds; when the host exits, for whatever reason, the
//! write end closes with it and every init ends its namespace.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// The static executable `build.rs` made from `init/main.rs`; empty where it
/// was not built.
static IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/plughost-init"));

/// `MFD_EXEC` (Linux 6.3): an executable memfd where `vm.memfd_noexec` asks
/// for the flag to be explicit.
const MFD_EXEC: libc::c_uint = 0x10;

/// What a spawn needs to start an init: descriptors the host holds open.
#[derive(Debug)]
pub(crate) struct Init {
    image: OwnedFd,
    lifeline: OwnedFd,
    /// Never written; closed only when the host exits.
    _lifeline_host: OwnedFd,
}

impl Init {
    /// The image to `execveat` with `AT_EMPTY_PATH`.
    pub(crate) fn image(&self) -> RawFd {
        self.image.as_raw_fd()
    }

    /// The read end of the host's lifeline.
    pub(crate) fn lifeline(&self) -> RawFd {
        self.lifeline.as_raw_fd()
    }
}

/// The init of this host, or why there is none.
pub(crate) fn get() -> Result<&'static Init, &'static str> {
    static INIT: OnceLock<Result<Init, String>> = OnceLock::new();
    INIT.get_or_init(make).as_ref().map_err(String::as_str)
}

/// Whether confined plugins get a PID namespace of their own here, where
/// user namespaces work; the reason when not.
pub(crate) fn available() -> Result<(), String> {
    get().map(|_| ()).map_err(str::to_owned)
}

/// Whether a `plughost-init` outside a PID namespace can end what a plugin
/// leaves: it learns its children from `/proc/thread-self/children`, which
/// a kernel built without `CONFIG_PROC_CHILDREN` (or a missing `/proc`)
/// does not give.
pub(crate) fn reaps() -> bool {
    static LISTED: OnceLock<bool> = OnceLock::new();
    *LISTED.get_or_init(|| std::path::Path::new("/proc/thread-self/children").exists())
}

fn make() -> Result<Init, String> {
    if IMAGE.is_empty() {
        return Err("plughost-init was not built for this architecture".into());
    }
    let image = memfd().map_err(|e| format!("cannot hold plughost-init in memory: {e}"))?;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints, which pipe2 fills.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "cannot make the host's lifeline: {}",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: pipe2 returned two new descriptors that nothing else owns.
    let (lifeline, lifeline_host) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok(Init {
        image,
        lifeline,
        _lifeline_host: lifeline_host,
    })
}

/// A sealed, executable memfd holding [`IMAGE`].
fn memfd() -> io::Result<OwnedFd> {
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: memfd_create takes a NUL-terminated name and flags, and returns
    // a new descriptor or -1.
    let mut raw = unsafe { libc::memfd_create(c"plughost-init".as_ptr(), flags | MFD_EXEC) };
    if raw < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // Before 6.3 the flag is unknown, and every memfd is executable.
        // SAFETY: as above.
        raw = unsafe { libc::memfd_create(c"plughost-init".as_ptr(), flags) };
    }
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut written = 0;
    while written < IMAGE.len() {
        let rest = &IMAGE[written..];
        // SAFETY: `rest` is valid for reads of its length.
        let n = unsafe { libc::write(fd.as_raw_fd(), rest.as_ptr().cast(), rest.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        written += n as usize;
    }
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: F_ADD_SEALS takes an integer set of seals on our descriptor.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}
