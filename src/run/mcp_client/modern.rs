//! What changes when a wrapped server speaks 2026-07-28 (it answered
//! `server/discover`): the protocol has no session state, so what the
//! 2025-11-25 handshake and its session held travels on each request, and
//! what a server sent on its own comes on streams the client opens.
//!
//! - **Capabilities per request.** Each request names the capabilities of
//!   the client of its call (sampling, elicitation, roots), not plughost's:
//!   a server then asks only what that client can answer, and a call from the
//!   command line is asked nothing. Listings name every capability plughost
//!   can route, so what a server offers does not change with who called.
//! - **`input_required` rounds.** A server that needs its client's input
//!   answers with the requests instead of sending them; [`answer_round`]
//!   asks the call's client each one and the request is sent again with the
//!   answers and the server's `requestState`.
//! - **Log level.** `logging/setLevel` is gone: the level the host set rides
//!   each request's `_meta`.
//! - **Changes.** A server's `list_changed` and resource updates come on a
//!   `subscriptions/listen` stream ([`listen`]), opened for what the server
//!   declares it sends and for the resources the host follows; following one
//!   more (`resources/subscribe` from the gateway) opens the stream again
//!   with it, and answers once the server acknowledged it.
#![expect(
    deprecated,
    reason = "sampling, roots and logging are the 2025-11-25 protocol's, still in 2026-07-28 as input requests; rmcp marks them for its successor"
)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::Peer;
use rmcp::model::{
    ClientRequest, ErrorCode, ErrorData, InputRequest, InputRequiredResult, InputResponses,
    LoggingLevel, RequestMetaObject, ServerNotification, SubscriptionFilter,
};
use rmcp::service::RoleClient;
use rmcp::service::Subscription;
use tokio::sync::{Notify, watch};

use super::client::{Notices, declared};
use crate::client::{self, CallClient};

/// How many `input_required` rounds one request may take before it fails.
pub(super) const MAX_ROUNDS: usize = 16;
/// How many input requests one round may hold: each is a question to the
/// call's client (often its user).
const MAX_INPUTS: usize = 16;

/// The state a 2026-07-28 server's requests carry, which its 2025-11-25
/// session would have held.
pub(super) struct Modern {
    log_level: Mutex<Option<LoggingLevel>>,
    /// The resources the host follows, with a generation that grows with
    /// each change.
    followed: watch::Sender<(u64, BTreeSet<String>)>,
    /// The generation the server last acknowledged a stream for.
    acknowledged: watch::Sender<u64>,
}

/// A request the session answers itself, because 2026-07-28 moved it.
pub(super) enum Local {
    Follow(String),
    Unfollow(String),
    LogLevel(LoggingLevel),
}

impl Modern {
    pub(super) fn new() -> Modern {
        Modern {
            log_level: Mutex::new(None),
            followed: watch::channel((0, BTreeSet::new())).0,
            acknowledged: watch::channel(0).0,
        }
    }

    /// The requests 2026-07-28 removed that the session answers itself.
    pub(super) fn local(request: &ClientRequest) -> Option<Local> {
        match request {
            ClientRequest::SubscribeRequest(r) => Some(Local::Follow(r.params.uri.clone())),
            ClientRequest::UnsubscribeRequest(r) => Some(Local::Unfollow(r.params.uri.clone())),
            ClientRequest::SetLevelRequest(r) => Some(Local::LogLevel(r.params.level)),
            _ => None,
        }
    }

    /// Does what `local` asked; a changed set of followed resources is
    /// answered once the server acknowledged a stream with it, or by `deadline`.
    pub(super) async fn answer(
        &self,
        local: Local,
        deadline: tokio::time::Instant,
    ) -> Result<(), ErrorData> {
        let (uri, follow) = match local {
            Local::LogLevel(level) => {
                *self.log_level.lock().expect("log level") = Some(level);
                return Ok(());
            }
            Local::Follow(uri) => (uri, true),
            Local::Unfollow(uri) => (uri, false),
        };
        if !self.set_followed(&uri, follow) {
            return Ok(());
        }
        let wanted = self.followed.borrow().0;
        let mut acknowledged = self.acknowledged.subscribe();
        match tokio::time::timeout_at(deadline, acknowledged.wait_for(|g| *g >= wanted)).await {
            Ok(Ok(_)) => Ok(()),
            _ => {
                // Not followed after all: the host counts it as failed.
                if follow {
                    self.set_followed(&uri, false);
                }
                Err(ErrorData::internal_error(
                    "plughost: the MCP server did not acknowledge the subscription in time"
                        .to_owned(),
                    None,
                ))
            }
        }
    }

    /// Follows `uri` or stops; whether that changed the set.
    fn set_followed(&self, uri: &str, follow: bool) -> bool {
        self.followed.send_if_modified(|(generation, set)| {
            let changed = match follow {
                true => set.insert(uri.to_owned()),
                false => set.remove(uri),
            };
            *generation += u64::from(changed);
            changed
        })
    }

