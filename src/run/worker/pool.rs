//! The workers of one plugin version: up to `max_workers` of them, started on
//! demand, calls queued in arrival order beyond that, idle ones stopped after
//! `idle_timeout_secs`, and a worker that keeps dying at start-up retried with
//! backoff instead of in a loop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::backoff::Backoff;
use super::load::WorkerLoad;
use super::process::{Worker, WorkerSpec};
use crate::events::{EventSink, HostEvent, WorkerStop};
use crate::plugins::catalog::Plugin;
use crate::plugins::manifest::Persistent;
use crate::protocol::parse_response;
use crate::run::executor::{
    End, Finished, Limits, Progress, RunError, StderrCollector, Stop, describe_exit,
};

/// The pools of a host, one per persistent plugin, and its MCP servers.
pub(crate) struct Workers {
    pools: Mutex<HashMap<String, Arc<Pool>>>,
    events: EventSink,
    /// MCP servers run as plugins: shared by every call (`servers.rs`).
    pub(crate) servers: super::servers::Servers,
}

/// A running worker, for listings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerInfo {
    /// The worker's process id.
    pub pid: u32,
    /// How many calls it has answered.
    pub calls: u64,
    /// Seconds since it last answered; `None` while it is busy.
    pub idle_secs: Option<u64>,
}

impl Workers {
    pub(crate) fn new(events: EventSink) -> Workers {
        Workers {
            pools: Mutex::default(),
            servers: super::servers::Servers::new(events.clone()),
            events,
        }
    }

    /// The pool serving exactly this plugin version and grant. A pool of an
    /// older version, or started under another grant, is retired: its idle
    /// workers stop now, busy ones after their call.
    pub(crate) fn pool(
        &self,
        plugin: &Arc<Plugin>,
        grant: &str,
        kill_grace: Duration,
    ) -> Arc<Pool> {
        let mut pools = self.pools.lock().expect("pools lock");
        if let Some(pool) = pools.get(plugin.name()) {
            let same_load = pool.plugin.generation == plugin.generation;
            if same_load && pool.grant == grant {
                return pool.clone();
            }
            pool.retire(if same_load {
                WorkerStop::ApprovalChanged
            } else {
                WorkerStop::PluginChanged
            });
        }
        let settings = plugin.manifest.worker_settings().unwrap_or_default();
        let pool = Arc::new(Pool {
            plugin: plugin.clone(),
            grant: grant.to_owned(),
            settings,
            kill_grace,
            slots: Arc::new(Semaphore::new(settings.max_workers as usize)),
            state: Mutex::default(),
            starting: Default::default(),
            wake: Arc::new(Notify::new()),
            events: self.events.clone(),
            runtime: tokio::runtime::Handle::current(),
        });
        pools.insert(plugin.name().to_owned(), pool.clone());
        pool
    }

    /// Retires the pool of `plugin` (removed or changed): its idle workers
    /// are told to finish (stdin closed, a grace, then the group kill) in the
    /// background, busy ones after their call.
    pub(crate) fn retire(&self, plugin: &str, reason: WorkerStop) {
        self.servers.retire(plugin, reason.clone());
        if let Some(pool) = self.pools.lock().expect("pools lock").remove(plugin) {
            pool.retire(reason);
        }
    }

    /// Retires the pool of `plugin` and kills its idle workers' process
    /// groups before returning: for a revoked approval, which must not wait.
    pub(crate) fn kill(&self, plugin: &str, reason: WorkerStop) {
        self.servers.kill(plugin, reason.clone());
        if let Some(pool) = self.pools.lock().expect("pools lock").remove(plugin) {
            pool.kill_idle(reason);
        }
    }

