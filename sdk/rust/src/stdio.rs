//! Process plumbing: private protocol pipes, and SIGTERM as a cancel flag.
//!
//! Only the response may reach stdout, so [`take`] keeps the protocol's stdin
//! and stdout on new descriptors and points fd 0 at /dev/null and fd 1 at
//! stderr: a stray `println!`, or a child process writing to its inherited
//! stdout, cannot corrupt the answer. std has neither `dup2` nor `signal`, and
//! this crate depends on nothing but serde and schemars, so the three libc
//! functions it needs are declared here.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CANCELLED: AtomicBool = AtomicBool::new(false);
static BUSY: AtomicBool = AtomicBool::new(false);

/// True once SIGTERM arrived during a call.
pub(crate) fn cancelled() -> bool {
    CANCELLED.load(Ordering::SeqCst)
}

/// Marks a call in progress (between reading a request and writing its answer).
pub(crate) fn set_busy(busy: bool) {
    BUSY.store(busy, Ordering::SeqCst);
}

#[cfg(unix)]
mod sys {
    use std::ffi::c_int;

    pub const SIGTERM: c_int = 15; // the same on Linux, macOS and the BSDs

    unsafe extern "C" {
        pub fn dup2(old: c_int, new: c_int) -> c_int;
        pub fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
        pub fn _exit(status: c_int) -> !;
    }
}

/// The protocol's (requests, responses) streams.
#[cfg(unix)]
pub(crate) fn take() -> io::Result<(Box<dyn Read>, Box<dyn Write>)> {
    use std::fs::File;
    use std::os::fd::{AsFd, AsRawFd};

    // Clones are close-on-exec: child processes never inherit the protocol pipes.
    let requests = io::stdin().as_fd().try_clone_to_owned()?;
    let responses = io::stdout().as_fd().try_clone_to_owned()?;
    // SAFETY: dup2 on descriptors this process owns; 0 and 1 stay open, only their targets change.
    unsafe {
        if sys::dup2(2, 1) < 0 {
            let null = File::options().write(true).open("/dev/null")?; // no stderr: discard stray output
            sys::dup2(null.as_raw_fd(), 1);
        }
        let null = File::open("/dev/null")?;
        sys::dup2(null.as_raw_fd(), 0);
    }
    Ok((
        Box::new(File::from(requests)),
        Box::new(File::from(responses)),
    ))
}

#[cfg(not(unix))]
pub(crate) fn take() -> io::Result<(Box<dyn Read>, Box<dyn Write>)> {
    Ok((Box::new(io::stdin()), Box::new(io::stdout())))
}

/// On SIGTERM during a call: set the cancel flag and let the tool finish (the
/// loop exits after answering). Idle, or on a second SIGTERM: exit now.
#[cfg(unix)]
pub(crate) fn on_sigterm() {
    extern "C" fn handle(_: std::ffi::c_int) {
        // Only async-signal-safe work here: atomics and _exit.
        if BUSY.load(Ordering::SeqCst) && !CANCELLED.swap(true, Ordering::SeqCst) {
            return;
        }
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { sys::_exit(128 + sys::SIGTERM) }
    }
    // SAFETY: installs a handler that only touches atomics and calls _exit.
    unsafe {
        sys::signal(sys::SIGTERM, handle);
    }
}

#[cfg(not(unix))]
pub(crate) fn on_sigterm() {}