    /// The `_meta` a request of a call whose client can answer `can` carries.
    pub(super) fn meta(&self, can: client::ClientCapabilities) -> RequestMetaObject {
        let mut meta = RequestMetaObject::default();
        meta.set_client_capabilities(declared(can));
        if let Some(level) = *self.log_level.lock().expect("log level") {
            meta.set_log_level(level);
        }
        meta
    }
}

/// The `_meta` key of a request handed to the call's client that names the
/// key the server filed it under (`serve/rounds.rs` keys its own round with it).
const INPUT_KEY: &str = "plughost/inputKey";

/// Asks `client` the input requests of `round`, all at once (a client of
/// plughost at 2026-07-28 gets them in one round of its own, as the server
/// asked them), and returns `request` ready to be sent again: the answers and
/// the server's `requestState` on it. Each request names the server's key in
/// its `_meta` ([`INPUT_KEY`]), so that round keeps the server's keys.
pub(super) async fn answer_round(
    request: ClientRequest,
    round: InputRequiredResult,
    client: Option<&Arc<dyn CallClient>>,
    roots: &super::roots::Granted,
) -> Result<ClientRequest, ErrorData> {
    // Dropped with the round (a timeout, a cancelled call): what is still
    // asked is cancelled with it.
    let inputs = round.input_requests.clone().unwrap_or_default();
    if inputs.len() > MAX_INPUTS {
        return Err(ErrorData::internal_error(
            format!(
                "plughost: the MCP server asked {} questions in one round, more than the {MAX_INPUTS} it may",
                inputs.len()
            ),
            None,
        ));
    }
    let mut asking = tokio::task::JoinSet::new();
    let mut answers = InputResponses::new();
    for (key, input) in inputs {
        let (method, mut params) = match &input {
            InputRequest::CreateMessage(r) => ("sampling/createMessage", to_json(&r.params)?),
            InputRequest::Elicitation(r) => ("elicitation/create", to_json(&r.params)?),
            InputRequest::ListRoots(_) => ("roots/list", serde_json::json!({})),
            _ => {
                return Err(ErrorData::new(
                    ErrorCode::INVALID_PARAMS,
                    format!(
                        "plughost: the MCP server asked for input plughost does not know ({key})"
                    ),
                    None,
                ));
            }
        };
        if let Some(params) = params.as_object_mut()
            && let Some(meta) = params
                .entry("_meta")
                .or_insert_with(|| serde_json::json!({}))
                .as_object_mut()
        {
            meta.insert(INPUT_KEY.to_owned(), key.clone().into());
            // Null when the round has no state: the server needs none.
            meta.insert(
                client::SERVER_STATE.to_owned(),
                round.request_state.clone().into(),
            );
        }
        if method == "roots/list" {
            // The client's roots that the grants allow, else the granted
            // folders (`roots.rs`): asked with the round's other questions.
            let (roots, client) = (roots.clone(), client.cloned());
            asking.spawn(async move {
                let listed = roots.answer(client.as_ref(), params).await;
                (key, Ok(serde_json::to_value(listed).unwrap_or_default()))
            });
            continue;
        }
        let Some(client) = client.filter(|c| c.capabilities().answers(method)).cloned() else {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "plughost: the MCP server asked for {method}, which the caller of this tool did not declare; call it from an MCP client that supports it"
                ),
                None,
            ));
        };
        asking.spawn(async move { (key, client.request(method, params).await) });
    }
    while let Some(asked) = asking.join_next().await {
        let (key, answer) =
            asked.map_err(|e| ErrorData::internal_error(format!("plughost: {e}"), None))?;
        let answer = answer.map_err(|e| ErrorData::new(ErrorCode(e.code), e.message, None))?;
        answers.insert(key, answer);
    }
    let answers = (!answers.is_empty()).then_some(answers);
    with_round(request, answers, round.request_state)
}

