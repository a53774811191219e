//! The Unix seam of the executor: process groups, signals, exit watching and
//! reaping. Every `unsafe` call of the executor lives here.
//!
//! The race this file closes: a process group id is the leader's pid, and once
//! the leader is reaped that number can be handed to a new, unrelated process.
//! Signalling the group after reaping could then hit a stranger. So the executor
//! watches the leader's exit through a pidfd *without reaping it*; while the
//! leader is a zombie the group id stays reserved, and the group is killed
//! before the leader is reaped. The sweep that follows the reaping
//! ([`kill_group_to_the_end`]) only catches members forked during that kill;
//! once the group is empty, `killpg` fails with ESRCH and it stops.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::process::Command;

/// Puts the child in a process group of its own. `process_group` keeps the
/// standard library on `posix_spawn` (no fork of the host).
pub fn configure(cmd: &mut Command) {
    cmd.process_group(0);
}

/// Sends `signal` to every process in group `pgid`. Returns false when the group
/// no longer exists.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    // SAFETY: killpg takes plain integers and has no memory effects.
    let rc = unsafe { libc::killpg(pgid as libc::pid_t, signal) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

pub const SIGTERM: i32 = libc::SIGTERM;
pub const SIGKILL: i32 = libc::SIGKILL;

/// Reaps, without blocking, every exited member of group `pgid` that is our
/// child. Members become our children when their parent dies and this process
/// is a child subreaper (see [`become_subreaper`]); otherwise this finds nothing.
pub fn reap_group(pgid: u32) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only into `status`, a valid local.
        let pid = unsafe { libc::waitpid(-(pgid as libc::pid_t), &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
    }
}

/// Kills group `pgid` with SIGKILL and reaps what it can, repeating briefly so a
/// process forked during the first signal is caught by the next. Bounded: gives
/// up after a few milliseconds when only zombies we cannot reap are left.
pub async fn kill_group_to_the_end(pgid: u32) {
    for round in 0..6u64 {
        if !signal_group(pgid, SIGKILL) {
            return;
        }
        reap_group(pgid);
        tokio::time::sleep(Duration::from_millis(1 + round * 2)).await;
        reap_group(pgid);
    }
}

/// Makes this process the reaper of its orphaned descendants, so that a plugin's
/// grandchildren, once killed, are reaped by the host instead of lingering as
/// zombies under an init that does not reap (as in many containers).
///
/// Process-wide: the CLI turns it on; a library embedder chooses with
/// `PluginHostBuilder::reap_orphans`.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag; no memory is passed.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Becomes ready when a process exits, without reaping it.
pub struct ExitWatch {
    fd: Option<AsyncFd<OwnedFd>>,
}

impl ExitWatch {
    /// Watches `pid`. On kernels without pidfd (before 5.3) the watch never fires
    /// and the caller relies on `Child::wait` alone.
    pub fn new(pid: u32) -> ExitWatch {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        let fd = (raw >= 0).then(|| {
            // SAFETY: `raw` is a descriptor we own, just returned by the kernel.
            unsafe { OwnedFd::from_raw_fd(raw as i32) }
        });
        ExitWatch {
            fd: fd.and_then(|fd| {
                // SAFETY: `fd` is an OwnedFd moved into the AsyncFd, so it stays open and
                // refers to the same pidfd for the AsyncFd's whole lifetime.
                unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
            }),
        }
    }

    /// Whether this watch can see exits (pidfd available).
    pub fn is_active(&self) -> bool {
        self.fd.is_some()
    }

    /// Resolves once the process has exited (it stays unreaped).
    pub async fn exited(&self) {
        match &self.fd {
            Some(fd) => {
                let _ = fd.readable().await;
            }
            None => std::future::pending().await,
        }
    }

    #[cfg(test)]
    fn raw(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.fd.as_ref().map(|f| f.get_ref().as_raw_fd())
    }
}

/// Kills a process group when dropped, unless disarmed. This is what makes
/// dropping a call future (or the runtime) kill the plugin's whole tree; tokio's
/// `kill_on_drop` would kill the direct child only.
pub struct GroupGuard {
    pgid: Option<u32>,
}

impl GroupGuard {
    pub fn new(pgid: u32) -> GroupGuard {
        GroupGuard { pgid: Some(pgid) }
    }

    /// The call finished its own clean-up; nothing to do on drop.
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            // Synchronous on purpose: the runtime may be shutting down, so nothing
            // spawned here would run. Bounded to a few tens of milliseconds.
            for _ in 0..20 {
                if !signal_group(pgid, SIGKILL) {
                    break;
                }
                reap_group(pgid);
                std::thread::sleep(Duration::from_millis(2));
            }
            reap_group(pgid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exit_watch_fires_without_reaping() {
        let mut cmd = Command::new("true");
        configure(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let pid = child.id().unwrap();
        let watch = ExitWatch::new(pid);
        assert!(
            watch.raw().is_some(),
            "pidfd_open is available on supported kernels"
        );
        tokio::time::timeout(Duration::from_secs(5), watch.exited())
            .await
            .unwrap();
        // Not reaped yet: the zombie still holds its group id.
        assert!(signal_group(pid, 0));
        assert!(child.wait().await.unwrap().success());
        assert!(!signal_group(pid, 0));
    }
}