    /// Retires every pool and kills every idle worker before returning (host
    /// shutdown, which may happen with no runtime left to wait on).
    pub(crate) fn kill_all(&self, reason: WorkerStop) {
        self.servers.kill_all(reason.clone());
        let pools: Vec<Arc<Pool>> = self
            .pools
            .lock()
            .expect("pools lock")
            .drain()
            .map(|(_, p)| p)
            .collect();
        for pool in pools {
            pool.kill_idle(reason.clone());
        }
    }

    /// Stops every idle worker and waits until they are gone; busy ones stop
    /// after their call.
    pub(crate) async fn stop_all(&self, reason: WorkerStop) {
        self.servers.stop_all(reason.clone()).await;
        let pools: Vec<Arc<Pool>> = self
            .pools
            .lock()
            .expect("pools lock")
            .drain()
            .map(|(_, p)| p)
            .collect();
        for pool in pools {
            let idle = pool.take_idle(Some(&reason));
            for worker in idle {
                pool.stop(worker, End::Finish, reason.clone()).await;
            }
        }
    }

    /// Each pool's plugin, its load (generation) and the grant key its
    /// workers were started under.
    pub(crate) fn pools(&self) -> Vec<(String, u64, String)> {
        let mut all: Vec<_> = self
            .pools
            .lock()
            .expect("pools lock")
            .iter()
            .map(|(name, pool)| (name.clone(), pool.plugin.generation, pool.grant.clone()))
            .collect();
        all.extend(self.servers.slots());
        all
    }

    /// Each plugin's workers as they are now: running, busy, starting,
    /// backing off.
    pub(crate) fn loads(&self) -> Vec<WorkerLoad> {
        let mut loads: Vec<WorkerLoad> = self
            .pools
            .lock()
            .expect("pools lock")
            .values()
            .map(|pool| pool.load())
            .collect();
        loads.extend(self.servers.loads());
        loads
    }

    /// The running workers of each plugin.
    pub(crate) fn running(&self) -> HashMap<String, Vec<WorkerInfo>> {
        let pools = self.pools.lock().expect("pools lock");
        let mut running: HashMap<_, _> = pools
            .iter()
            .map(|(name, pool)| (name.clone(), pool.running()))
            .filter(|(_, w)| !w.is_empty())
            .collect();
        running.extend(self.servers.running());
        running
    }
}

/// The workers of one plugin version.
pub(crate) struct Pool {
    plugin: Arc<Plugin>,
    /// The grant the workers were started under (their sandbox depends on it).
    grant: String,
    settings: Persistent,
    kill_grace: Duration,
    /// One permit per worker; tokio's semaphore queues waiters in arrival order.
    slots: Arc<Semaphore>,
    state: Mutex<State>,
    /// Workers being started now.
    starting: super::load::Starting,
    /// Wakes the idle janitor.
    wake: Arc<Notify>,
    events: EventSink,
    /// Where background stops run (a reload may come from the watcher thread).
    runtime: tokio::runtime::Handle,
}

#[derive(Default)]
struct State {
    idle: Vec<Worker>,
    busy: Vec<(u32, u64)>,
    backoff: Backoff,
    retired: Option<WorkerStop>,
    janitor: bool,
}

/// A turn on one of the pool's workers: taken in arrival order, given back
/// when dropped. Holds an idle worker, or none when one must be started.
pub(crate) struct Lease {
    pool: Arc<Pool>,
    _slot: OwnedSemaphorePermit,
    worker: Option<Worker>,
}

impl Pool {
    /// Waits for a turn (in arrival order) and hands out an idle worker that is
    /// ready, if there is one. Workers found dead or out of step are stopped.
    pub(crate) async fn lease(self: &Arc<Self>) -> Lease {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        let mut lease = Lease {
            pool: self.clone(),
            _slot: slot,
            worker: None,
        };
        loop {
            let Some(mut worker) = self.state.lock().expect("pool lock").idle.pop() else {
                break;
            };
            match worker.check_ready() {
                Ok(()) => {
                    lease.worker = Some(worker);
                    break;
                }
                Err(why) => {
                    self.stop(worker, End::Terminate, WorkerStop::Misbehaved { why })
                        .await
                }
            }
        }
        if let Some(w) = &lease.worker {
            self.state
                .lock()
                .expect("pool lock")
                .busy
                .push((w.pid(), w.calls));
        }
        lease
    }

