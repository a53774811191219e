//! HTTP sessions whose calls belong to their client.
//!
//! rmcp's [`LocalSessionManager`] keeps a session's calls running when the
//! connection that carries their answer closes, and until its session is gone
//! (and then for up to 5 s more): a client that is killed, or just closes its
//! connections, leaves its calls holding the host's slots. This wraps it and
//! keeps, per session, which calls are in flight and which streams carry them:
//!
//! - A `tools/call` answers on the SSE stream of its POST. When that stream's
//!   connection closes before the answer, the call goes on for the *resume
//!   window*: the MCP transport rules let a client resume a broken stream with
//!   `GET` and `Last-Event-ID`, so a closed connection is not by itself a
//!   cancellation. A resumed stream carries the call again (rmcp replays what
//!   was missed). If no client resumes it within the window, the call is
//!   cancelled like `notifications/cancelled`: its process tree is killed, and
//!   so is a call still queued for a slot.
//! - Deleting a session (`DELETE`), or its expiry, cancels its calls at once.
//! - A session expires when it has had no call, no open stream and no request
//!   for the idle timeout (rmcp's own keep-alive is off: it counts only
//!   messages, so it would end a session whose one call runs quietly for long).
//! - Each session holds at most its share of the host's call slots, so a flood
//!   from one client waits in its own queue and leaves room for the others.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How sessions treat their calls.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules {
    /// How long a call outlives the connection that carried its answer.
    pub(super) resume_window: Duration,
    /// Call slots one session may hold at once.
    pub(super) slots: usize,
    /// A session without calls, streams or requests for this long ends.
    pub(super) idle: Duration,
    /// Sessions a tenant may hold at once.
    pub(super) max_sessions: usize,
}

/// The session manager handed to rmcp's HTTP service.
pub(super) struct Sessions {
    inner: LocalSessionManager,
    registry: Arc<Registry>,
}

/// What the sessions know of their calls; shared with the tool handler.
pub(super) struct Registry {
    sessions: Mutex<HashMap<SessionId, Session>>,
    rules: Rules,
    log: super::Log,
}

struct Session {
    slots: Arc<Semaphore>,
    calls: HashMap<RequestId, Call>,
    /// Which request an SSE stream (rmcp's HTTP request number) answers.
    streams: HashMap<u64, RequestId>,
    open_streams: usize,
    last_seen: Instant,
}

impl Session {
    /// No call runs and no stream is open. (A call no stream carries and no
    /// handler runs is nothing.)
    fn is_quiet(&self) -> bool {
        let running = self
            .calls
            .values()
            .any(|c| c.attached > 0 || c.cancel.is_some());
        !running && self.open_streams == 0
    }
}

#[derive(Default)]
struct Call {
    /// Open streams that carry this call's answer.
    attached: usize,
    /// Bumped whenever a stream attaches or detaches, so a resume-window
    /// timer knows it is stale.
    generation: u64,
    /// The handler's token, once it runs.
    cancel: Option<CancellationToken>,
    /// Cancelled before its handler bound a token: cancel that at once.
    cancelled: bool,
}

impl Sessions {
    pub(super) fn new(rules: Rules, log: super::Log) -> Arc<Sessions> {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = None;
        let sessions = Arc::new(Sessions {
            inner,
            registry: Arc::new(Registry {
                sessions: Mutex::default(),
                rules,
                log,
            }),
        });
        expire_idle(Arc::downgrade(&sessions), rules.idle);
        sessions
    }

    pub(super) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Makes room for one more session: `Ok` when there is room, after
    /// ending the session idle longest if the tenant was at its limit; `Err`
    /// with the limit when every session has a call or a stream.
    pub(super) async fn make_room(&self) -> Result<(), usize> {
        let limit = self.registry.rules.max_sessions;
        let Some(quiet) = self.registry.quietest_if_full() else {
            return Ok(());
        };
        let Some(id) = quiet else {
            return Err(limit);
        };
        (self.registry.log)(&format!(
            "http: session {id} ended to make room for a new one: {limit} sessions is the limit"
        ));
        self.end(&id).await;
        Ok(())
    }

    /// Ends a session: its calls are cancelled now, then rmcp closes it.
    /// Returns whether it existed.
    pub(super) async fn end(&self, id: &SessionId) -> bool {
        let existed = self.registry.forget(id);
        let _ = self.inner.close_session(id).await;
        existed
    }
}

