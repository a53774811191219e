//! One MCP server run as a plugin: its process, started and confined like a
//! line worker, its client session (`run::mcp_client`), and the keeper task
//! that owns its process group. The keeper ends the group when the process
//! exits on its own or when asked, reaps it and removes its temp folder: no
//! process, and no zombie, outlives the server. How servers are shared,
//! retired and backed off is the slot's business (`slot.rs`).

use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::load::WorkerInfo;
use super::process::{TmpFolder, WorkerSpec, spawn};
use crate::plugins::mcp_listing::Listing;
use crate::run::executor::{
    End, Group, GroupKiller, Leader, Pipes, Process, RunError, describe_exit, end,
};
use crate::run::mcp_client::{Connect, McpSession};

/// Why a server could not be started.
pub(crate) enum StartError {
    /// Retried too soon after failures in a row.
    Backoff(RunError),
    /// The process could not be spawned.
    Spawn(std::io::Error),
    /// It started but did not finish its handshake and first listing.
    Connect {
        detail: String,
        stderr: String,
        status: Option<ExitStatus>,
        /// See `ConnectError::ended_on_probe`.
        ended_on_probe: bool,
        /// See `ConnectError::server_error`.
        #[cfg_attr(
            not(feature = "mcp-server"),
            allow(
                dead_code,
                reason = "a remote server's bridge asks for a sign-in this way"
            )
        )]
        server_error: Option<rmcp::model::ErrorData>,
    },
}

/// A running server.
pub(crate) struct Server {
    pub(super) session: McpSession,
    pid: u32,
    /// What ends the process group the host signals (see `Group::killer`).
    killer: GroupKiller,
    /// Cancelled once the process has exited (or is being ended).
    pub(super) died: CancellationToken,
    /// Tells the keeper how to end the process.
    stop: Mutex<Option<oneshot::Sender<End>>>,
    /// Set by the keeper before it ends (and reaps) the process: until then
    /// the leader is unreaped, so its group id is still the server's, and
    /// [`Server::kill_now`] may signal the group (it holds the lock while it
    /// does, so the keeper cannot reap meanwhile).
    ending: Arc<Mutex<bool>>,
    keeper: Mutex<Option<tokio::task::JoinHandle<Option<ExitStatus>>>>,
    pub(super) calls: AtomicU64,
    pub(super) in_flight: AtomicUsize,
    pub(super) idle_since: Mutex<Instant>,
    /// Whether it answered anything yet (a death before that counts toward
    /// the backoff).
    pub(super) answered: AtomicBool,
}

impl Server {
    /// Starts the server from `spec`, does the handshake and the first
    /// listing. A server that fails them is ended (its group killed after
    /// `SIGTERM` and a short grace) and its temp folder removed.
    pub(super) async fn launch(
        spec: WorkerSpec,
        connect: Connect,
        kill_grace: Duration,
    ) -> Result<(Server, Listing), StartError> {
        let (Process { pipes, mut group }, tmp) = spawn(spec).await.map_err(StartError::Spawn)?;
        let Pipes {
            stdin: Some(stdin),
            stdout: Some(stdout),
            stderr,
        } = pipes
        else {
            unreachable!("a just-spawned process has its pipes");
        };
        let connected = McpSession::connect(stdin, stdout, stderr, group.exited(), connect).await;
        let (session, listing) = match connected {
            Ok(done) => done,
            Err(failure) => {
                let status = end(&mut group, End::Terminate, Duration::from_millis(500))
                    .await
                    .ok();
                tmp.remove().await;
                let mut detail = failure.detail;
                if let Some(status) = status.filter(|s| !s.success() || s.code().is_none()) {
                    detail.push_str(&format!(" (it {})", describe_exit(status)));
                }
                return Err(StartError::Connect {
                    detail,
                    stderr: failure.stderr,
                    status,
                    ended_on_probe: failure.ended_on_probe,
                    server_error: failure.server_error,
                });
            }
        };
        let (pid, killer) = (group.pid(), group.killer());
        let died = CancellationToken::new();
        let (stop_tx, stop_rx) = oneshot::channel();
        let ending = Arc::new(Mutex::new(false));
        let keeper = tokio::spawn(keep(
            group,
            tmp,
            died.clone(),
            ending.clone(),
            stop_rx,
            kill_grace,
        ));
        let server = Server {
            session,
            pid,
            killer,
            died,
            stop: Mutex::new(Some(stop_tx)),
            ending,
            keeper: Mutex::new(Some(keeper)),
            calls: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            answered: AtomicBool::default(),
        };
        Ok((server, listing))
    }

    /// Whether its process runs and its connection is open.
    pub(super) fn is_alive(&self) -> bool {
        !self.died.is_cancelled() && !self.session.is_closed()
    }

    /// Whether no request is in flight.
    pub(super) fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0
    }

    /// Requests answered so far.
    pub(super) fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// How long it has had no request in flight (it may have one now).
    pub(super) fn idle_for(&self) -> Duration {
        self.idle_since.lock().expect("server lock").elapsed()
    }

    /// The server as a listing shows it.
    pub(super) fn info(&self) -> WorkerInfo {
        WorkerInfo {
            pid: self.pid,
            calls: self.calls(),
            idle_secs: self.is_idle().then(|| self.idle_for().as_secs()),
        }
    }

    /// Has the keeper end the process (`how`; `End::Finish` closes the
    /// connection first) and waits for it. `true` for the one caller that
    /// waited for the keeper, which reports the stop.
    pub(super) async fn end(&self, how: End) -> bool {
        if matches!(how, End::Finish) {
            self.session.close();
        }
        if let Some(tx) = self.stop.lock().expect("server lock").take() {
            let _ = tx.send(how);
        }
        let keeper = self.keeper.lock().expect("server lock").take();
        match keeper {
            Some(keeper) => {
                let _ = keeper.await;
                true
            }
            None => false,
        }
    }

    /// Kills the server's process group at once, from any thread, unless its
    /// keeper is ending it already (see `ending`), and fails its requests.
    /// The keeper reaps it.
    pub(super) fn kill_now(&self) {
        {
            let ending = self.ending.lock().unwrap_or_else(|e| e.into_inner());
            if !*ending {
                self.killer.kill();
            }
        }
        self.died.cancel();
        if let Some(tx) = self.stop.lock().expect("server lock").take() {
            let _ = tx.send(End::Now);
        }
    }

    /// The server's pid, as the host's `/proc` names it.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// What the server offers now, listed again.
    pub(crate) async fn list(&self, timeout: Duration) -> Result<Listing, String> {
        self.session.list(timeout).await
    }
}

/// Owns a server's process group: ends it when the process exits on its own
/// or when asked (`stop`), reaps it and removes its temp folder. Dropped with
/// the runtime, the group guard kills what is left.
async fn keep(
    mut group: Group,
    tmp: TmpFolder,
    died: CancellationToken,
    ending: Arc<Mutex<bool>>,
    stop: oneshot::Receiver<End>,
    grace: Duration,
) -> Option<ExitStatus> {
    let how = tokio::select! {
        _ = group.exited() => End::Now,
        how = stop => how.unwrap_or(End::Now),
    };
    *ending.lock().unwrap_or_else(|e| e.into_inner()) = true;
    died.cancel();
    let status = end(&mut group, how, grace).await.ok();
    tmp.remove().await;
    status
}
