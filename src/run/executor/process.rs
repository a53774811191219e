//! A plugin process: spawned in a process group of its own, with its three
//! pipes, a watch on its exit and a guard that kills the group when dropped.
//!
//! The state machine that talks to it ([`super::exchange`]) and the one that
//! ends it ([`end`]) are generic over [`Leader`], so their logic is tested
//! against a fake child as well as real processes.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::net::unix::pipe;

use super::os::ExitWatch;
use super::unix::{self, GroupGuard, SIGKILL, SIGTERM};
use crate::run::sandbox::Prepared;

/// What to start.
pub(crate) struct Spawn<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [(OsString, OsString)],
    /// Confinement applied in the child before exec; none when the host's
    /// sandbox is off.
    pub sandbox: Option<Prepared>,
}

/// The parent's end of a plugin's stdin.
pub(crate) type Stdin = pipe::Sender;
/// The parent's end of a plugin's stdout or stderr.
pub(crate) type Output = pipe::Receiver;

/// The three pipes of a process; `None` once closed.
pub(crate) struct Pipes<W, R, E> {
    pub stdin: Option<W>,
    pub stdout: Option<R>,
    pub stderr: Option<E>,
}

/// The leader of a process group, as the state machines see it.
pub(crate) trait Leader {
    /// Resolves once the leader has exited. It stays unreaped, so its pid (the
    /// group id) cannot be handed to another process before [`Leader::reap`].
    fn exited(&self) -> impl Future<Output = ()> + Send;
    /// Whether the leader has exited already.
    fn has_exited(&self) -> bool;
    /// Sends `signal` to the whole group; false once the group is gone.
    fn signal_group(&self, signal: i32) -> bool;
    /// Reaps the leader (after it exited or was killed).
    fn reap(&mut self) -> impl Future<Output = io::Result<ExitStatus>> + Send;
    /// Kills whatever is left of the group, to the end, and stops guarding it.
    fn sweep(&mut self) -> impl Future<Output = ()> + Send;
}

/// A running plugin process.
pub(crate) struct Process {
    pub pipes: Pipes<Stdin, Output, Output>,
    pub group: Group,
}

/// The real leader: a child in its own process group.
pub(crate) struct Group {
    pgid: u32,
    /// The plugin's own pid (the group's leader may be its PID namespace's
    /// init, see `spawn_linux.rs`).
    pid: u32,
    reaper: Reaper,
    watch: ExitWatch,
    guard: GroupGuard,
    /// What kills the group: `SIGKILL`, or `unix::END` when its leader is
    /// a reaping init, which must end the plugin's tree before itself.
    kill: i32,
    /// The call runs in a resident init, which ends the group when asked
    /// and reports on the status pipe `watch` watches (see `resident.rs`).
    #[cfg(target_os = "linux")]
    resident: Option<super::resident::Call>,
}

/// Who reaps the leader.
enum Reaper {
    /// We do, by pid, once the exit watch fired (the executor's own spawn).
    #[cfg_attr(
        not(target_os = "linux"),
        expect(dead_code, reason = "Linux's spawn only")
    )]
    Pid {
        /// The leader is a PID namespace's init: the plugin's own status
        /// comes on this pipe (see `spawn_linux.rs`).
        status: Option<std::os::fd::OwnedFd>,
    },
    /// The runtime does (the standard library's spawn).
    Runtime(tokio::process::Child),
}

