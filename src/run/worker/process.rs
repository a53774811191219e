//! One persistent worker: a plugin process whose stdin stays open, answering
//! one request line with one response line.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Instant;

#[cfg(feature = "mcp-plugins")]
use crate::plugins::mcp_tools::ListedTool;
use crate::run::executor::{
    Answer, End, Exchange, Framing, Group, Leader, Limits, Output, Pipes, Process, Progress,
    ReadNow, Spawn, StderrCollector, Stdin, Stop, end, exchange,
};
#[cfg(feature = "mcp-plugins")]
use crate::run::mcp::{McpAnswer, McpSession, OnTools};
use crate::run::sandbox::Prepared;

/// What a worker is started with; the host prepares it (environment,
/// sandbox, a private temp folder) the way it prepares a per-call process.
pub(crate) struct WorkerSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub sandbox: Option<Prepared>,
    /// The worker's `TMPDIR`, removed when the worker stops.
    pub tmp: TmpFolder,
}

/// A folder removed when dropped (or by [`TmpFolder::remove`], off the runtime).
#[derive(Debug)]
pub(crate) struct TmpFolder(Option<PathBuf>);

impl TmpFolder {
    pub(crate) fn new(path: PathBuf) -> TmpFolder {
        TmpFolder(Some(path))
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        self.0.as_deref().expect("a folder until removed")
    }

    /// Removes the folder on a blocking thread.
    pub(crate) async fn remove(mut self) {
        if let Some(path) = self.0.take() {
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(path)).await;
        }
    }
}

impl Drop for TmpFolder {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// A running worker.
pub(crate) struct Worker {
    group: Group,
    io: Io,
    tmp: TmpFolder,
    /// Calls answered so far.
    pub calls: u64,
    /// When it last finished a call (or started).
    pub idle_since: Instant,
}

/// How a worker is spoken to.
enum Io {
    /// Request and response lines over its pipes.
    Lines(Pipes<Stdin, Output, Output>),
    /// MCP over its pipes, through rmcp's client.
    #[cfg(feature = "mcp-plugins")]
    Mcp(McpSession),
}

impl Worker {
    /// Starts a worker of the line protocol.
    pub(super) async fn start(spec: WorkerSpec) -> io::Result<Worker> {
        let (process, tmp) = Self::spawn(spec).await?;
        let Process { pipes, group } = process;
        Ok(Worker::new(group, Io::Lines(pipes), tmp))
    }

    /// Starts an MCP server, does the handshake and lists its tools (within
    /// `timeout`). `on_tools` receives every later list.
    #[cfg(feature = "mcp-plugins")]
    pub(super) async fn start_mcp(
        spec: WorkerSpec,
        timeout: std::time::Duration,
        max_message: usize,
        on_tools: OnTools,
    ) -> Result<(Worker, Vec<ListedTool>), StartError> {
        let (process, tmp) = Self::spawn(spec).await.map_err(StartError::Spawn)?;
        let Process { pipes, mut group } = process;
        let Pipes {
            stdin: Some(stdin),
            stdout: Some(stdout),
            stderr,
        } = pipes
        else {
            unreachable!("a just-spawned process has its pipes");
        };
        let connected = McpSession::connect(
            stdin,
            stdout,
            stderr,
            group.exited(),
            timeout,
            max_message,
            on_tools,
        )
        .await;
        match connected {
            Ok((session, tools)) => Ok((Worker::new(group, Io::Mcp(session), tmp), tools)),
            Err(failure) => {
                let status = end(
                    &mut group,
                    End::Terminate,
                    std::time::Duration::from_millis(500),
                )
                .await
                .ok();
                tmp.remove().await;
                Err(StartError::Connect {
                    detail: failure.detail,
                    stderr: failure.stderr,
                    status,
                })
            }
        }
    }

    async fn spawn(spec: WorkerSpec) -> io::Result<(Process, TmpFolder)> {
        let process = Process::spawn(Spawn {
            program: &spec.program,
            args: &spec.args,
            cwd: &spec.cwd,
            env: &spec.env,
            sandbox: spec.sandbox,
        })
        .await?;
        Ok((process, spec.tmp))
    }

    fn new(group: Group, io: Io, tmp: TmpFolder) -> Worker {
        Worker {
            group,
            io,
            tmp,
            calls: 0,
            idle_since: Instant::now(),
        }
    }

