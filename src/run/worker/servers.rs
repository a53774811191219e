//! MCP servers run as plugins: one server process per plugin version,
//! started when a request needs it, shared by every call. Unlike a line
//! worker, which answers one request at a time, a server's connection carries
//! many requests at once (up to the manifest's `persistent.max_in_flight`,
//! 16 by default), each with its own deadline, cancellation and cap
//! (`run::mcp_client`).
//!
//! What a [`Slot`] does for its server is what a pool does for its workers:
//! a server that keeps dying before it answers is started again with
//! backoff; one idle (no request in flight) for `idle_timeout_secs` is
//! stopped (stdin closed, a grace, then the group kill); a changed plugin or
//! grant retires it (stopped once its requests end); a revoke or the host's
//! shutdown kills it at once. The process's group is owned by a keeper task,
//! which ends it when it exits on its own or when asked: no process, and no
//! zombie, outlives the slot.

use std::collections::HashMap;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

use super::WorkerInfo;
use super::backoff::Backoff;
use super::load::WorkerLoad;
use super::process::{TmpFolder, WorkerSpec};
use crate::events::{EventSink, HostEvent, WorkerStop};
use crate::plugins::catalog::Plugin;
use crate::plugins::mcp_listing::Listing;
use crate::run::executor::{
    End, Group, Leader, Process, RunError, Spawn, Stop, describe_exit, end,
};
use crate::run::mcp_client::{Ask, Connect, McpAnswer, McpSession};

/// The MCP servers of a host, by plugin.
pub(crate) struct Servers {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    events: EventSink,
}

/// The server of one plugin version under one grant.
pub(crate) struct Slot {
    plugin: Arc<Plugin>,
    grant: String,
    idle_timeout: Duration,
    kill_grace: Duration,
    permits: Arc<Semaphore>,
    /// Held while a server starts, so that callers wait for one start.
    starting: tokio::sync::Mutex<()>,
    /// A start in progress, counted for metrics.
    starting_now: super::load::Starting,
    running: Mutex<Option<Arc<Server>>>,
    backoff: Mutex<Backoff>,
    retired: Mutex<Option<WorkerStop>>,
    events: EventSink,
    runtime: tokio::runtime::Handle,
}

/// A running server.
pub(crate) struct Server {
    session: McpSession,
    pid: u32,
    /// The process group the host signals (see `Group::id`).
    group_id: u32,
    /// Cancelled once the process has exited (or is being ended).
    died: CancellationToken,
    /// Tells the keeper how to end the process.
    stop: Mutex<Option<oneshot::Sender<End>>>,
    /// Set by the keeper before it ends (and reaps) the process: until then
    /// the leader is unreaped, so its group id is still the server's, and
    /// [`Server::kill_now`] may signal the group (it holds the lock while it
    /// does, so the keeper cannot reap meanwhile).
    ending: Arc<Mutex<bool>>,
    keeper: Mutex<Option<tokio::task::JoinHandle<Option<ExitStatus>>>>,
    calls: AtomicU64,
    in_flight: AtomicUsize,
    idle_since: Mutex<Instant>,
    /// Whether it answered anything yet (a death before that counts toward
    /// the backoff).
    answered: std::sync::atomic::AtomicBool,
}

impl Servers {
    pub(crate) fn new(events: EventSink) -> Servers {
        Servers {
            slots: Mutex::default(),
            events,
        }
    }

    /// The slot serving exactly this plugin version and grant. A slot of an
    /// older version, or under another grant, is retired.
    pub(crate) fn slot(
        &self,
        plugin: &Arc<Plugin>,
        grant: &str,
        kill_grace: Duration,
    ) -> Arc<Slot> {
        let mut slots = self.slots.lock().expect("slots lock");
        if let Some(slot) = slots.get(plugin.name()) {
            let same_load = slot.plugin.generation == plugin.generation;
            if same_load && slot.grant == grant {
                return slot.clone();
            }
            slot.retire(if same_load {
                WorkerStop::ApprovalChanged
            } else {
                WorkerStop::PluginChanged
            });
        }
        let settings = plugin.manifest.worker_settings().unwrap_or_default();
        let slot = Arc::new(Slot {
            plugin: plugin.clone(),
            grant: grant.to_owned(),
            idle_timeout: Duration::from_secs(settings.idle_timeout_secs),
            kill_grace,
            permits: Arc::new(Semaphore::new(settings.max_in_flight as usize)),
            starting: tokio::sync::Mutex::new(()),
            starting_now: Default::default(),
            running: Mutex::new(None),
            backoff: Mutex::default(),
            retired: Mutex::new(None),
            events: self.events.clone(),
            runtime: tokio::runtime::Handle::current(),
        });
        slots.insert(plugin.name().to_owned(), slot.clone());
        slot
    }

