//! The Unix seam of the executor: process groups, signals and reaping, the
//! same on every Unix. Exit watching differs by platform and lives in
//! `linux.rs` (pidfd) and `other_unix.rs` (a waiting thread); both build on
//! [`WaitThread`] here. Every `unsafe` call of the executor lives in these files.
//!
//! The race these files close: a process group id is the leader's pid, and once
//! the leader is reaped that number can be handed to a new, unrelated process.
//! Signalling the group after reaping could then hit a stranger. So the executor
//! watches the leader's exit *without reaping it*; while the leader is a zombie
//! the group id stays reserved, and the group is killed before the leader is
//! reaped. The sweep that follows the reaping ([`kill_group_to_the_end`]) only
//! catches members forked during that kill; once the group is empty, `killpg`
//! fails with ESRCH and it stops.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use tokio::process::Command;
use tokio::sync::watch;

pub(super) const SIGTERM: i32 = libc::SIGTERM;
pub(super) const SIGKILL: i32 = libc::SIGKILL;
/// What ends a reaping `plughost-init` (see `spawn_linux.rs`): it kills
/// every process the plugin left, then exits. `SIGKILL` would end it alone
/// and leave the rest to the machine's init. The host sends a plugin
/// `SIGTERM` and `SIGKILL` only, so none takes this for the plugin's.
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "Linux's spawn only")
)]
pub(super) const END: i32 = libc::SIGUSR2;

/// Puts the child in a process group of its own. `process_group` keeps the
/// standard library on `posix_spawn` (no fork of the host).
pub(super) fn configure(cmd: &mut Command) {
    cmd.process_group(0);
}

/// Whether a process with this pid exists now (it may belong to another
/// user: `EPERM` still says it exists).
pub(crate) fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 checks the pid without sending anything; no memory is involved.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends `signal` to every process in group `pgid`. Returns false when the group
/// no longer exists.
pub(super) fn signal_group(pgid: u32, signal: i32) -> bool {
    // SAFETY: killpg takes plain integers and has no memory effects.
    let rc = unsafe { libc::killpg(pgid as libc::pid_t, signal) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Reaps, without blocking, every exited member of group `pgid` that is our
/// child. Members become our children when their parent dies and this process
/// is a child subreaper (see `become_subreaper`); otherwise this finds nothing.
/// Returns whether children of ours are left in the group (alive, or dying).
pub(super) fn reap_group(pgid: u32) -> bool {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only into `status`, a valid local.
        let pid = unsafe { libc::waitpid(-(pgid as libc::pid_t), &mut status, libc::WNOHANG) };
        match pid {
            0 => return true,
            p if p > 0 => continue,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            _ => return false,
        }
    }
}

/// Groups whose kill left children of ours behind (a process still tearing
/// down after SIGKILL, slow under load), reaped in the background until none
/// is left: the bounded kills return before every member is gone, and a
/// member nobody waits for would stay a zombie.
static LATE: std::sync::Mutex<Vec<(u32, i32)>> = std::sync::Mutex::new(Vec::new());
static LATE_WAKE: std::sync::Condvar = std::sync::Condvar::new();
static LATE_THREAD: std::sync::Once = std::sync::Once::new();

/// Hands group `pgid` to the late reaper: a thread of its own (the runtime
/// may be shutting down) that sends it `signal` (`SIGKILL`, or [`END`])
/// and reaps it every few milliseconds,
/// then every 100 ms, until no child of ours is left in it.
pub(super) fn reap_later(pgid: u32, signal: i32) {
    LATE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((pgid, signal));
    LATE_WAKE.notify_one();
    LATE_THREAD.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("plughost-reaper".into())
            .stack_size(64 * 1024)
            .spawn(|| {
                let mut rounds = 0u32;
                loop {
                    let mut late = LATE.lock().unwrap_or_else(|e| e.into_inner());
                    while late.is_empty() {
                        rounds = 0;
                        late = LATE_WAKE.wait(late).unwrap_or_else(|e| e.into_inner());
                    }
                    late.retain(|&(pgid, signal)| {
                        signal_group(pgid, signal);
                        reap_group(pgid)
                    });
                    drop(late);
                    rounds += 1;
                    let pause = if rounds < 20 { 5 } else { 100 };
                    std::thread::sleep(Duration::from_millis(pause));
                }
            });
    });
}

/// Reaps our child `pid`, which has exited (its exit watch fired), and
/// returns its status.
pub(super) async fn reap_exited(pid: u32) -> io::Result<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only into `status`, a valid local.
        let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
        if rc > 0 {
            return Ok(std::process::ExitStatus::from_raw(status));
        }
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        } else {
            // Exited but not yet waitable: only for an instant after the
            // watch fired.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// The wait status a PID namespace's init wrote on `fd` before it exited,
/// if it wrote one.
pub(super) fn read_status(fd: &std::os::fd::OwnedFd) -> Option<std::process::ExitStatus> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::ExitStatusExt;
    let mut status = [0u8; 4];
    read_report(fd.as_raw_fd(), &mut status)
        .then(|| std::process::ExitStatus::from_raw(i32::from_ne_bytes(status)))
}

