//! `input_required` rounds (MCP 2026-07-28, SEP-2322) for a request whose
//! MCP server plugin asks the client something while it runs.
//!
//! A 2025-11-25 server asks with a request of its own (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) and waits for the answer; a
//! 2026-07-28 client cannot be sent one, it is answered with an
//! `input_required` result and retries with its answers. plughost joins the
//! two: the call runs in a task of its own with a [`RoundClient`] as its
//! client, and
//!
//! - the server's requests (those that arrive within [`GATHER`] of the
//!   first, together) become the result's `inputRequests`, keyed by the key
//!   the server names in the request's `_meta["plughost/inputKey"]`, else
//!   by `elicitation-1`, `sampling-1`, `roots-1`…;
//! - the call waits, and `requestState` names it: an id, sealed with an
//!   HMAC (rmcp's `RequestStateCodec`) bound to the method and its params,
//!   so a state that was changed, or sent with another request, is refused;
//! - the retry's `inputResponses` go to the waiting requests, and the call
//!   goes on to its end or to the next round (with a new state);
//! - answers the client sends before it was asked (a retry without state)
//!   are used when the server asks for their key;
//! - a request for a capability the client did not declare is never sent:
//!   the server gets an error (`-32601`) and may do without it; if the call
//!   then fails, the client gets `-32021` naming the capability.
//!
//! Where a round lives depends on the server's revision:
//!
//! - A 2026-07-28 server's round is its own `input_required` result, whose
//!   questions come here each with the server's `requestState` (see
//!   `client::SERVER_STATE`). The round's state is then that state, sealed;
//!   the call ends, and a retry, on any process whose key opens the state
//!   (a fleet's replicas given one `--request-state-key`), starts the call
//!   again with it: the server asks again what it still needs, and the
//!   retry's answers answer it.
//! - A 2025-11-25 server's call waits, mid-run, in the process that started
//!   it, for [`KEEP`]. A retry that reaches another process, or comes later,
//!   is refused with an error that says to call again without
//!   `requestState`: running the tool again on its own could repeat what it
//!   already did, so plughost does not.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ErrorCode, GetPromptResult, InputRequest, InputRequiredResult, InputResponses,
    ReadResourceResult, RequestStateCodec, SealOptions, ServerResult,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::client::{BoxFuture, CallClient, ClientCapabilities, ClientRequestError};

/// How long after a server's first request its other requests of the same
/// round may come: requests a server sends together are asked together.
pub(super) const GATHER: Duration = Duration::from_millis(50);

/// How long a call waits for the client's answers before it is cancelled.
pub(super) const KEEP: Duration = Duration::from_secs(600);

/// The `_meta` key a server names its request's key with.
pub(super) const INPUT_KEY: &str = "plughost/inputKey";

/// The calls of this process that wait for a client's answers.
pub(super) struct Rounds {
    /// Seals the rounds of 2026-07-28 servers: a key of this process's
    /// own, or one a fleet's replicas share.
    codec: Option<RequestStateCodec>,
    /// Seals the calls waiting in this process: always a random key of its
    /// own, so that a waiting call's number never opens in another process
    /// (where the same number names another call).
    own: Option<RequestStateCodec>,
    waiting: Mutex<HashMap<u64, Waiting>>,
    next: AtomicU64,
}

/// A call's task: cancelled when dropped (a call nobody will come back
/// for, or whose client cancelled), so it ends like a cancelled call and
/// gives back its slot.
struct Call {
    task: JoinHandle<Result<ServerResult, McpError>>,
    cancel: CancellationToken,
}