    /// Retires the slot of `plugin`: its server stops once its requests end.
    pub(crate) fn retire(&self, plugin: &str, reason: WorkerStop) {
        if let Some(slot) = self.slots.lock().expect("slots lock").remove(plugin) {
            slot.retire(reason);
        }
    }

    /// Kills the server of `plugin` now (a revoke): its requests fail.
    pub(crate) fn kill(&self, plugin: &str, reason: WorkerStop) {
        if let Some(slot) = self.slots.lock().expect("slots lock").remove(plugin) {
            slot.kill(reason);
        }
    }

    /// Kills every server (host shutdown).
    pub(crate) fn kill_all(&self, reason: WorkerStop) {
        let slots: Vec<_> = self.slots.lock().expect("slots lock").drain().collect();
        for (_, slot) in slots {
            slot.kill(reason.clone());
        }
    }

    /// Stops every server with no request in flight and waits until they are
    /// gone; busy ones stop after their requests.
    pub(crate) async fn stop_all(&self, reason: WorkerStop) {
        let slots: Vec<_> = self.slots.lock().expect("slots lock").drain().collect();
        for (_, slot) in slots {
            *slot.retired.lock().expect("slot lock") = Some(reason.clone());
            let idle = slot
                .running
                .lock()
                .expect("slot lock")
                .take_if(|s| s.in_flight.load(Ordering::Relaxed) == 0);
            if let Some(server) = idle {
                slot.end(&server, End::Finish, reason.clone()).await;
            }
        }
    }

    /// Each slot's plugin, its load and the grant key its server runs under.
    pub(crate) fn slots(&self) -> Vec<(String, u64, String)> {
        self.slots
            .lock()
            .expect("slots lock")
            .iter()
            .map(|(name, s)| (name.clone(), s.plugin.generation, s.grant.clone()))
            .collect()
    }

    /// Each server as it is now (see [`WorkerLoad`]).
    pub(crate) fn loads(&self) -> Vec<WorkerLoad> {
        let slots = self.slots.lock().expect("slots lock");
        slots
            .iter()
            .map(|(name, slot)| {
                let server = slot.server();
                WorkerLoad {
                    plugin: name.clone(),
                    running: usize::from(server.is_some()),
                    busy: usize::from(
                        server.is_some_and(|s| s.in_flight.load(Ordering::Relaxed) > 0),
                    ),
                    starting: slot.starting_now.count(),
                    backing_off: slot.backoff.lock().expect("slot lock").waiting(),
                }
            })
            .collect()
    }

    /// The running servers, by plugin.
    pub(crate) fn running(&self) -> HashMap<String, Vec<WorkerInfo>> {
        let slots = self.slots.lock().expect("slots lock");
        slots
            .iter()
            .filter_map(|(name, slot)| {
                let server = slot.running.lock().expect("slot lock").clone()?;
                let busy = server.in_flight.load(Ordering::Relaxed) > 0;
                Some((
                    name.clone(),
                    vec![WorkerInfo {
                        pid: server.pid,
                        calls: server.calls.load(Ordering::Relaxed),
                        idle_secs: (!busy).then(|| {
                            server
                                .idle_since
                                .lock()
                                .expect("server lock")
                                .elapsed()
                                .as_secs()
                        }),
                    }],
                ))
            })
            .collect()
    }
}

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
    },
}

impl Slot {
    /// Its running server, if it has one that is alive and not retired.
    pub(crate) fn server(&self) -> Option<Arc<Server>> {
        if self.retired.lock().expect("slot lock").is_some() {
            return None;
        }
        let running = self.running.lock().expect("slot lock");
        running
            .as_ref()
            .filter(|s| !s.died.is_cancelled() && !s.session.is_closed())
            .cloned()
    }