    fn retire(&self, reason: WorkerStop) {
        for worker in self.take_idle(Some(&reason)) {
            self.stop_later(worker, End::Finish, reason.clone());
        }
        self.wake.notify_one();
    }

    /// Retires the pool and kills the idle workers' groups synchronously
    /// (dropping a worker kills its group).
    fn kill_idle(&self, reason: WorkerStop) {
        for worker in self.take_idle(Some(&reason)) {
            let (pid, calls) = (worker.pid(), worker.calls);
            drop(worker);
            (self.events)(HostEvent::WorkerStopped {
                plugin: self.plugin.name().to_owned(),
                worker: pid,
                reason: reason.clone(),
                calls,
            });
        }
        self.wake.notify_one();
    }

    /// Takes the idle workers out; with a reason, marks the pool retired.
    fn take_idle(&self, retire: Option<&WorkerStop>) -> Vec<Worker> {
        let mut state = self.state.lock().expect("pool lock");
        if let Some(reason) = retire {
            state.retired = Some(reason.clone());
        }
        std::mem::take(&mut state.idle)
    }
    fn load(&self) -> WorkerLoad {
        let state = self.state.lock().expect("pool lock");
        WorkerLoad {
            plugin: self.plugin.name().to_owned(),
            running: state.idle.len() + state.busy.len(),
            busy: state.busy.len(),
            starting: self.starting.count(),
            backing_off: state.backoff.waiting(),
        }
    }

    fn running(&self) -> Vec<WorkerInfo> {
        let state = self.state.lock().expect("pool lock");
        let now = Instant::now();
        state
            .idle
            .iter()
            .map(|w| WorkerInfo {
                pid: w.pid(),
                calls: w.calls,
                idle_secs: Some(now.duration_since(w.idle_since).as_secs()),
            })
            .chain(state.busy.iter().map(|&(pid, calls)| WorkerInfo {
                pid,
                calls,
                idle_secs: None,
            }))
            .collect()
    }

    /// Stops `worker` and reports it.
    async fn stop(&self, worker: Worker, how: End, reason: WorkerStop) {
        let (pid, calls) = (worker.pid(), worker.calls);
        worker.stop(how, self.kill_grace).await;
        (self.events)(HostEvent::WorkerStopped {
            plugin: self.plugin.name().to_owned(),
            worker: pid,
            reason,
            calls,
        });
    }

    /// [`Pool::stop`] in the background, from any thread.
    fn stop_later(&self, worker: Worker, how: End, reason: WorkerStop) {
        let plugin = self.plugin.name().to_owned();
        let (events, grace) = (self.events.clone(), self.kill_grace);
        // If the runtime is gone, the task (and the worker in it) is dropped,
        // and dropping a worker kills its group.
        self.runtime.spawn(async move {
            let (pid, calls) = (worker.pid(), worker.calls);
            worker.stop(how, grace).await;
            events(HostEvent::WorkerStopped {
                plugin,
                worker: pid,
                reason,
                calls,
            });
        });
    }

    /// Gives a worker back after a good call: idle, or stopped when the pool
    /// was retired meanwhile.
    fn check_in(self: &Arc<Self>, mut worker: Worker) {
        worker.idle_since = Instant::now();
        let mut state = self.state.lock().expect("pool lock");
        state.busy.retain(|(pid, _)| *pid != worker.pid());
        if let Some(reason) = state.retired.clone() {
            drop(state);
            self.stop_later(worker, End::Finish, reason);
            return;
        }
        state.idle.push(worker);
        if !state.janitor {
            state.janitor = true;
            self.runtime
                .spawn(janitor(Arc::downgrade(self), self.wake.clone()));
        }
        drop(state);
        self.wake.notify_one();
    }

