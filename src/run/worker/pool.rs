//! The workers of one plugin version: up to `max_workers` of them, started on
//! demand, calls queued in arrival order beyond that, idle ones stopped after
//! `idle_timeout_secs`, and a worker that keeps dying at start-up retried with
//! backoff instead of in a loop.

use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::bookkeeping::Bookkeeping;
use super::load::WorkerInfo;
use super::process::{Worker, WorkerSpec};
use super::registry::Entry;
use crate::events::WorkerStop;
use crate::protocol::parse_response;
use crate::run::executor::{
    End, Finished, Limits, Progress, RunError, StderrCollector, Stop, describe_exit,
};

/// The workers of one plugin version under one grant.
pub(crate) struct Pool {
    book: Bookkeeping,
    /// One permit per worker; tokio's semaphore queues waiters in arrival order.
    slots: Arc<Semaphore>,
    state: Mutex<State>,
    /// Wakes the idle janitor.
    wake: Arc<Notify>,
}

#[derive(Default)]
struct State {
    idle: Vec<Worker>,
    busy: Vec<(u32, u64)>,
    janitor: bool,
}

/// A turn on one of the pool's workers: taken in arrival order, given back
/// when dropped. Holds an idle worker, or none when one must be started.
pub(crate) struct Lease {
    pool: Arc<Pool>,
    _slot: OwnedSemaphorePermit,
    worker: Option<Worker>,
}

impl Entry for Pool {
    fn new(book: Bookkeeping) -> Pool {
        Pool {
            slots: Arc::new(Semaphore::new(book.settings.max_workers as usize)),
            book,
            state: Mutex::default(),
            wake: Arc::new(Notify::new()),
        }
    }

    fn book(&self) -> &Bookkeeping {
        &self.book
    }

    fn retire(self: &Arc<Self>, reason: WorkerStop) {
        for worker in self.take_idle(&reason) {
            self.stop_later(worker, End::Finish, reason.clone());
        }
        self.wake.notify_one();
    }

    /// Dropping a worker kills its group, synchronously.
    fn kill(self: &Arc<Self>, reason: WorkerStop) {
        for worker in self.take_idle(&reason) {
            let (pid, calls) = (worker.pid(), worker.calls);
            drop(worker);
            self.book.report.stopped(pid, calls, reason.clone());
        }
        self.wake.notify_one();
    }

    async fn stop_idle(self: Arc<Self>, reason: WorkerStop) {
        for worker in self.take_idle(&reason) {
            self.stop(worker, End::Finish, reason.clone()).await;
        }
    }

    fn counts(&self) -> (usize, usize) {
        let state = self.state.lock().expect("pool lock");
        (state.idle.len() + state.busy.len(), state.busy.len())
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

    /// Marks the pool retired and takes the idle workers out, under one lock,
    /// so that no worker checks in idle after.
    fn take_idle(&self, reason: &WorkerStop) -> Vec<Worker> {
        let mut state = self.state.lock().expect("pool lock");
        self.book.retire(reason);
        std::mem::take(&mut state.idle)
    }

    /// Stops `worker` and reports it.
    async fn stop(&self, worker: Worker, how: End, reason: WorkerStop) {
        let (pid, calls) = (worker.pid(), worker.calls);
        worker.stop(how, self.book.kill_grace).await;
        self.book.report.stopped(pid, calls, reason);
    }

    /// [`Pool::stop`] in the background, from any thread.
    fn stop_later(&self, worker: Worker, how: End, reason: WorkerStop) {
        let (report, grace) = (self.book.report.clone(), self.book.kill_grace);
        // If the runtime is gone, the task (and the worker in it) is dropped,
        // and dropping a worker kills its group.
        self.book.runtime.spawn(async move {
            let (pid, calls) = (worker.pid(), worker.calls);
            worker.stop(how, grace).await;
            report.stopped(pid, calls, reason);
        });
    }

    /// Gives a worker back after a good call: idle, or stopped when the pool
    /// was retired meanwhile.
    fn check_in(self: &Arc<Self>, mut worker: Worker) {
        worker.idle_since = Instant::now();
        let mut state = self.state.lock().expect("pool lock");
        state.busy.retain(|(pid, _)| *pid != worker.pid());
        if let Some(reason) = self.book.retired() {
            drop(state);
            self.stop_later(worker, End::Finish, reason);
            return;
        }
        state.idle.push(worker);
        if !state.janitor {
            state.janitor = true;
            self.book
                .runtime
                .spawn(janitor(Arc::downgrade(self), self.wake.clone()));
        }
        drop(state);
        self.wake.notify_one();
    }

    /// No longer counts `pid` as busy.
    fn not_busy(&self, pid: u32) {
        self.state
            .lock()
            .expect("pool lock")
            .busy
            .retain(|(p, _)| *p != pid);
    }

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
            Stop::Timeout => (End::Terminate, WorkerStop::TimedOut),
            Stop::Cancelled => (End::Terminate, WorkerStop::Cancelled),
            Stop::OutputTooLarge => (End::Terminate, WorkerStop::AnswerTooLarge),
            Stop::Died { exited: true, .. } => (End::Now, WorkerStop::ExitedBeforeAnswering),
            Stop::Died { .. } => (End::Terminate, WorkerStop::ClosedStdout),
        };
        let (pid, calls) = (worker.pid(), worker.calls);
        let status = worker.stop(how, limits.kill_grace).await;
        self.book.report.stopped(pid, calls, reason);
        self.not_busy(pid);
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
                    self.book.start_failed(&detail, &stderr);
                }
                RunError::Died {
                    detail,
                    exit_code: status.and_then(|s| s.code()),
                    stderr,
                }
            }
        }
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
        let book = &self.pool.book;
        let starting = book.begin_start()?;
        let started = Worker::start(spec).await;
        drop(starting);
        let worker = match started {
            Ok(w) => w,
            Err(e) => {
                book.start_failed(&format!("it could not start: {e}"), "");
                return Err(RunError::Spawn(e));
            }
        };
        let pid = worker.pid();
        self.pool
            .state
            .lock()
            .expect("pool lock")
            .busy
            .push((pid, 0));
        book.report.started(pid);
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
        pool.book.answered();
        match out_of_step {
            Some(reason) => {
                pool.not_busy(worker.pid());
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
            self.pool.not_busy(worker.pid());
            drop(worker);
        }
    }
}

/// Stops the pool's workers once they have been idle for `idle_timeout_secs`.
/// One task per pool, alive while the pool has idle workers.
async fn janitor(pool: Weak<Pool>, wake: Arc<Notify>) {
    loop {
        let Some(p) = pool.upgrade() else { return };
        let timeout = p.book.idle_timeout();
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
