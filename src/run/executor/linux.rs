//! The Linux part of the executor's seam: exit watching through a pidfd, and
//! the child subreaper. See `unix.rs` for the race the exit watch closes.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use tokio::io::unix::AsyncFd;

use super::unix::WaitThread;

/// Makes this process the reaper of its orphaned descendants, so that a plugin's
/// grandchildren, once killed, are reaped by the host instead of lingering as
/// zombies under an init that does not reap (as in many containers).
///
/// Process-wide: the CLI turns it on; a library embedder chooses with
/// `PluginHostBuilder::reap_orphans`. Returns whether it took effect.
pub(crate) fn become_subreaper() -> io::Result<bool> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag; no memory is passed.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(true)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Becomes ready when a process exits, without reaping it: a pidfd registered
/// with the runtime, or a waiting thread on kernels without pidfds.
#[derive(Debug)]
pub(super) enum ExitWatch {
    Pidfd(AsyncFd<OwnedFd>),
    Thread(WaitThread),
}

impl ExitWatch {
    pub(super) fn new(pid: u32) -> ExitWatch {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if raw >= 0 {
            // SAFETY: `raw` is a descriptor we own, just returned by the kernel.
            let fd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
            // SAFETY: `fd` is an OwnedFd moved into the AsyncFd, so it stays open
            // and refers to the same pidfd for the AsyncFd's whole lifetime.
            let registered =
                unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) };
            if let Ok(fd) = registered {
                return ExitWatch::Pidfd(fd);
            }
        }
        ExitWatch::Thread(WaitThread::new(pid))
    }

    /// Watches the process `pid` through `pidfd`, a pidfd of it that the
    /// spawn returned.
    pub(super) fn from_pidfd(pid: u32, pidfd: OwnedFd) -> ExitWatch {
        // SAFETY: as in `new`: the descriptor moves into the AsyncFd.
        match unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) } {
            Ok(fd) => ExitWatch::Pidfd(fd),
            Err(_) => ExitWatch::Thread(WaitThread::new(pid)),
        }
    }

    /// Watches the read end of a resident init's status pipe (see
    /// `resident.rs`): readable once it reported the call's end.
    pub(super) fn status_pipe(fd: OwnedFd) -> io::Result<ExitWatch> {
        // SAFETY: as in `new`: the descriptor moves into the AsyncFd.
        let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }?;
        Ok(ExitWatch::Pidfd(fd))
    }

    /// Resolves once the process has exited (it stays unreaped).
    pub(super) async fn exited(&self) {
        match self {
            ExitWatch::Pidfd(fd) => {
                let _ = fd.readable().await;
            }
            ExitWatch::Thread(t) => t.exited().await,
        }
    }

    /// The descriptor watched, if one is.
    pub(super) fn fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match self {
            ExitWatch::Pidfd(fd) => Some(fd.get_ref().as_raw_fd()),
            ExitWatch::Thread(_) => None,
        }
    }

    /// Whether the process has exited already, without waiting.
    pub(super) fn has_exited(&self) -> bool {
        match self {
            ExitWatch::Pidfd(fd) => {
                use std::os::fd::AsRawFd;
                let mut poll = libc::pollfd {
                    fd: fd.get_ref().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: `poll` is one valid pollfd; a zero timeout never blocks.
                let n = unsafe { libc::poll(&mut poll, 1, 0) };
                n > 0 && poll.revents & (libc::POLLIN | libc::POLLHUP) != 0
            }
            ExitWatch::Thread(t) => t.has_exited(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::unix::{configure, signal_group};
    use super::*;

    #[tokio::test]
    async fn exit_watch_fires_without_reaping() {
        let mut cmd = tokio::process::Command::new("true");
        configure(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let pid = child.id().unwrap();
        let watch = ExitWatch::new(pid);
        assert!(
            matches!(watch, ExitWatch::Pidfd(_)),
            "pidfd_open is available on supported kernels"
        );
        tokio::time::timeout(Duration::from_secs(5), watch.exited())
            .await
            .unwrap();
        assert!(watch.has_exited());
        // Not reaped yet: the zombie still holds its group id.
        assert!(signal_group(pid, 0));
        assert!(child.wait().await.unwrap().success());
        assert!(!signal_group(pid, 0));
    }

    #[tokio::test]
    async fn the_thread_watch_fires_without_reaping_too() {
        let mut cmd = tokio::process::Command::new("sleep");
        cmd.arg("0.1");
        configure(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let pid = child.id().unwrap();
        let watch = ExitWatch::Thread(WaitThread::new(pid));
        assert!(!watch.has_exited());
        tokio::time::timeout(Duration::from_secs(5), watch.exited())
            .await
            .unwrap();
        assert!(watch.has_exited());
        assert!(signal_group(pid, 0), "still a zombie holding its group id");
        assert!(child.wait().await.unwrap().success());
    }
}
