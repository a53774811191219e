//! Runs one plugin process: spawn, feed stdin, read capped stdout, drain stderr,
//! enforce the deadline and cancellation, kill the whole process tree, reap.
//!
//! # Guarantees
//! - stdin is written while stdout and stderr are read, in one `select!` loop, so
//!   a plugin that never reads a large input cannot deadlock the host; a plugin
//!   that exits before reading makes the write fail quietly (EPIPE).
//! - stdout is read in chunks and the process tree is killed the moment it passes
//!   the cap; memory stays at about the cap however much the plugin writes.
//! - stderr is drained to its end (a chatty plugin never blocks) and only its
//!   head and tail are kept.
//! - Timeout, cancellation and the stdout cap send SIGTERM to the group, wait a
//!   short grace for the leader, then SIGKILL the group until it is empty.
//! - After the leader exits, the pipes get a short linger to close; a grandchild
//!   holding them open does not hold the call, and is killed with the group.
//! - Every run ends by killing what is left of its group, so no process of a
//!   call outlives it. Dropping the future does the same through [`GroupGuard`].
//!
//! # Caveats
//! - A process that leaves the group (`setsid`, `setpgid`) escapes the kill; the
//!   sandbox is the place to prevent that.
//! - Killed grandchildren are reaped by the host only when it is a child
//!   subreaper ([`become_subreaper`]); otherwise by init.

mod stderr;
mod unix;

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

pub use stderr::{Progress, StderrCollector};
pub use unix::become_subreaper;
use unix::{ExitWatch, GroupGuard, SIGKILL, SIGTERM};

/// The limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock limit from spawn to answer.
    pub timeout: Duration,
    /// Largest stdout accepted, in bytes.
    pub max_stdout: usize,
    /// Bytes of stderr kept for diagnostics (half head, half tail).
    pub max_stderr: usize,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long the pipes may stay open after the entrypoint exits.
    pub pipe_linger: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(30),
            max_stdout: 1024 * 1024,
            max_stderr: 64 * 1024,
            kill_grace: Duration::from_millis(500),
            pipe_linger: Duration::from_millis(200),
        }
    }
}

/// What to run.
pub struct Job<'a> {
    pub program: &'a Path,
    pub cwd: &'a Path,
    pub env: &'a [(OsString, OsString)],
    pub stdin: &'a [u8],
    pub limits: Limits,
    /// Confinement applied in the child before exec (a `pre_exec` hook; none
    /// when there is nothing to enforce, which keeps `posix_spawn`).
    pub sandbox: Option<crate::run::sandbox::Prepared>,
}

/// A process that ran to its own end.
#[derive(Debug)]
pub struct Finished {
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub status: ExitStatus,
    pub duration: Duration,
}

/// Why a run did not end on its own.
#[derive(Debug)]
pub enum RunError {
    /// The process could not be started.
    Spawn(io::Error),
    Timeout {
        stderr: String,
    },
    Cancelled,
    OutputTooLarge,
}

const READ_CHUNK: usize = 64 * 1024;

/// Runs `job` to completion or until a limit or `cancel` stops it.
pub async fn run(
    job: Job<'_>,
    cancel: impl std::future::Future<Output = ()>,
    on_progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Finished, RunError> {
    let start = Instant::now();
    let mut cmd = Command::new(job.program);
    cmd.current_dir(job.cwd)
        .env_clear()
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    unix::configure(&mut cmd);
    if let Some(sandbox) = job.sandbox {
        sandbox.apply_to(&mut cmd);
    }
    let mut child = spawn_retrying_busy(&mut cmd).map_err(RunError::Spawn)?;
    let pgid = child.id().expect("a just-spawned child has a pid");
    let mut guard = GroupGuard::new(pgid);
    let exit_watch = ExitWatch::new(pgid);

    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out = Vec::new();
    let mut err = StderrCollector::new(job.limits.max_stderr);
    let mut err_buf = vec![0u8; 8 * 1024];
    let mut input = job.stdin;
    let deadline = tokio::time::sleep(job.limits.timeout);
    tokio::pin!(deadline);
    tokio::pin!(cancel);
    let mut exited = false;
    let linger = tokio::time::sleep(Duration::MAX);
    tokio::pin!(linger);

    // Phase 1: drive the pipes until the leader exits and the pipes close,
    // or a limit stops the run.
    let stop: Option<RunError> = loop {
        if exited && stdout.is_none() && stderr.is_none() {
            break None;
        }
        tokio::select! {
            // Write stdin in slices, so reading never waits on a full input pipe.
            r = async { stdin.as_mut().unwrap().write(input).await }, if stdin.is_some() => {
                match r {
                    Ok(n) if n > 0 && n < input.len() => input = &input[n..],
                    // Done, or the plugin closed its stdin (EPIPE): close ours either way.
                    _ => stdin = None,
                }
            }
            r = async { stdout.as_mut().unwrap().read_buf(&mut out).await }, if stdout.is_some() => {
                match r {
                    Ok(0) | Err(_) => stdout = None,
                    Ok(_) if out.len() > job.limits.max_stdout => break Some(RunError::OutputTooLarge),
                    Ok(_) => out.reserve(READ_CHUNK.min(job.limits.max_stdout + 1 - out.len())),
                }
            }
            r = async { stderr.as_mut().unwrap().read(&mut err_buf).await }, if stderr.is_some() => {
                match r {
                    Ok(0) | Err(_) => stderr = None,
                    Ok(n) => err.push(&err_buf[..n], on_progress),
                }
            }
            _ = exit_watch.exited(), if !exited && exit_watch.is_active() => {
                exited = true;
                linger.as_mut().reset(tokio::time::Instant::now() + job.limits.pipe_linger);
            }
            // Without pidfd, fall back to reaping: the group id is then only
            // guarded by the short time between this wait and the kill below.
            _ = child.wait(), if !exited && !exit_watch.is_active() => {
                exited = true;
                linger.as_mut().reset(tokio::time::Instant::now() + job.limits.pipe_linger);
            }
            _ = &mut linger => break None,
            _ = &mut deadline => break Some(RunError::Timeout { stderr: String::new() }),
            _ = &mut cancel => break Some(RunError::Cancelled),
        }
    };
    drop(stdin);

    // Phase 2: stop what is left. A limit asks politely first.
    if stop.is_some() && !exited {
        unix::signal_group(pgid, SIGTERM);
        let _ = tokio::time::timeout(job.limits.kill_grace, async {
            if exit_watch.is_active() {
                exit_watch.exited().await;
            } else {
                let _ = child.wait().await;
            }
        })
        .await;
    }
    // The leader is a zombie or gone; kill stragglers while its group id is reserved.
    unix::signal_group(pgid, SIGKILL);
    let status = child.wait().await;
    unix::kill_group_to_the_end(pgid).await;
    guard.disarm();

    match stop {
        Some(RunError::Timeout { .. }) => Err(RunError::Timeout {
            stderr: err.render(),
        }),
        Some(e) => Err(e),
        None => Ok(Finished {
            stdout: out,
            stderr: err.render(),
            status: status.map_err(RunError::Spawn)?,
            duration: start.elapsed(),
        }),
    }
}

/// Spawns, retrying briefly on ETXTBSY: an entrypoint that was just written
/// (a build, a copy) may still be open for writing in another process.
fn spawn_retrying_busy(cmd: &mut Command) -> io::Result<tokio::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}