    /// Starts the server from `spec` (unless another caller started it
    /// meanwhile: then `spec` is dropped, its temp folder with it), does the
    /// handshake and the first listing. The listing is `None` when the server
    /// was already running.
    pub(crate) async fn start(
        self: &Arc<Self>,
        spec: WorkerSpec,
        connect: Connect,
    ) -> Result<(Arc<Server>, Option<Listing>), StartError> {
        let _one = self.starting.lock().await;
        if let Some(server) = self.server() {
            return Ok((server, None));
        }
        self.backoff
            .lock()
            .expect("slot lock")
            .check()
            .map_err(StartError::Backoff)?;
        let _starting = self.starting_now.enter();
        let WorkerSpec {
            program,
            args,
            cwd,
            env,
            sandbox,
            tmp,
        } = spec;
        let spawned = Process::spawn(Spawn {
            program: &program,
            args: &args,
            cwd: &cwd,
            env: &env,
            sandbox,
        })
        .await;
        let Process { pipes, mut group } = match spawned {
            Ok(p) => p,
            Err(e) => {
                self.start_failed(&format!("it could not start: {e}"), "");
                return Err(StartError::Spawn(e));
            }
        };
        let crate::run::executor::Pipes {
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
                self.start_failed(&detail, &failure.stderr);
                return Err(StartError::Connect {
                    detail,
                    stderr: failure.stderr,
                    status,
                });
            }
        };
        let pid = group.pid();
        let group_id = group.id();
        let died = CancellationToken::new();
        let (stop_tx, stop_rx) = oneshot::channel();
        let ending = Arc::new(Mutex::new(false));
        let keeper = tokio::spawn(keep(
            group,
            tmp,
            died.clone(),
            ending.clone(),
            stop_rx,
            self.kill_grace,
        ));
        let server = Arc::new(Server {
            session,
            pid,
            group_id,
            died,
            stop: Mutex::new(Some(stop_tx)),
            ending,
            keeper: Mutex::new(Some(keeper)),
            calls: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            answered: Default::default(),
        });
        *self.running.lock().expect("slot lock") = Some(server.clone());
        (self.events)(HostEvent::WorkerStarted {
            plugin: self.plugin.name().to_owned(),
            worker: pid,
        });
        self.watch(&server);
        Ok((server, Some(listing)))
    }

    /// Sends one request to `server`, in its turn (at most `max_in_flight`
    /// at once). A server that dies meanwhile is taken out and reaped.
    pub(crate) async fn request(
        self: &Arc<Self>,
        server: &Arc<Server>,
        ask: Ask<'_>,
        cancel: impl std::future::Future<Output = ()>,
    ) -> (Result<McpAnswer, Stop>, String) {
        tokio::pin!(cancel);
        let _permit = tokio::select! {
            p = self.permits.clone().acquire_owned() => p.expect("never closed"),
            _ = &mut cancel => return (Err(Stop::Cancelled), String::new()),
        };
        server.in_flight.fetch_add(1, Ordering::Relaxed);
        let died = server.died.clone();
        let (ended, stderr) = server
            .session
            .request(ask, cancel, async move { died.cancelled().await })
            .await;
        *server.idle_since.lock().expect("server lock") = Instant::now();
        let left = server.in_flight.fetch_sub(1, Ordering::Relaxed) - 1;
        match &ended {
            Ok(_) => {
                server.calls.fetch_add(1, Ordering::Relaxed);
                if !server.answered.swap(true, Ordering::Relaxed) {
                    self.backoff.lock().expect("slot lock").succeeded();
                }
            }
            Err(Stop::Died { .. }) => {
                let first = !server.answered.load(Ordering::Relaxed);
                self.take_out(server, WorkerStop::ExitedBeforeAnswering)
                    .await;
                if first {
                    self.start_failed("it exited before answering", &stderr);
                }
            }
            Err(_) => {}
        }
        if left == 0 {
            let retired = self.retired.lock().expect("slot lock").clone();
            if let Some(reason) = retired {
                self.take_out(server, reason).await;
            }
        }
        (ended, stderr)
    }

    /// Takes `server` out of the slot (if it is still the one in it) and ends it.
    async fn take_out(&self, server: &Arc<Server>, reason: WorkerStop) {
        let taken = self
            .running
            .lock()
            .expect("slot lock")
            .take_if(|s| Arc::ptr_eq(s, server));
        if taken.is_some() {
            self.end(server, End::Finish, reason).await;
        }
    }

    /// Ends `server`'s process (`how`), waits for it, and reports it.
    async fn end(&self, server: &Arc<Server>, how: End, reason: WorkerStop) {
        if matches!(how, End::Finish) {
            server.session.close();
        }
        if let Some(tx) = server.stop.lock().expect("server lock").take() {
            let _ = tx.send(how);
        }
        let keeper = server.keeper.lock().expect("server lock").take();
        if let Some(keeper) = keeper {
            let _ = keeper.await;
            (self.events)(HostEvent::WorkerStopped {
                plugin: self.plugin.name().to_owned(),
                worker: server.pid,
                reason,
                calls: server.calls.load(Ordering::Relaxed),
            });
        }
    }

    /// Retires the slot: its server stops now when idle, else after its
    /// requests end.
    fn retire(self: &Arc<Self>, reason: WorkerStop) {
        *self.retired.lock().expect("slot lock") = Some(reason.clone());
        let idle = self
            .running
            .lock()
            .expect("slot lock")
            .take_if(|s| s.in_flight.load(Ordering::Relaxed) == 0);
        if let Some(server) = idle {
            let slot = self.clone();
            self.runtime.spawn(async move {
                slot.end(&server, End::Finish, reason).await;
            });
        }
    }

    /// Kills the server now: its process group is killed, its requests fail.
    fn kill(self: &Arc<Self>, reason: WorkerStop) {
        *self.retired.lock().expect("slot lock") = Some(reason.clone());
        let taken = self.running.lock().expect("slot lock").take();
        if let Some(server) = taken {
            // Now, not when the runtime gets to it: the host may be going away.
            server.kill_now();
            server.died.cancel();
            if let Some(tx) = server.stop.lock().expect("server lock").take() {
                let _ = tx.send(End::Now);
            }
            let slot = self.clone();
            // The keeper ends the group; the report waits for it when a
            // runtime is there (at shutdown the keeper's drop kills it).
            self.runtime.spawn(async move {
                slot.end(&server, End::Now, reason).await;
            });
        }
    }

    /// Counts a server that died before it answered.
    fn start_failed(&self, detail: &str, stderr: &str) {
        let notice =
            self.backoff
                .lock()
                .expect("slot lock")
                .failed(self.plugin.name(), detail, stderr);
        if let Some(notice) = notice {
            (self.events)(HostEvent::Notice(notice));
        }
    }

    /// Stops `server` once it has been idle for the plugin's idle timeout,
    /// and takes it out when its process exits on its own.
    fn watch(self: &Arc<Self>, server: &Arc<Server>) {
        let (slot, weak) = (Arc::downgrade(self), Arc::downgrade(server));
        let timeout = self.idle_timeout;
        let died = server.died.clone();
        tokio::spawn(async move {
            loop {
                let at = {
                    let Some(server) = weak.upgrade() else { return };
                    let since = *server.idle_since.lock().expect("server lock");
                    since + timeout
                };
                tokio::select! {
                    _ = tokio::time::sleep_until(at.into()) => {}
                    _ = died.cancelled() => {
                        if let (Some(slot), Some(server)) = (slot.upgrade(), weak.upgrade()) {
                            slot.take_out(&server, WorkerStop::Misbehaved {
                                why: "it exited between requests".into(),
                            })
                            .await;
                        }
                        return;
                    }
                }
                let (Some(slot), Some(server)) = (slot.upgrade(), weak.upgrade()) else {
                    return;
                };
                let idle = server.in_flight.load(Ordering::Relaxed) == 0
                    && server.idle_since.lock().expect("server lock").elapsed() >= timeout;
                if idle {
                    slot.take_out(
                        &server,
                        WorkerStop::Idle {
                            secs: timeout.as_secs(),
                        },
                    )
                    .await;
                    return;
                }
            }
        });
    }
}

impl Server {
    /// Kills the server's process group at once, from any thread, unless its
    /// keeper is ending it already (see `ending`). The keeper reaps it.
    fn kill_now(&self) {
        let ending = self.ending.lock().unwrap_or_else(|e| e.into_inner());
        if !*ending {
            crate::run::executor::kill_group(self.group_id);
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
