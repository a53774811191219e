//! Signal dispositions in a process that shares the host's memory.
//!
//! A process cloned with `CLONE_VM` but not `CLONE_SIGHAND` (a spawned child
//! before its `exec`, a resident init) has its own copy of the host's
//! signal dispositions. A handler the host installed would run there on
//! the host's memory, from another process: so before anything can send it
//! a signal, such a process puts every handled signal back to its default.
//! `SIGPIPE` too, which the host ignores: a plugin gets it as any program
//! does.

use std::ffi::c_int;
use std::ptr;

/// Every signal number a handler can be set for, but glibc's own (32 and
/// 33, which it reserves for its threads).
pub(super) fn all() -> impl Iterator<Item = c_int> {
    (1..=64).filter(|&s| !matches!(s, libc::SIGKILL | libc::SIGSTOP | 32 | 33))
}

/// Sets each of `signals` that has a handler (or is `SIGPIPE`, ignored)
/// back to its default; 0, or the errno of the first that failed.
///
/// # Safety
/// Only in a process of its own dispositions (not a thread of the host's).
pub(super) unsafe fn to_defaults(signals: impl Iterator<Item = c_int>) -> c_int {
    // SAFETY: sigaction with null or valid pointers to locals.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in signals {
            if libc::sigaction(signal, ptr::null(), &mut action) != 0 {
                continue;
            }
            let handler = action.sa_sigaction;
            let keep =
                handler == libc::SIG_DFL || (handler == libc::SIG_IGN && signal != libc::SIGPIPE);
            if !keep && libc::sigaction(signal, &default, ptr::null_mut()) != 0 {
                return *libc::__errno_location();
            }
        }
        0
    }
}