/// Ends idle sessions, checking every second (or sooner for a short timeout)
/// until the sessions are gone.
fn expire_idle(sessions: Weak<Sessions>, idle: Duration) {
    let every = idle
        .min(Duration::from_secs(1))
        .max(Duration::from_millis(50));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(sessions) = sessions.upgrade() else {
                return;
            };
            for id in sessions.registry.idle() {
                (sessions.registry.log)(&format!(
                    "http: session {id} expired after {} s without a call, a stream or a request",
                    idle.as_secs()
                ));
                sessions.end(&id).await;
            }
        }
    });
}

impl Registry {
    /// The sessions open now.
    #[cfg(feature = "prometheus")]
    pub(super) fn count(&self) -> usize {
        self.sessions.lock().map_or(0, |s| s.len())
    }

    fn with<T>(&self, id: &SessionId, f: impl FnOnce(&mut Session) -> T) -> Option<T> {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        sessions.get_mut(id).map(|s| {
            s.last_seen = Instant::now();
            f(s)
        })
    }

    fn open(&self, id: &SessionId) {
        self.sessions.lock().expect("sessions lock").insert(
            id.clone(),
            Session {
                slots: Arc::new(Semaphore::new(self.rules.slots.max(1))),
                calls: HashMap::new(),
                streams: HashMap::new(),
                open_streams: 0,
                last_seen: Instant::now(),
            },
        );
    }

    /// Removes a session, cancelling its calls. Returns whether it existed.
    fn forget(&self, id: &SessionId) -> bool {
        let Some(session) = self.sessions.lock().expect("sessions lock").remove(id) else {
            return false;
        };
        for call in session.calls.into_values() {
            if let Some(cancel) = call.cancel {
                cancel.cancel();
            }
        }
        true
    }

    /// `None` while there is room for a session; when full, the session
    /// without calls or streams that was seen longest ago, if any.
    fn quietest_if_full(&self) -> Option<Option<SessionId>> {
        let sessions = self.sessions.lock().expect("sessions lock");
        if sessions.len() < self.rules.max_sessions {
            return None;
        }
        Some(
            sessions
                .iter()
                .filter(|(_, s)| s.is_quiet())
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(id, _)| id.clone()),
        )
    }

    fn idle(&self) -> Vec<SessionId> {
        let idle = self.rules.idle;
        self.sessions
            .lock()
            .expect("sessions lock")
            .iter()
            .filter(|(_, s)| s.is_quiet() && s.last_seen.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// A stream opens; it carries the answer to `call` when given.
    fn stream(self: &Arc<Self>, id: &SessionId, call: Option<RequestId>) -> StreamGuard {
        self.with(id, |s| {
            s.open_streams += 1;
            if let Some(call) = &call {
                let c = s.calls.entry(call.clone()).or_default();
                c.attached += 1;
                c.generation += 1;
            }
        });
        StreamGuard {
            registry: self.clone(),
            session: id.clone(),
            call,
        }
    }

    /// The request a stream (by rmcp's number for it) answers.
    fn stream_answers(&self, id: &SessionId, http: u64, call: &RequestId) {
        self.with(id, |s| s.streams.insert(http, call.clone()));
    }

    fn resumed_call(&self, id: &SessionId, last_event_id: &str) -> Option<RequestId> {
        let http = http_request_of(last_event_id)?;
        let mut sessions = self.sessions.lock().expect("sessions lock");
        let s = sessions.get_mut(id)?;
        let call = s.streams.get(&http)?.clone();
        s.calls.contains_key(&call).then_some(call)
    }

    fn stream_closed(self: &Arc<Self>, id: &SessionId, call: Option<&RequestId>) {
        let orphaned = self
            .with(id, |s| {
                s.open_streams = s.open_streams.saturating_sub(1);
                let c = s.calls.get_mut(call?)?;
                c.attached = c.attached.saturating_sub(1);
                c.generation += 1;
                (c.attached == 0).then_some(c.generation)
            })
            .flatten();
        let (Some(generation), Some(call)) = (orphaned, call) else {
            return;
        };
        let window = self.rules.resume_window;
        if window.is_zero() {
            self.abandon(id, call, generation);
            return;
        }
        let (registry, id, call) = (self.clone(), id.clone(), call.clone());
        tokio::spawn(async move {
            tokio::time::sleep(window).await;
            registry.abandon(&id, &call, generation);
        });
    }

    /// Cancels a call whose answer no stream carried for the whole window.
    fn abandon(&self, id: &SessionId, call: &RequestId, generation: u64) {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        let Some(s) = sessions.get_mut(id) else {
            return;
        };
        let Some(c) = s.calls.get_mut(call) else {
            return;
        };
        if c.generation != generation || c.attached > 0 {
            return;
        }
        match c.cancel.take() {
            Some(cancel) => {
                cancel.cancel();
                s.calls.remove(call);
                (self.log)(&format!(
                    "http: session {id}: call {call} cancelled: its client went away and did not resume within {} ms",
                    self.rules.resume_window.as_millis()
                ));
            }
            // Its handler has not started yet: it is cancelled when it does.
            None => c.cancelled = true,
        }
    }

    fn finished(&self, id: &SessionId, call: &RequestId) {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        if let Some(s) = sessions.get_mut(id) {
            if s.calls.get(call).is_some_and(|c| c.cancel.is_none()) {
                s.calls.remove(call);
            }
            s.streams.retain(|_, c| c != call);
        }
    }

    /// Binds a running tool call to `cancel`, which the session cancels when
    /// the call's client is gone. `None` when the session is unknown (then
    /// nothing but the request's own token cancels the call).
    pub(super) fn bind(
        self: &Arc<Self>,
        session: &str,
        call: &RequestId,
        cancel: &CancellationToken,
    ) -> Option<CallTicket> {
        let id: SessionId = session.into();
        let slots = self.with(&id, |s| {
            let c = s.calls.entry(call.clone()).or_default();
            if c.cancelled {
                cancel.cancel();
            }
            c.cancel = Some(cancel.clone());
            s.slots.clone()
        })?;
        Some(CallTicket {
            registry: self.clone(),
            session: id,
            call: call.clone(),
            slots,
        })
    }
}

/// A running tool call in a session; dropping it ends the call's entry.
pub(super) struct CallTicket {
    registry: Arc<Registry>,
    session: SessionId,
    call: RequestId,
    slots: Arc<Semaphore>,
}

impl CallTicket {
    /// The session's slots: held for the call's run.
    pub(super) fn slots(&self) -> &Arc<Semaphore> {
        &self.slots
    }
}

impl Drop for CallTicket {
    fn drop(&mut self) {
        let mut sessions = self.registry.sessions.lock().expect("sessions lock");
        if let Some(s) = sessions.get_mut(&self.session) {
            s.calls.remove(&self.call);
            let call = &self.call;
            s.streams.retain(|_, c| c != call);
        }
    }
}

/// An open stream of a session; its drop is the connection closing.
struct StreamGuard {
    registry: Arc<Registry>,
    session: SessionId,
    call: Option<RequestId>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.registry
            .stream_closed(&self.session, self.call.as_ref());
    }
}