/// `request` with a round's answers and the server's `requestState` on it.
pub(super) fn with_round(
    mut request: ClientRequest,
    answers: Option<InputResponses>,
    state: Option<String>,
) -> Result<ClientRequest, ErrorData> {
    match &mut request {
        ClientRequest::CallToolRequest(r) => {
            r.params.input_responses = answers;
            r.params.request_state = state;
        }
        ClientRequest::GetPromptRequest(r) => {
            r.params.input_responses = answers;
            r.params.request_state = state;
        }
        ClientRequest::ReadResourceRequest(r) => {
            r.params.input_responses = answers;
            r.params.request_state = state;
        }
        _ => {
            return Err(ErrorData::internal_error(
                "plughost: the MCP server answered input_required to a request that cannot take input".to_owned(),
                None,
            ));
        }
    }
    Ok(request)
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, ErrorData> {
    serde_json::to_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A `subscriptions/listen` stream and the generation of followed
/// resources it was opened with.
pub(super) struct Stream {
    generation: u64,
    subscription: Option<Subscription>,
}

/// How long a server has to acknowledge a `subscriptions/listen` stream.
const ACKNOWLEDGE_WAIT: Duration = Duration::from_secs(5);
/// A stream that ends sooner than this after it opened counts as refused:
/// it is opened again only after a pause that grows.
const STEADY: Duration = Duration::from_secs(5);

/// Opens the stream for what the server declares it sends and the followed
/// resources; `None` inside when there is nothing to listen for. Fails when
/// the server refuses the stream, does not acknowledge it within
/// [`ACKNOWLEDGE_WAIT`], or the connection is gone.
pub(super) async fn open(peer: &Peer<RoleClient>, modern: &Modern) -> Result<Stream, String> {
    let (generation, resources) = modern.followed.borrow().clone();
    let mut filter = declared_changes(peer);
    if !resources.is_empty() {
        filter.resource_subscriptions = Some(resources.into_iter().collect());
    }
    let subscription = if filter == SubscriptionFilter::default() {
        None
    } else {
        match tokio::time::timeout(ACKNOWLEDGE_WAIT, peer.listen(filter)).await {
            Ok(Ok(subscription)) => Some(subscription),
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err("the server did not acknowledge subscriptions/listen".into()),
        }
    };
    modern.acknowledged.send_replace(generation);
    Ok(Stream {
        generation,
        subscription,
    })
}

/// Keeps a `subscriptions/listen` stream open (the first one, `stream`, is
/// opened during the handshake, so nothing the server says after its first
/// answer is missed), and hands what comes on it to the host: changed lists
/// wake `changed`, resource updates go to `notices`. Opens it again
/// when the followed resources change or the server ends it; a stream that
/// ends soon after it opened counts as refused, and a server that refuses is
/// asked again after a pause that grows. Each stream after the first makes
/// the session list again: a change while none was open is not lost. Ends
/// when the connection does.
pub(super) async fn listen(
    peer: Peer<RoleClient>,
    modern: Arc<Modern>,
    mut stream: Option<Stream>,
    changed: Arc<Notify>,
    notices: Arc<dyn Notices>,
) {
    let mut followed = modern.followed.subscribe();
    let mut failures = 0u32;
    let mut opened_at = tokio::time::Instant::now();
    loop {
        let Some(Stream {
            generation,
            subscription,
        }) = stream.take()
        else {
            if failures > 0 {
                let wait = Duration::from_millis(200 << failures.min(6));
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    r = followed.changed() => if r.is_err() { return },
                }
            }
            match open(&peer, &modern).await {
                Ok(opened) => {
                    opened_at = tokio::time::Instant::now();
                    stream = Some(opened);
                    changed.notify_one();
                }
                Err(_) if peer.is_transport_closed() => return,
                Err(_) => failures += 1,
            }
            continue;
        };
        let stale =
            |followed: &watch::Receiver<(u64, BTreeSet<String>)>| followed.borrow().0 != generation;
        match subscription {
            None => {
                if !stale(&followed) && followed.changed().await.is_err() {
                    return;
                }
            }
            Some(mut subscription) => loop {
                if stale(&followed) {
                    break;
                }
                tokio::select! {
                    next = subscription.next() => match next {
                        Ok(Some(notification)) => hand_on(notification, &changed, notices.as_ref()),
                        // The server ended the stream: open it again, after
                        // a pause if it did not last.
                        Ok(None) | Err(_) => {
                            failures = match opened_at.elapsed() < STEADY {
                                true => failures + 1,
                                false => 0,
                            };
                            break;
                        }
                    },
                    r = followed.changed() => if r.is_err() { return },
                }
            },
        }
        if peer.is_transport_closed() {
            return;
        }
    }
}

/// The list changes the server declares it announces.
fn declared_changes(peer: &Peer<RoleClient>) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::default();
    let Some(info) = peer.peer_info() else {
        return filter;
    };
    let c = &info.capabilities;
    let announces = |list_changed: Option<bool>| list_changed.unwrap_or(false).then_some(true);
    filter.tools_list_changed = c.tools.as_ref().and_then(|t| announces(t.list_changed));
    filter.prompts_list_changed = c.prompts.as_ref().and_then(|p| announces(p.list_changed));
    filter.resources_list_changed = c.resources.as_ref().and_then(|r| announces(r.list_changed));
    filter
}

fn hand_on(notification: ServerNotification, changed: &Notify, notices: &dyn Notices) {
    match notification {
        ServerNotification::ToolListChangedNotification(_)
        | ServerNotification::PromptListChangedNotification(_)
        | ServerNotification::ResourceListChangedNotification(_) => changed.notify_one(),
        ServerNotification::ResourceUpdatedNotification(n) => {
            notices.resource_updated(n.params.uri)
        }
        // Log messages reach the host from the wire, in order.
        _ => {}
    }
}
