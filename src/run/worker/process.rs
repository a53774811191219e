//! One persistent worker: a plugin process whose stdin stays open, answering
//! one request line with one response line.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Instant;

use crate::fsat::Folder;
use crate::run::executor::{
    Answer, End, Exchange, Framing, Group, Leader, Limits, Output, Pipes, Process, Progress,
    ReadNow, Spawn, StderrCollector, Stdin, Stop, end, exchange,
};
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

/// A worker's temp folder, removed when dropped (or by
/// [`TmpFolder::remove`], off the runtime). It is held by the descriptor
/// opened when it was made and removed through it: a worker that replaced
/// it, or a folder in it, with a link has the link removed, never followed.
#[derive(Debug)]
pub(crate) struct TmpFolder(Option<Folder>);

impl TmpFolder {
    pub(crate) fn new(folder: Folder) -> TmpFolder {
        TmpFolder(Some(folder))
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        self.0.as_ref().expect("a folder until removed").path()
    }

    /// Removes the folder on a blocking thread.
    pub(crate) async fn remove(mut self) {
        if let Some(folder) = self.0.take() {
            let _ = tokio::task::spawn_blocking(move || folder.remove()).await;
        }
    }
}

impl Drop for TmpFolder {
    fn drop(&mut self) {
        if let Some(folder) = self.0.take() {
            let _ = folder.remove();
        }
    }
}

/// Spawns the process of a worker or an MCP server from `spec`, confined
/// and in its own process group; its temp folder comes back with it.
pub(super) async fn spawn(spec: WorkerSpec) -> io::Result<(Process, TmpFolder)> {
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

/// A running worker.
pub(crate) struct Worker {
    group: Group,
    /// Request and response lines over its pipes.
    pipes: Pipes<Stdin, Output, Output>,
    tmp: TmpFolder,
    /// Calls answered so far.
    pub calls: u64,
    /// When it last finished a call (or started).
    pub idle_since: Instant,
}

impl Worker {
    /// Starts a worker of the line protocol.
    pub(super) async fn start(spec: WorkerSpec) -> io::Result<Worker> {
        let (process, tmp) = spawn(spec).await?;
        let Process { pipes, group } = process;
        Ok(Worker::new(group, pipes, tmp))
    }

    fn new(group: Group, pipes: Pipes<Stdin, Output, Output>, tmp: TmpFolder) -> Worker {
        Worker {
            group,
            pipes,
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
        let answer = exchange(
            &mut self.pipes,
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

    /// Whether the worker can take a request now: still running, its pipes
    /// open, and (line protocol) nothing on stdout that no request asked for.
    /// Otherwise, why not.
    pub(super) fn check_ready(&mut self) -> Result<(), String> {
        if self.group.has_exited() {
            return Err("it exited between calls".into());
        }
        let pipes = &mut self.pipes;
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

    /// Stops the worker: `End::Finish` closes its stdin and gives it the grace
    /// to exit on its own; `End::Terminate` sends SIGTERM first. Then the group
    /// is killed to the end and the leader reaped. Returns how it ended.
    pub(super) async fn stop(self, how: End, grace: std::time::Duration) -> Option<ExitStatus> {
        let Worker {
            mut group,
            pipes,
            tmp,
            ..
        } = self;
        drop(pipes);
        let status = end(&mut group, how, grace).await.ok();
        tmp.remove().await;
        status
    }
}