    pub(super) fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// One request of the line protocol: writes `line` (ending in `\n`) and
    /// reads the answer line.
    pub(super) async fn call(
        &mut self,
        line: &[u8],
        limits: &Limits,
        cancel: impl std::future::Future<Output = ()>,
        stderr: &mut StderrCollector,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> Result<Answer, Stop> {
        #[cfg_attr(
            not(feature = "mcp-plugins"),
            expect(irrefutable_let_patterns, reason = "only lines without MCP")
        )]
        let Io::Lines(pipes) = &mut self.io else {
            unreachable!("a line call goes to a line worker");
        };
        let answer = exchange(
            pipes,
            &self.group,
            Exchange {
                input: line,
                framing: Framing::Line,
                max_stdout: limits.max_stdout,
                pipe_linger: limits.pipe_linger,
                deadline: tokio::time::Instant::now() + limits.timeout,
            },
            cancel,
            stderr,
            on_progress,
        )
        .await;
        if answer.is_ok() {
            self.calls += 1;
        }
        answer
    }

    /// One `tools/call` to an MCP server. Returns how it ended and its stderr.
    #[cfg(feature = "mcp-plugins")]
    pub(super) async fn call_mcp(
        &mut self,
        tool: &str,
        arguments: rmcp::model::JsonObject,
        limits: &Limits,
        cancel: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> (Result<McpAnswer, Stop>, String) {
        let Io::Mcp(session) = &self.io else {
            unreachable!("an MCP call goes to an MCP worker");
        };
        let ended = session
            .call(
                tool,
                arguments,
                tokio::time::Instant::now() + limits.timeout,
                limits.max_stderr,
                cancel,
                self.group.exited(),
                on_progress,
            )
            .await;
        if ended.0.is_ok() {
            self.calls += 1;
        }
        ended
    }

    /// An MCP server's tools as it lists them now.
    #[cfg(feature = "mcp-plugins")]
    pub(super) async fn list_mcp(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Vec<ListedTool>, String> {
        match &self.io {
            Io::Mcp(session) => session.list_tools(timeout).await,
            Io::Lines(_) => Err("not an MCP server".to_owned()),
        }
    }

    /// Whether the worker can take a request now: still running, its pipes
    /// open, and (line protocol) nothing on stdout that no request asked for.
    /// Otherwise, why not.
    pub(super) fn check_ready(&mut self) -> Result<(), String> {
        if self.group.has_exited() {
            return Err("it exited between calls".into());
        }
        match &mut self.io {
            Io::Lines(pipes) => {
                let (Some(_), Some(stdout)) = (&pipes.stdin, &mut pipes.stdout) else {
                    return Err("it closed its pipes".into());
                };
                let mut probe = [0u8; 1];
                match stdout.read_now(&mut probe) {
                    Ok(0) => Err("it closed its stdout between calls".into()),
                    Ok(_) => Err(
                        "it wrote to stdout between calls; answer each request with exactly one line"
                            .into(),
                    ),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                    Err(e) => Err(format!("its stdout failed: {e}")),
                }
            }
            #[cfg(feature = "mcp-plugins")]
            Io::Mcp(session) if session.is_closed() => {
                Err("its MCP connection closed between calls".into())
            }
            #[cfg(feature = "mcp-plugins")]
            Io::Mcp(_) => Ok(()),
        }
    }

    /// Stops the worker: `End::Finish` closes its stdin and gives it the grace
    /// to exit on its own; `End::Terminate` sends SIGTERM first. Then the group
    /// is killed to the end and the leader reaped. Returns how it ended.
    pub(super) async fn stop(self, how: End, grace: std::time::Duration) -> Option<ExitStatus> {
        let Worker {
            mut group, io, tmp, ..
        } = self;
        match io {
            Io::Lines(pipes) => drop(pipes),
            #[cfg(feature = "mcp-plugins")]
            Io::Mcp(session) => session.close().await,
        }
        let status = end(&mut group, how, grace).await.ok();
        tmp.remove().await;
        status
    }
}

/// Why an MCP server could not be started.
#[cfg(feature = "mcp-plugins")]
pub(crate) enum StartError {
    Spawn(io::Error),
    Connect {
        detail: String,
        stderr: String,
        status: Option<ExitStatus>,
    },
}