    /// Counts a worker that died before its first answer, and reports a
    /// streak of them once.
    fn start_failed(&self, detail: &str, stderr: &str) {
        let notice = self.state.lock().expect("pool lock").backoff.failed(
            self.plugin.name(),
            detail,
            stderr,
        );
        if let Some(notice) = notice {
            (self.events)(HostEvent::Notice(notice));
        }
    }

    fn backoff(&self) -> Result<(), RunError> {
        self.state.lock().expect("pool lock").backoff.check()
    }
}

impl Pool {
    /// A call that ended without an answer: its worker is stopped (its whole
    /// process group), and the stop is turned into the call's error. A worker
    /// that died before its first answer counts towards the backoff.
    async fn failed(
        &self,
        worker: Worker,
        stop: Stop,
        stderr: String,
        limits: &Limits,
    ) -> RunError {
        let first = worker.calls == 0;
        let (how, reason) = match &stop {
            // An MCP server was sent notifications/cancelled: it may wind down.
            Stop::Timeout => (End::Terminate, WorkerStop::TimedOut),
            Stop::Cancelled => (End::Terminate, WorkerStop::Cancelled),
            Stop::OutputTooLarge => (End::Terminate, WorkerStop::AnswerTooLarge),
            Stop::Died { exited: true, .. } => (End::Now, WorkerStop::ExitedBeforeAnswering),
            Stop::Died { .. } => (End::Terminate, WorkerStop::ClosedStdout),
        };
        let (pid, calls) = (worker.pid(), worker.calls);
        let status = worker.stop(how, limits.kill_grace).await;
        (self.events)(HostEvent::WorkerStopped {
            plugin: self.plugin.name().to_owned(),
            worker: pid,
            reason,
            calls,
        });
        self.state
            .lock()
            .expect("pool lock")
            .busy
            .retain(|(p, _)| *p != pid);
        match stop {
            Stop::Timeout => RunError::Timeout { stderr },
            Stop::Cancelled => RunError::Cancelled,
            Stop::OutputTooLarge => RunError::OutputTooLarge,
            Stop::Died { stdout, exited } => {
                let mut detail = match (exited, status) {
                    (true, Some(status)) => {
                        format!("the worker {} before answering", describe_exit(status))
                    }
                    _ => "the worker closed its stdout before answering".to_owned(),
                };
                if !stdout.is_empty() {
                    let head = String::from_utf8_lossy(&stdout[..stdout.len().min(200)]);
                    detail.push_str(&format!(" (it wrote {head:?} without a newline)"));
                }
                if first {
                    self.start_failed(&detail, &stderr);
                }
                RunError::Died {
                    detail,
                    exit_code: status.and_then(|s| s.code()),
                    stderr,
                }
            }
        }
    }

    /// Registers a just-started worker and reports it.
    fn started(&self, worker: &Worker) {
        let pid = worker.pid();
        self.state.lock().expect("pool lock").busy.push((pid, 0));
        (self.events)(HostEvent::WorkerStarted {
            plugin: self.plugin.name().to_owned(),
            worker: pid,
        });
    }
}

impl Lease {
    /// Whether the lease came with a running worker.
    pub(crate) fn has_worker(&self) -> bool {
        self.worker.is_some()
    }

    /// Starts a worker for this lease, unless the plugin's workers keep dying
    /// at start-up and the backoff has not passed.
    pub(crate) async fn start(&mut self, spec: WorkerSpec) -> Result<(), RunError> {
        self.pool.backoff()?;
        let starting = self.pool.starting.enter();
        let started = Worker::start(spec).await;
        drop(starting);
        let worker = match started {
            Ok(w) => w,
            Err(e) => {
                self.pool
                    .start_failed(&format!("it could not start: {e}"), "");
                return Err(RunError::Spawn(e));
            }
        };
        self.pool.started(&worker);
        self.worker = Some(worker);
        Ok(())
    }