impl Drop for Call {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A call whose server waits for the client.
struct Waiting {
    call: Call,
    asks: mpsc::UnboundedReceiver<Ask>,
    /// Asked in the last round, not answered yet.
    open: Vec<Ask>,
    refused: Arc<Mutex<BTreeSet<&'static str>>>,
    since: Instant,
}

/// One request of the server, waiting for its answer.
pub(super) struct Ask {
    key: String,
    method: String,
    params: Value,
    /// For a 2026-07-28 server's round, the server's `requestState` of
    /// that round, if it sent one.
    server_state: Option<Option<String>>,
    answer: oneshot::Sender<Result<Value, ClientRequestError>>,
}

/// What a request of a 2026-07-28 client ends with.
enum Round {
    /// The call ended.
    Done(Box<ServerResult>),
    /// The call waits for the client's answers.
    Input(InputRequiredResult),
}

impl Rounds {
    /// Rounds sealed with a random key of this process's own. Without a
    /// random source there is no key, and a request that would need a round
    /// is refused (a guessable key would let a client forge a state).
    pub(super) fn new() -> Rounds {
        Rounds::with_codec(random_codec())
    }

    /// Rounds whose 2026-07-28 servers' rounds are sealed with a key
    /// derived from `secret` and `scope` (a tenant's name): processes given
    /// the same secret (a fleet's replicas) open each other's, and so
    /// continue each other's rounds; another scope's do not open. Calls
    /// waiting in this process are still sealed with a key of its own.
    pub(super) fn keyed(secret: &[u8], scope: &str) -> Rounds {
        use sha2::Digest;
        let key = sha2::Sha256::new()
            .chain_update(b"plughost requestState\0")
            .chain_update(scope.as_bytes())
            .chain_update(b"\0")
            .chain_update(secret)
            .finalize()
            .to_vec();
        Rounds::with_codec(RequestStateCodec::try_new(key).ok())
    }

    fn with_codec(codec: Option<RequestStateCodec>) -> Rounds {
        Rounds {
            codec,
            own: random_codec(),
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        }
    }

    fn codec(&self) -> Result<&RequestStateCodec, McpError> {
        no_key(self.codec.as_ref())
    }

    fn own(&self) -> Result<&RequestStateCodec, McpError> {
        no_key(self.own.as_ref())
    }

    /// [`Self::run`] for a request whose result is `kind`'s: the result, or
    /// the round that asks the client for more.
    pub(super) async fn run_typed<T, F>(
        &self,
        request: Request,
        kind: Kind<T>,
        start: impl FnOnce(Arc<dyn CallClient>, CancellationToken) -> F + Send,
    ) -> Result<Result<T, InputRequiredResult>, McpError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, McpError>> + Send + 'static,
    {
        let into = kind.into;
        let round = self
            .run(request, move |client, cancel| {
                let call = start(client, cancel);
                async move { call.await.map(into) }
            })
            .await?;
        match round {
            Round::Input(input) => Ok(Err(input)),
            Round::Done(done) => (kind.from)(*done).map(Ok).ok_or_else(|| {
                McpError::internal_error("a request ended with another result", None)
            }),
        }
    }

    /// Runs a request of a 2026-07-28 client to its end or its next round:
    /// a new call started by `start` with the client it gets, or, with a
    /// state, the waiting call it names, given the request's responses. A
    /// state is accepted only with the binding it was sealed with.
    async fn run<F>(
        &self,
        request: Request,
        start: impl FnOnce(Arc<dyn CallClient>, CancellationToken) -> F,
    ) -> Result<Round, McpError>
    where
        F: Future<Output = Result<ServerResult, McpError>> + Send + 'static,
    {
        let Request {
            binding,
            capabilities,
            state,
            responses,
            cancelled,
        } = request;
        let binding = binding.as_str();
        let responses = responses.unwrap_or_default();
        if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
            return Err(McpError::invalid_params(
                format!("inputResponses.{key} is not a result object"),
                None,
            ));
        }
        let (waiting, resumes) = match state.as_deref() {
            None => (None, None),
            Some(state) => match self.open(binding, state)? {
                Sealed::Waiting(id) => (Some(self.waiting_call(id)?), None),
                Sealed::Server(state) => (None, Some(state)),
            },
        };
        let waiting = match waiting {
            Some(waiting) => waiting,
            None => {
                let (tx, asks) = mpsc::unbounded_channel();
                let refused = Arc::new(Mutex::new(BTreeSet::new()));
                let client = Arc::new(RoundClient {
                    capabilities,
                    session: format!("round-{}", self.next.fetch_add(1, Ordering::Relaxed)),
                    asks: tx,
                    refused: refused.clone(),
                    made_up: AtomicU32::new(0),
                    resumes: Mutex::new(resumes),
                });
                let cancel = CancellationToken::new();
                Waiting {
                    call: Call {
                        task: tokio::spawn(start(client, cancel.clone())),
                        cancel,
                    },
                    asks,
                    open: Vec::new(),
                    refused,
                    since: Instant::now(),
                }
            }
        };
        tokio::select! {
            round = self.drive(binding, waiting, responses) => round,
            // The client cancelled, or went away: the call is dropped with
            // the driving future, which cancels it.
            () = cancelled.cancelled() => Err(McpError::internal_error(
                "the client cancelled the request",
                None,
            )),
        }
    }