/// rmcp's event ids are `INDEX/HTTP_REQUEST` on a request's stream.
fn http_request_of(event_id: &str) -> Option<u64> {
    event_id.split_once('/')?.1.parse().ok()
}

/// A stream handed to rmcp, watched: its first event id says which HTTP
/// request it answers, its final message ends the call's entry, and its drop
/// (the connection closing) starts the resume window.
struct Watched<S> {
    inner: Pin<Box<S>>,
    guard: StreamGuard,
    /// Until the first event id has been seen.
    learn: bool,
}

impl<S: Stream<Item = ServerSseMessage>> Stream for Watched<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(event)) = &next
            && let Some(call) = self.guard.call.clone()
        {
            let registry = self.guard.registry.clone();
            let session = self.guard.session.clone();
            if self.learn
                && let Some(http) = event.event_id.as_deref().and_then(http_request_of)
            {
                self.learn = false;
                registry.stream_answers(&session, http, &call);
            }
            if let Some(message) = &event.message
                && matches!(
                    message.as_ref(),
                    ServerJsonRpcMessage::Response(r) if r.id == call
                ) | matches!(
                    message.as_ref(),
                    ServerJsonRpcMessage::Error(e) if e.id.as_ref() == Some(&call)
                )
            {
                registry.finished(&session, &call);
            }
        }
        next
    }
}

impl SessionManager for Sessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.registry.open(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.registry.with(id, |_| ());
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.registry.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // Only tool calls run long enough to matter; other requests answer
        // at once.
        let call = match &message {
            ClientJsonRpcMessage::Request(r)
                if matches!(r.request, rmcp::model::ClientRequest::CallToolRequest(_)) =>
            {
                Some(r.id.clone())
            }
            _ => None,
        };
        // Registered before rmcp sees the request, so its handler finds it.
        let guard = self.registry.stream(id, call.clone());
        let stream = self.inner.create_stream(id, message).await?;
        Ok(Watched {
            inner: Box::pin(stream),
            learn: call.is_some(),
            guard,
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.registry.with(id, |_| ());
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(Watched {
            inner: Box::pin(stream),
            learn: false,
            guard: self.registry.stream(id, None),
        })
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let call = self.registry.resumed_call(id, &last_event_id);
        // Attached before the replay, so the window cannot close meanwhile.
        let guard = self.registry.stream(id, call.clone());
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(Watched {
            inner: Box::pin(stream),
            learn: false,
            guard,
        })
    }
}
