//! MCP servers run as plugins: one server process per plugin version,
//! started when a request needs it, shared by every call. Unlike a line
//! worker, which answers one request at a time, a server's connection carries
//! many requests at once (up to the manifest's `persistent.max_in_flight`,
//! 16 by default), each with its own deadline, cancellation and cap
//! (`run::mcp_client`).
//!
//! What a [`Slot`] does for its server is what a pool does for its workers,
//! and the registry and bookkeeping are the same: a server that keeps dying
//! before it answers is started again with backoff; one idle (no request in
//! flight) for `idle_timeout_secs` is stopped (stdin closed, a grace, then
//! the group kill); a changed plugin or grant retires it (stopped once its
//! requests end); a revoke or the host's shutdown kills it at once.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use super::bookkeeping::Bookkeeping;
use super::load::WorkerInfo;
use super::process::WorkerSpec;
use super::registry::Entry;
use super::server::{Server, StartError};
use crate::events::WorkerStop;
use crate::plugins::mcp_listing::Listing;
use crate::run::executor::{End, Stop};
use crate::run::mcp_client::{Ask, Connect, McpAnswer};

/// The server of one plugin version under one grant.
pub(crate) struct Slot {
    book: Bookkeeping,
    permits: Arc<Semaphore>,
    /// Held while a server starts, so that callers wait for one start.
    starting: tokio::sync::Mutex<()>,
    running: Mutex<Option<Arc<Server>>>,
}

impl Entry for Slot {
    fn new(book: Bookkeeping) -> Slot {
        Slot {
            permits: Arc::new(Semaphore::new(book.settings.max_in_flight as usize)),
            book,
            starting: tokio::sync::Mutex::new(()),
            running: Mutex::new(None),
        }
    }

    fn book(&self) -> &Bookkeeping {
        &self.book
    }

    fn retire(self: &Arc<Self>, reason: WorkerStop) {
        if let Some(server) = self.take_idle(&reason) {
            let slot = self.clone();
            self.book.runtime.spawn(async move {
                slot.end(&server, End::Finish, reason).await;
            });
        }
    }

    fn kill(self: &Arc<Self>, reason: WorkerStop) {
        self.book.retire(&reason);
        let taken = self.running.lock().expect("slot lock").take();
        if let Some(server) = taken {
            // Now, not when the runtime gets to it: the host may be going away.
            server.kill_now();
            let slot = self.clone();
            // The keeper ends the group; the report waits for it when a
            // runtime is there (at shutdown the keeper's drop kills it).
            self.book.runtime.spawn(async move {
                slot.end(&server, End::Now, reason).await;
            });
        }
    }

    async fn stop_idle(self: Arc<Self>, reason: WorkerStop) {
        if let Some(server) = self.take_idle(&reason) {
            self.end(&server, End::Finish, reason).await;
        }
    }

    fn counts(&self) -> (usize, usize) {
        let server = self.server();
        let busy = server.as_ref().is_some_and(|s| !s.is_idle());
        (usize::from(server.is_some()), usize::from(busy))
    }

    fn running(&self) -> Vec<WorkerInfo> {
        let server = self.running.lock().expect("slot lock").clone();
        server.map(|s| s.info()).into_iter().collect()
    }
}

impl Slot {
    /// Its running server, if it has one that is alive and not retired.
    pub(crate) fn server(&self) -> Option<Arc<Server>> {
        if self.book.retired().is_some() {
            return None;
        }
        let running = self.running.lock().expect("slot lock");
        running.as_ref().filter(|s| s.is_alive()).cloned()
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
        let _starting = self.book.begin_start().map_err(StartError::Backoff)?;
        let (server, listing) = match Server::launch(spec, connect, self.book.kill_grace).await {
            Ok(launched) => launched,
            Err(e) => {
                match &e {
                    StartError::Spawn(io) => {
                        self.book
                            .start_failed(&format!("it could not start: {io}"), "");
                    }
                    // Started again at once, with the older handshake.
                    StartError::Connect {
                        ended_on_probe: true,
                        ..
                    } => {}
                    StartError::Connect { detail, stderr, .. } => {
                        self.book.start_failed(detail, stderr);
                    }
                    StartError::Backoff(_) => {}
                }
                return Err(e);
            }
        };
        let server = Arc::new(server);
        *self.running.lock().expect("slot lock") = Some(server.clone());
        self.book.report.started(server.pid());
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
        *server.idle_since.lock().expect("server lock") = std::time::Instant::now();
        let left = server.in_flight.fetch_sub(1, Ordering::Relaxed) - 1;
        match &ended {
            Ok(_) => {
                server.calls.fetch_add(1, Ordering::Relaxed);
                if !server.answered.swap(true, Ordering::Relaxed) {
                    self.book.answered();
                }
            }
            Err(Stop::Died { .. }) => {
                let first = !server.answered.load(Ordering::Relaxed);
                self.take_out(server, WorkerStop::ExitedBeforeAnswering)
                    .await;
                if first {
                    self.book
                        .start_failed("it exited before answering", &stderr);
                }
            }
            Err(_) => {}
        }
        if left == 0
            && let Some(reason) = self.book.retired()
        {
            self.take_out(server, reason).await;
        }
        (ended, stderr)
    }

    /// Marks the slot retired and takes its server out if no request is in
    /// flight (a busy one is stopped after its last request).
    fn take_idle(&self, reason: &WorkerStop) -> Option<Arc<Server>> {
        self.book.retire(reason);
        let mut running = self.running.lock().expect("slot lock");
        running.take_if(|s| s.is_idle())
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
    async fn end(&self, server: &Server, how: End, reason: WorkerStop) {
        if server.end(how).await {
            self.book
                .report
                .stopped(server.pid(), server.calls(), reason);
        }
    }

    /// Stops `server` once it has been idle for the plugin's idle timeout,
    /// and takes it out when its process exits on its own.
    fn watch(self: &Arc<Self>, server: &Arc<Server>) {
        let (slot, weak) = (Arc::downgrade(self), Arc::downgrade(server));
        let timeout = self.book.idle_timeout();
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
                if server.is_idle() && server.idle_for() >= timeout {
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
