//! Runs plugin processes: spawn, feed stdin, read capped stdout, drain stderr,
//! enforce the deadline and cancellation, kill the whole process tree, reap.
//!
//! [`run_once`] is the per-call protocol: one process per call. A persistent
//! worker (`crate::run::worker`) keeps a [`Process`] alive and runs the same
//! [`exchange`] loop once per request with a line as the answer's framing.
//!
//! # Guarantees
//! - stdin is written while stdout and stderr are read, in one `select!` loop, so
//!   a plugin that never reads a large input cannot deadlock the host; a plugin
//!   that exits before reading makes the write fail quietly (EPIPE).
//! - stdout is read in chunks and the exchange stops the moment it passes the
//!   cap; memory stays at about the cap however much the plugin writes.
//! - stderr is drained (a chatty plugin never blocks) and only its head and
//!   tail are kept.
//! - Timeout, cancellation and the stdout cap send SIGTERM to the group, wait a
//!   short grace for the leader, then SIGKILL the group until it is empty.
//! - After the leader exits, the pipes get a short linger to close; a grandchild
//!   holding them open does not hold the call, and is killed with the group.
//! - Every per-call run ends by killing what is left of its group, so no process
//!   of a call outlives it. Dropping the future, or a worker, does the same
//!   through the group guard.
//!
//! # Caveats
//! - A process that leaves the group (`setsid`, `setpgid`) escapes the group
//!   kill. Every confined process runs under a first process that ends it:
//!   in a PID namespace of its own where the sandbox joins a user
//!   namespace (a resident one for a per-call plugin, `resident.rs`;
//!   `plughost-init` otherwise, `spawn_linux.rs`), else `plughost-init` as
//!   a child subreaper that kills what the plugin leaves. Unconfined, such
//!   a process outlives the call.
//! - Killed grandchildren are reaped by the host only when it is a child
//!   subreaper ([`become_subreaper`], Linux only); otherwise by init.

mod exchange;
mod process;
#[cfg(target_os = "linux")]
mod resident;
#[cfg(target_os = "linux")]
mod signals;
#[cfg(target_os = "linux")]
mod spawn_linux;
#[cfg(target_os = "linux")]
mod stack;
mod stderr;
mod unix;

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(all(unix, not(target_os = "linux")))]
#[path = "other_unix.rs"]
mod os;

#[cfg(test)]
mod tests;

use std::process::ExitStatus;

use crate::protocol::{ParseResponseError, Response};
use std::time::{Duration, Instant};

pub(crate) use exchange::{Answer, Exchange, Framing, ReadNow, Stop, exchange};
pub(crate) use os::become_subreaper;
pub(crate) use process::{
    End, Group, GroupKiller, Leader, Output, Pipes, Process, Spawn, Stdin, end,
};
pub use stderr::Progress;
pub(crate) use stderr::StderrCollector;
pub(crate) use unix::process_exists;

/// The limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock limit from the request to the answer.
    pub timeout: Duration,
    /// Largest answer accepted on stdout, in bytes.
    pub max_stdout: usize,
    /// Bytes of stderr kept for diagnostics (half head, half tail).
    pub max_stderr: usize,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long the pipes may stay open after the entrypoint exits.
    pub pipe_linger: Duration,
    /// Largest input accepted, in bytes of compact JSON; a larger one is
    /// `invalid_args` and nothing is spawned.
    pub max_input: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(30),
            max_stdout: 1024 * 1024,
            max_stderr: 64 * 1024,
            kill_grace: Duration::from_millis(500),
            pipe_linger: Duration::from_millis(200),
            max_input: 1024 * 1024,
        }
    }
}

/// Bytes read from stdout at a time.
const READ_CHUNK: usize = 64 * 1024;

/// An answer: a per-call process that ran to its own end, or a worker's line.
#[derive(Debug)]
pub(crate) struct Finished {
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// How the process exited; `None` for a worker, which lives on.
    pub status: Option<ExitStatus>,
    pub duration: Duration,
    /// The response, when the worker layer already parsed it.
    pub parsed: Option<Result<Response, ParseResponseError>>,
    /// An MCP server's result as it sent it, beside its `parsed` response.
    pub mcp: Option<McpParts>,
}

/// An MCP server's tool result as it sent it: its content blocks (in order,
/// with their annotations) and `_meta`.
#[derive(Debug, Default)]
pub(crate) struct McpParts {
    pub content: Vec<serde_json::Value>,
    pub meta: Option<serde_json::Value>,
}

/// Why a run did not end on its own.
#[derive(Debug)]
pub(crate) enum RunError {
    /// The process could not be started.
    Spawn(std::io::Error),
    Timeout {
        stderr: String,
    },
    Cancelled,
    OutputTooLarge,
    /// A worker exited, or closed its stdout, before answering.
    Died {
        detail: String,
        exit_code: Option<i32>,
        stderr: String,
    },
    /// A worker keeps exiting at start-up; it is not started again before
    /// its backoff ends.
    Backoff(String),
    /// An MCP server answered with a JSON-RPC error instead of a result.
    ServerError {
        code: i32,
        message: String,
        /// The error's `data`, when the server gave one.
        data: Option<serde_json::Value>,
    },
}

/// The per-call protocol: starts `spawn`, writes `request` and closes stdin,
/// reads the answer until the process exits, then kills what is left of its
/// group and reaps it.
pub(crate) async fn run_once(
    spawn: Spawn<'_>,
    request: &[u8],
    limits: &Limits,
    cancel: impl std::future::Future<Output = ()>,
    on_progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Finished, RunError> {
    let start = Instant::now();
    let process = Process::spawn(spawn).await.map_err(RunError::Spawn)?;
    run_spawned(process, start, request, limits, cancel, on_progress).await
}

/// [`run_once`] from a process spawned at `start` (the deadline counts
/// from then), for a caller that times the spawn itself.
pub(crate) async fn run_spawned(
    mut process: Process,
    start: Instant,
    request: &[u8],
    limits: &Limits,
    cancel: impl std::future::Future<Output = ()>,
    on_progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Finished, RunError> {
    let deadline = tokio::time::Instant::from_std(start) + limits.timeout;
    let mut err = StderrCollector::new(limits.max_stderr);
    let answer = exchange(
        &mut process.pipes,
        &process.group,
        Exchange {
            input: request,
            framing: Framing::UntilExit,
            max_stdout: limits.max_stdout,
            pipe_linger: limits.pipe_linger,
            deadline,
        },
        cancel,
        &mut err,
        on_progress,
    )
    .await;
    let Process { pipes, mut group } = process;
    drop(pipes);
    let how = if answer.is_ok() {
        End::Now
    } else {
        End::Terminate
    };
    let status = end(&mut group, how, limits.kill_grace).await;
    let stdout = match answer {
        Ok(answer) => answer.stdout,
        // Not a per-call outcome (only a line-framed exchange dies), but
        // harmless: what the process wrote is its answer.
        Err(Stop::Died { stdout, .. }) => stdout,
        Err(Stop::Timeout) => {
            return Err(RunError::Timeout {
                stderr: err.render(),
            });
        }
        Err(Stop::Cancelled) => return Err(RunError::Cancelled),
        Err(Stop::OutputTooLarge) => return Err(RunError::OutputTooLarge),
    };
    Ok(Finished {
        stdout,
        stderr: err.render(),
        status: Some(status.map_err(RunError::Spawn)?),
        duration: start.elapsed(),
        parsed: None,
        mcp: None,
    })
}

/// "exited with code 3", "was killed by signal 9".
pub(crate) fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended ({status})"),
    }
}