impl Process {
    /// Starts `spawn` in a process group of its own, with piped stdio.
    ///
    /// On Linux the executor's own spawn (`spawn_linux.rs`) starts it without
    /// a fork; elsewhere, or on kernels it does not support, the standard
    /// library does (with the sandbox as a `pre_exec` hook, which forks).
    ///
    /// Retries briefly on ETXTBSY: an entrypoint that was just written (a build,
    /// a copy) may still be open for writing in another process. (A call in a
    /// resident PID namespace is started without waiting for its `exec`; its
    /// plugin waits out ETXTBSY itself, and a step it failed is the call's
    /// outcome: see `resident.rs`.)
    ///
    /// # Blocking
    /// An unconfined spawn holds the calling thread until the child has
    /// exec'd: a `CLONE_VFORK` child runs on the parent's memory until then.
    /// That is the time of one `exec`, tens to a few hundred microseconds,
    /// less than a hop to a blocking thread and back would add; so it runs on
    /// the caller's runtime thread, like tokio's own `Command::spawn`. A
    /// sandboxed child is cloned by a spawner thread (see `spawn_linux.rs`),
    /// which the caller awaits without holding its thread; a call for a
    /// resident is handed over without waiting at all.
    pub(crate) async fn spawn(spawn: Spawn<'_>) -> io::Result<Process> {
        #[cfg(target_os = "linux")]
        {
            let mut tries = 0;
            loop {
                let spawned = super::spawn_linux::spawn(
                    spawn.program,
                    spawn.args,
                    spawn.cwd,
                    spawn.env,
                    spawn.sandbox.as_ref(),
                )
                .await;
                match spawned {
                    Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Ok(Some(s)) => return Process::adopt(s),
                    Ok(None) => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Process::spawn_with_std(spawn).await
    }

    /// Takes over a child the executor's own spawn started.
    #[cfg(target_os = "linux")]
    fn adopt(s: super::spawn_linux::Spawned) -> io::Result<Process> {
        // Guarded first: if a pipe cannot be registered, the child dies.
        let kill = if s.reaps { unix::END } else { SIGKILL };
        let mut guard = GroupGuard::new(s.pid, kill);
        if s.resident.is_some() {
            // The call guards itself: dropped unfinished, it asks its
            // resident to end it.
            guard.disarm();
        }
        let watch = if s.resident.is_some() {
            ExitWatch::status_pipe(s.pidfd)?
        } else {
            ExitWatch::from_pidfd(s.pid, s.pidfd)
        };
        Ok(Process {
            pipes: Pipes {
                stdin: Some(pipe::Sender::from_owned_fd(s.stdin)?),
                stdout: Some(pipe::Receiver::from_owned_fd(s.stdout)?),
                stderr: Some(pipe::Receiver::from_owned_fd(s.stderr)?),
            },
            group: Group {
                // A resident's call is ended through its resident, never
                // by a group id the host did not reap (see `GroupKiller`).
                pgid: if s.resident.is_some() { 0 } else { s.pid },
                pid: s.plugin_pid,
                reaper: Reaper::Pid { status: s.status },
                watch,
                guard,
                kill,
                resident: s.resident,
            },
        })
    }

    async fn spawn_with_std(spawn: Spawn<'_>) -> io::Result<Process> {
        let mut cmd = tokio::process::Command::new(spawn.program);
        cmd.args(spawn.args)
            .current_dir(spawn.cwd)
            .env_clear()
            .envs(spawn.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        match spawn.sandbox {
            // The hook gives it a session of its own (no controlling
            // terminal), which is a process group of its own too.
            Some(sandbox) if !sandbox.is_empty() => sandbox.apply_to(&mut cmd, spawn.cwd),
            _ => unix::configure(&mut cmd),
        }
        let mut tries = 0;
        let mut child = loop {
            match cmd.spawn() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                other => break other?,
            }
        };
        let pgid = child.id().expect("a just-spawned child has a pid");
        let guard = GroupGuard::new(pgid, SIGKILL);
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let group = Group {
            pgid,
            pid: pgid,
            reaper: Reaper::Runtime(child),
            watch: ExitWatch::new(pgid),
            guard,
            kill: SIGKILL,
            #[cfg(target_os = "linux")]
            resident: None,
        };
        Ok(Process {
            pipes: Pipes {
                stdin: stdin
                    .map(|p| pipe::Sender::from_owned_fd(p.into_owned_fd()?))
                    .transpose()?,
                stdout: stdout
                    .map(|p| pipe::Receiver::from_owned_fd(p.into_owned_fd()?))
                    .transpose()?,
                stderr: stderr
                    .map(|p| pipe::Receiver::from_owned_fd(p.into_owned_fd()?))
                    .transpose()?,
            },
            group,
        })
    }
}

impl Group {
    /// The plugin's pid, as this host's `/proc` names it.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// What ends the group at once from anywhere, without waiting (see
    /// [`GroupKiller`]).
    pub(crate) fn killer(&self) -> GroupKiller {
        GroupKiller {
            pgid: self.pgid,
            signal: self.kill,
        }
    }
}

/// Ends a process group from any thread: `SIGKILL`, or `unix::END` to a
/// reaping init. The group's owner reaps it, and has not yet while this is
/// used (an unreaped leader keeps the group's id its own).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupKiller {
    pgid: u32,
    signal: i32,
}

impl GroupKiller {
    pub(crate) fn kill(self) {
        // 0: a resident's call (only per-call processes run in one, and
        // none of them is killed this way).
        if self.pgid == 0 {
            return;
        }
        unix::signal_group(self.pgid, self.signal);
    }
}

impl Leader for Group {
    fn exited(&self) -> impl Future<Output = ()> + Send {
        self.watch.exited()
    }

    fn has_exited(&self) -> bool {
        self.watch.has_exited()
    }

    fn signal_group(&self, signal: i32) -> bool {
        #[cfg(target_os = "linux")]
        if let Some(call) = &self.resident {
            match signal {
                SIGTERM => call.terminate(),
                _ => call.end(),
            }
            return !self.watch.has_exited();
        }
        let signal = if signal == SIGKILL { self.kill } else { signal };
        unix::signal_group(self.pgid, signal)
    }

    async fn reap(&mut self) -> io::Result<ExitStatus> {
        #[cfg(target_os = "linux")]
        if let Some(call) = &mut self.resident {
            self.watch.exited().await;
            return call.finished(self.watch.fd());
        }
        match &mut self.reaper {
            Reaper::Runtime(child) => child.wait().await,
            Reaper::Pid { status } => {
                self.watch.exited().await;
                let own = unix::reap_exited(self.pgid).await?;
                // The plugin's status when its init reported it; the init's
                // own (killed by the host) otherwise.
                Ok(status
                    .take()
                    .and_then(|fd| unix::read_status(&fd))
                    .unwrap_or(own))
            }
        }
    }

    async fn sweep(&mut self) {
        #[cfg(target_os = "linux")]
        if self.resident.is_some() {
            return;
        }
        unix::kill_group_to_the_end(self.pgid, self.kill).await;
        self.guard.disarm();
    }
}

/// How a process is brought to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// It answered and exited (or is exiting): kill what is left at once.
    Now,
    /// A limit stopped it: SIGTERM to the group, the grace, then SIGKILL.
    Terminate,
    /// Its stdin was closed (a worker told to finish): the grace to exit on
    /// its own, then SIGKILL.
    Finish,
}

/// Ends `leader`'s group the way `how` says and reaps the leader.
///
/// The group is killed while the leader is still unreaped (a zombie keeps
/// the group id reserved), then the leader is reaped, then stragglers forked
/// during the kill are swept. Whatever happens, nothing of the group is left.
pub(crate) async fn end(
    leader: &mut impl Leader,
    how: End,
    grace: Duration,
) -> io::Result<ExitStatus> {
    if how != End::Now && !leader.has_exited() {
        if how == End::Terminate {
            leader.signal_group(SIGTERM);
        }
        let _ = tokio::time::timeout(grace, leader.exited()).await;
    }
    leader.signal_group(SIGKILL);
    let status = leader.reap().await;
    leader.sweep().await;
    status
}