    /// The pid of the worker of this lease.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.worker.as_ref().map(Worker::pid)
    }

    /// Sends one request line and takes the answer. A worker that answered in
    /// step goes back to the pool; any other outcome stops it (its whole
    /// process group), so the next call gets a fresh one.
    pub(crate) async fn call(
        mut self,
        line: &[u8],
        limits: &Limits,
        cancel: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> Result<Finished, RunError> {
        let started = Instant::now();
        let mut worker = self.worker.take().expect("a lease calls with a worker");
        let mut err = StderrCollector::new(limits.max_stderr);
        let result = worker
            .call(line, limits, cancel, &mut err, on_progress)
            .await;
        let pool = self.pool.clone();
        let answer = match result {
            Ok(answer) => answer,
            Err(stop) => return Err(pool.failed(worker, stop, err.render(), limits).await),
        };
        let mut stdout = answer.stdout;
        let parsed = parse_response(&stdout);
        let out_of_step = if !answer.extra.is_empty() {
            // Shown to the caller as what it is: more than one response.
            stdout.push(b'\n');
            stdout.extend_from_slice(&answer.extra);
            Some("it answered one request with more than one line")
        } else if parsed.is_err() {
            Some("its answer was not a response object")
        } else if answer.unread_input {
            Some("it answered before reading the whole request")
        } else {
            None
        };
        let parsed = if answer.extra.is_empty() {
            Some(parsed)
        } else {
            None
        };
        let pid = worker.pid();
        {
            pool.state.lock().expect("pool lock").backoff.succeeded();
        }
        match out_of_step {
            Some(reason) => {
                pool.state
                    .lock()
                    .expect("pool lock")
                    .busy
                    .retain(|(p, _)| *p != pid);
                pool.stop(
                    worker,
                    End::Terminate,
                    WorkerStop::Misbehaved {
                        why: reason.to_owned(),
                    },
                )
                .await;
            }
            None => pool.check_in(worker),
        }
        Ok(Finished {
            stdout,
            stderr: err.render(),
            status: None,
            duration: started.elapsed(),
            parsed,
            mcp: None,
        })
    }
}

impl Drop for Lease {
    /// A lease dropped with its worker (the call future was dropped midway):
    /// the worker may be mid-request, so it is not reused; dropping it kills
    /// its process group.
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            let pid = worker.pid();
            self.pool
                .state
                .lock()
                .expect("pool lock")
                .busy
                .retain(|(p, _)| *p != pid);
            drop(worker);
        }
    }
}

/// Stops the pool's workers once they have been idle for `idle_timeout_secs`.
/// One task per pool, alive while the pool has idle workers.
async fn janitor(pool: Weak<Pool>, wake: Arc<Notify>) {
    loop {
        let Some(p) = pool.upgrade() else { return };
        let timeout = Duration::from_secs(p.settings.idle_timeout_secs);
        let now = Instant::now();
        let expired: Vec<Worker> = {
            let mut state = p.state.lock().expect("pool lock");
            let (old, fresh): (Vec<Worker>, Vec<Worker>) = std::mem::take(&mut state.idle)
                .into_iter()
                .partition(|w| now.duration_since(w.idle_since) >= timeout);
            state.idle = fresh;
            if state.idle.is_empty() && old.is_empty() {
                state.janitor = false;
                return;
            }
            old
        };
        for worker in expired {
            p.stop(
                worker,
                End::Finish,
                WorkerStop::Idle {
                    secs: timeout.as_secs(),
                },
            )
            .await;
        }
        let next = {
            let state = p.state.lock().expect("pool lock");
            state.idle.iter().map(|w| w.idle_since + timeout).min()
        };
        drop(p);
        match next {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at.into()) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