    /// What `state` holds, once it opens with `binding`: a waiting call
    /// only under this process's own key, a server's round only under the
    /// rounds' key.
    fn open(&self, binding: &str, state: &str) -> Result<Sealed, McpError> {
        let under = |codec: &RequestStateCodec| {
            codec
                .open_with(state, binding.as_bytes())
                .ok()
                .and_then(|bytes| Sealed::from_bytes(&bytes))
        };
        let waiting = under(self.own()?).filter(|s| matches!(s, Sealed::Waiting(_)));
        let server = || under(self.codec().ok()?).filter(|s| matches!(s, Sealed::Server(_)));
        waiting.or_else(server).ok_or_else(|| {
            McpError::invalid_params(
                "requestState is not one plughost issued for this request: it was changed or expired, belongs to another request, continues a call that waits in another plughost process (a 2025-11-25 server's, which cannot move), or comes from one with another --request-state-key; call again without requestState",
                None,
            )
        })
    }

    /// The waiting call `id` names, taken out of the waiting room.
    fn waiting_call(&self, id: u64) -> Result<Waiting, McpError> {
        self.lock().remove(&id).ok_or_else(|| {
            McpError::invalid_params(
                "the call this requestState continues is no longer waiting (it was answered already, or waited longer than 10 minutes); call again without requestState",
                None,
            )
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answers what `responses` answer, then waits for the call's end or
    /// its next round.
    async fn drive(
        &self,
        binding: &str,
        mut waiting: Waiting,
        mut responses: InputResponses,
    ) -> Result<Round, McpError> {
        for ask in std::mem::take(&mut waiting.open) {
            match responses.remove(&ask.key) {
                Some(answer) => drop(ask.answer.send(Ok(answer))),
                None => waiting.open.push(ask),
            }
        }
        // Closed when the call's client is gone (the call is ending).
        let mut asking = true;
        let mut gathered: Option<tokio::time::Instant> =
            (!waiting.open.is_empty()).then(|| tokio::time::Instant::now() + GATHER);
        loop {
            let until = gathered.unwrap_or_else(|| tokio::time::Instant::now() + KEEP);
            tokio::select! {
                ended = &mut waiting.call.task => {
                    for ask in waiting.open.drain(..) {
                        drop(ask.answer.send(Err(ClientRequestError::new(
                            ErrorCode::INTERNAL_ERROR.0,
                            "plughost: the call ended before the client answered",
                        ))));
                    }
                    let refused = waiting.refused.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    return finish(ended, &refused).map(|r| Round::Done(Box::new(r)));
                }
                ask = waiting.asks.recv(), if asking => {
                    let Some(mut ask) = ask else {
                        asking = false;
                        continue;
                    };
                    if let Some(answer) = responses.remove(&ask.key) {
                        drop(ask.answer.send(Ok(answer)));
                        continue;
                    }
                    while waiting.open.iter().any(|o| o.key == ask.key) {
                        ask.key.push('+');
                    }
                    waiting.open.push(ask);
                    gathered.get_or_insert_with(|| tokio::time::Instant::now() + GATHER);
                }
                () = tokio::time::sleep_until(until), if gathered.is_some() => break,
            }
        }
        let mut requests = BTreeMap::new();
        for ask in std::mem::take(&mut waiting.open) {
            let request = json!({"method": ask.method, "params": ask.params});
            match serde_json::from_value::<InputRequest>(request) {
                Ok(request) => {
                    requests.insert(ask.key.clone(), request);
                    waiting.open.push(ask);
                }
                Err(e) => drop(ask.answer.send(Err(ClientRequestError::new(
                    ErrorCode::INVALID_PARAMS.0,
                    format!("plughost cannot pass this {} on: {e}", ask.method),
                )))),
            }
        }
        let seal = |codec: &RequestStateCodec, sealed: Sealed| {
            codec.seal_with(
                &sealed.to_bytes(),
                &SealOptions::new()
                    .associated_data(binding.as_bytes())
                    .ttl(KEEP),
            )
        };
        if let Some(server_state) = one_server_state(&waiting.open) {
            // A 2026-07-28 server's round: its state is all the round needs,
            // so it travels sealed with it and the call ends here (dropped,
            // its questions unanswered); the retry, on any replica, starts
            // the call again from that state.
            let state = seal(self.codec()?, Sealed::Server(server_state));
            return Ok(Round::Input(InputRequiredResult::new(
                Some(requests),
                Some(state),
            )));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let state = seal(self.own()?, Sealed::Waiting(id));
        let mut waiting_room = self.lock();
        // Calls nobody came back for, and calls that ended meanwhile (a
        // timeout): dropped, which cancels what still runs.
        waiting_room.retain(|_, w| w.since.elapsed() < KEEP && !w.call.task.is_finished());
        waiting.since = Instant::now();
        waiting_room.insert(id, waiting);
        Ok(Round::Input(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }
}

/// A codec with a random key of this process's own; none without a random
/// source (a guessable key would let a client forge a state).
fn random_codec() -> Option<RequestStateCodec> {
    crate::random::bytes::<32>()
        .ok()
        .and_then(|key| RequestStateCodec::try_new(key.to_vec()).ok())
}

fn no_key(codec: Option<&RequestStateCodec>) -> Result<&RequestStateCodec, McpError> {
    codec.ok_or_else(|| {
        McpError::internal_error(
            "plughost has no random source (/dev/urandom) to seal requestState with, so it cannot wait for the client's answers",
            None,
        )
    })
}

/// What a `requestState` of plughost's holds.
enum Sealed {
    /// A call waiting in this process's waiting room.
    Waiting(u64),
    /// A 2026-07-28 server's round: its own `requestState`, if it sent
    /// one (a server that needs none is simply asked again).
    Server(Option<String>),
}

impl Sealed {
    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Sealed::Waiting(id) => [&[0u8][..], &id.to_be_bytes()].concat(),
            Sealed::Server(Some(state)) => [&[1u8][..], state.as_bytes()].concat(),
            Sealed::Server(None) => vec![2u8],
        }
    }

    fn from_bytes(bytes: &[u8]) -> Option<Sealed> {
        match bytes.split_first()? {
            (0, id) => Some(Sealed::Waiting(u64::from_be_bytes(id.try_into().ok()?))),
            (1, state) => Some(Sealed::Server(Some(
                String::from_utf8(state.to_vec()).ok()?,
            ))),
            (2, []) => Some(Sealed::Server(None)),
            _ => None,
        }
    }
}

/// The server state every question of a round shares: the round is one
/// 2026-07-28 server's, which a retry can continue anywhere. `None` when a
/// question came from a 2025-11-25 server (a call that waits mid-run).
fn one_server_state(open: &[Ask]) -> Option<Option<String>> {
    let first = open.first()?.server_state.clone()?;
    open.iter()
        .all(|a| a.server_state.as_ref() == Some(&first))
        .then_some(first)
}

/// The call's end, as the client gets it: an error that followed a refused
/// capability becomes `-32021` naming what the client did not declare.
fn finish(
    ended: Result<Result<ServerResult, McpError>, tokio::task::JoinError>,
    refused: &BTreeSet<&'static str>,
) -> Result<ServerResult, McpError> {
    let ended =
        ended.map_err(|e| McpError::internal_error(format!("the call failed: {e}"), None))?;
    let failed = match &ended {
        Err(_) => true,
        Ok(ServerResult::CallToolResult(r)) => r.is_error == Some(true),
        Ok(_) => false,
    };
    if failed && !refused.is_empty() {
        let required: serde_json::Map<String, Value> = refused
            .iter()
            .map(|c| ((*c).to_owned(), json!({})))
            .collect();
        return Err(McpError::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "the request needs the client's {} capability, which it did not declare",
                refused.iter().copied().collect::<Vec<_>>().join(" and ")
            ),
            Some(json!({"requiredCapabilities": required})),
        ));
    }
    ended
}

/// The client of a call a 2026-07-28 client made: the server's requests
/// become the next round's input requests.
struct RoundClient {
    capabilities: ClientCapabilities,
    /// Its own session: a server's request goes to it when it names this
    /// call, or when it is the one call in flight on the server.
    session: String,
    asks: mpsc::UnboundedSender<Ask>,
    refused: Arc<Mutex<BTreeSet<&'static str>>>,
    made_up: AtomicU32,
    /// The server's state of the round a retry continues, for the call's
    /// first request.
    resumes: Mutex<Option<Option<String>>>,
}

impl CallClient for RoundClient {
    fn resumes(&self) -> Option<Option<String>> {
        self.resumes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn capabilities(&self) -> ClientCapabilities {
        // The server's requests are all taken, so that one the client did
        // not declare is refused here, where the refusal is remembered.
        ClientCapabilities::all(true)
    }

    fn declared(&self) -> ClientCapabilities {
        self.capabilities
    }

    fn session(&self) -> String {
        self.session.clone()
    }

    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ClientRequestError>> {
        Box::pin(async move {
            let capability = match method {
                "sampling/createMessage" => "sampling",
                "elicitation/create" => "elicitation",
                "roots/list" => "roots",
                other => {
                    return Err(ClientRequestError::new(
                        ErrorCode::METHOD_NOT_FOUND.0,
                        format!("plughost does not pass {other} on"),
                    ));
                }
            };
            if !self.capabilities.answers(method) {
                self.refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(capability);
                return Err(ClientRequestError::new(
                    ErrorCode::METHOD_NOT_FOUND.0,
                    format!("plughost: the client of this request did not declare {capability}"),
                ));
            }
            let mut params = params;
            let server_state = params
                .get_mut("_meta")
                .and_then(Value::as_object_mut)
                .and_then(|meta| meta.remove(crate::client::SERVER_STATE))
                .map(|s| s.as_str().map(str::to_owned));
            let key = params["_meta"][INPUT_KEY]
                .as_str()
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    let n = self.made_up.fetch_add(1, Ordering::Relaxed) + 1;
                    format!("{capability}-{n}")
                });
            let (answer, answered) = oneshot::channel();
            let gone = || {
                ClientRequestError::new(
                    ErrorCode::INTERNAL_ERROR.0,
                    "plughost: the client's request is over; nobody will answer",
                )
            };
            self.asks
                .send(Ask {
                    key,
                    method: method.to_owned(),
                    params,
                    server_state,
                    answer,
                })
                .map_err(|_| gone())?;
            answered.await.map_err(|_| gone())?
        })
    }
}

/// A request of a 2026-07-28 client, as the rounds see it.
pub(super) struct Request {
    /// What a state is bound to: the method, and the name (or URI) and
    /// arguments, without the round's own params.
    binding: String,
    /// What the client declared it can answer.
    capabilities: ClientCapabilities,
    /// The `requestState` of a retry.
    state: Option<String>,
    /// The `inputResponses` of a retry.
    responses: Option<InputResponses>,
    /// Cancelled when the client cancels this request or goes away.
    cancelled: CancellationToken,
}

impl Request {
    /// The request `method` for `name` with `arguments`, as `context` has it.
    pub(super) fn new(
        method: &str,
        name: &str,
        arguments: &Option<impl serde::Serialize>,
        context: &rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Request {
        let arguments = serde_json::to_string(arguments).unwrap_or_default();
        Request {
            binding: format!("{method}\0{name}\0{arguments}"),
            capabilities: declared(&context.meta),
            state: None,
            responses: None,
            cancelled: context.ct.clone(),
        }
    }

    /// With the round's own params, taken from the request.
    pub(super) fn continuing(
        mut self,
        state: Option<String>,
        responses: Option<InputResponses>,
    ) -> Request {
        self.state = state;
        self.responses = responses;
        self
    }
}

/// How a request's result goes in and out of a [`ServerResult`].
pub(super) struct Kind<T> {
    into: fn(T) -> ServerResult,
    from: fn(ServerResult) -> Option<T>,
}

impl Kind<CallToolResult> {
    /// `tools/call`.
    pub(super) const TOOL: Kind<CallToolResult> = Kind {
        into: ServerResult::CallToolResult,
        from: |r| match r {
            ServerResult::CallToolResult(r) => Some(r),
            _ => None,
        },
    };
}

impl Kind<GetPromptResult> {
    /// `prompts/get`.
    pub(super) const PROMPT: Kind<GetPromptResult> = Kind {
        into: ServerResult::GetPromptResult,
        from: |r| match r {
            ServerResult::GetPromptResult(r) => Some(r),
            _ => None,
        },
    };
}

impl Kind<ReadResourceResult> {
    /// `resources/read`.
    pub(super) const READ: Kind<ReadResourceResult> = Kind {
        into: ServerResult::ReadResourceResult,
        from: |r| match r {
            ServerResult::ReadResourceResult(r) => Some(r),
            _ => None,
        },
    };
}

/// The client capabilities a 2026-07-28 request declares in its `_meta`.
fn declared(meta: &rmcp::model::RequestMetaObject) -> ClientCapabilities {
    let mut c = ClientCapabilities::default();
    if let Some(declared) = meta.client_capabilities() {
        c.sampling = declared.sampling.is_some();
        c.elicitation = declared.elicitation.is_some();
        c.roots = declared.roots.is_some();
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(codec: &RequestStateCodec, what: Sealed, binding: &str) -> String {
        codec.seal_with(
            &what.to_bytes(),
            &SealOptions::new()
                .associated_data(binding.as_bytes())
                .ttl(KEEP),
        )
    }

    /// Replicas share the key of servers' rounds, never that of their
    /// waiting calls: call 1 of one replica opens nowhere else (where call
    /// 1 is another client's).
    #[test]
    fn a_waiting_call_opens_only_in_its_own_process() {
        let (a, b) = (Rounds::keyed(b"fleet", "t"), Rounds::keyed(b"fleet", "t"));
        let binding = "tools/call\0greet\0{}";
        let waiting = sealed(a.own().unwrap(), Sealed::Waiting(1), binding);
        assert!(matches!(a.open(binding, &waiting), Ok(Sealed::Waiting(1))));
        assert!(b.open(binding, &waiting).is_err());
        // A waiting call sealed under the shared key is not taken either.
        let forged = sealed(a.codec().unwrap(), Sealed::Waiting(1), binding);
        assert!(b.open(binding, &forged).is_err());
        // A server's round opens on every replica, for its own request only.
        let round = sealed(
            a.codec().unwrap(),
            Sealed::Server(Some("s".into())),
            binding,
        );
        assert!(matches!(b.open(binding, &round), Ok(Sealed::Server(Some(s))) if s == "s"));
        assert!(b.open("tools/call\0other\0{}", &round).is_err());
        // Another tenant's key does not open it.
        assert!(Rounds::keyed(b"fleet", "u").open(binding, &round).is_err());
    }
}