/// Fills `report` from `fd`, a non-blocking pipe its writer wrote one
/// report on in a single write (which a pipe keeps whole) before it
/// closed it; false if there was none.
pub(super) fn read_report(fd: RawFd, report: &mut [u8]) -> bool {
    loop {
        // SAFETY: `report` is valid for writes of its length; the
        // descriptor is non-blocking, so the read does not wait.
        let n = unsafe { libc::read(fd, report.as_mut_ptr().cast(), report.len()) };
        if n >= 0 {
            return n as usize == report.len();
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Kills group `pgid` with `signal` (`SIGKILL`, or [`END`] for a reaping
/// init) and reaps what it can, repeating briefly so a process forked
/// during the first signal is caught by the next. Bounded to a few tens of
/// milliseconds; children of ours still dying then are left to the late
/// reaper ([`reap_later`]). An empty group costs one `killpg`.
pub(super) async fn kill_group_to_the_end(pgid: u32, signal: i32) {
    for round in 0..6u64 {
        if !signal_group(pgid, signal) {
            if reap_group(pgid) {
                reap_later(pgid, signal);
            }
            return;
        }
        reap_group(pgid);
        tokio::time::sleep(Duration::from_millis(1 + round * 2)).await;
        reap_group(pgid);
    }
    // Members are still dying: the late reaper finishes the job.
    reap_later(pgid, signal);
}

/// Reads what `fd` holds right now, without waiting: `Ok(0)` at end of file,
/// `WouldBlock` when nothing is there. Used after a persistent worker's
/// answer, to take the progress lines it wrote to stderr before answering even
/// when the runtime has not yet noticed them.
pub(super) fn read_now(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call,
    // and `fd` is a pipe this process owns (non-blocking, as tokio sets it).
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Kills a process group when dropped, unless disarmed. This is what makes
/// dropping a call future, a worker or the runtime kill the plugin's whole
/// tree; tokio's `kill_on_drop` would kill the direct child only.
#[derive(Debug)]
pub(super) struct GroupGuard {
    pgid: Option<u32>,
    /// `SIGKILL`, or [`END`] for a reaping init.
    signal: i32,
}

impl GroupGuard {
    pub(super) fn new(pgid: u32, signal: i32) -> GroupGuard {
        GroupGuard {
            pgid: Some(pgid),
            signal,
        }
    }

    /// The owner finished its own clean-up; nothing to do on drop.
    pub(super) fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            // Synchronous on purpose: the runtime may be shutting down, so nothing
            // spawned here would run. Bounded to a few tens of milliseconds.
            for _ in 0..20 {
                if !signal_group(pgid, self.signal) {
                    break;
                }
                reap_group(pgid);
                std::thread::sleep(Duration::from_millis(2));
            }
            if reap_group(pgid) {
                // A member (the leader, too) still tearing down: never a zombie.
                reap_later(pgid, self.signal);
            }
        }
    }
}

/// Watches a process's exit from a thread blocked in
/// `waitid(P_PID, pid, WEXITED | WNOWAIT)`: portable to every Unix, and like a
/// pidfd it leaves the process unreaped. Costs a thread per watched process,
/// so Linux uses it only where pidfds are missing (kernels before 5.3).
#[derive(Debug)]
pub(super) struct WaitThread {
    exited: watch::Receiver<bool>,
}

impl WaitThread {
    pub(super) fn new(pid: u32) -> WaitThread {
        let (tx, rx) = watch::channel(false);
        let spawned = std::thread::Builder::new()
            .name("plughost-exit-watch".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                loop {
                    // SAFETY: a zeroed siginfo_t is a valid value; waitid writes
                    // only into it.
                    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                    // SAFETY: `info` is a valid, writable siginfo_t for the call.
                    let rc = unsafe {
                        libc::waitid(
                            libc::P_PID,
                            pid as libc::id_t,
                            &mut info,
                            libc::WEXITED | libc::WNOWAIT,
                        )
                    };
                    if rc == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                        break;
                    }
                }
                let _ = tx.send(true);
            });
        if spawned.is_err() {
            // No thread, no watch: report the exit at once so callers fall back
            // to reaping instead of waiting forever.
            let (tx, rx) = watch::channel(true);
            drop(tx);
            return WaitThread { exited: rx };
        }
        WaitThread { exited: rx }
    }

    /// Resolves once the process has exited (it stays unreaped).
    pub(super) async fn exited(&self) {
        let mut rx = self.exited.clone();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// Whether the process has exited already.
    pub(super) fn has_exited(&self) -> bool {
        *self.exited.borrow()
    }
}
