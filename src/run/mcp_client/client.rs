//! plughost as the client of a wrapped MCP server: what it tells the server
//! it can do, and where the server's own requests and notifications go.
//!
//! The server is told plughost's client can do everything it can route to a
//! client: sampling, elicitation (form and URL) and roots. What a server offers often
//! depends on it (a server registers its sampling tool only for a client
//! that samples), and a server serves every client of the host, one after
//! another: were it told the capabilities of the client that happened to
//! start it, its tools would come and go with who called first, and the
//! approval could not pin them. Its requests go to a client of the calls in
//! flight on it:
//!
//! - one client session has calls in flight: that session answers;
//! - none: the session that started the server, while it is still there (a
//!   server asks for the roots right after it starts);
//! - several: the request is refused, never guessed, with an error that
//!   says why (over stdio a request carries nothing that ties it to a call).
//!
//! A call parked between the rounds of a 2026-07-28 client counts like any
//! other: a server may still ask for it (its request joins the call's next
//! round), so a request that could be its is never given to another call.
//!
//! Exact routing: each request plughost sends for a call carries the call's
//! id in `_meta["plughost/call"]`; a server that puts the same key and value
//! in the `_meta` of a request it sends during that call has it routed to
//! that call's client, however many calls are in flight.
//!
//! A client that cannot answer (it did not declare the capability) gets the
//! request refused with an error that says so. Resource updates go to the
//! host's [`Notices`] (log messages too, from the wire, in order: see
//! `wire.rs`); a changed list is listed again.
#![expect(
    deprecated,
    reason = "sampling, roots, logging and resources/subscribe are the 2025-11-25 protocol's, which MCP clients and servers speak; rmcp marks them for its successor"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorCode, ErrorData, Implementation,
    ListRootsResult, ProtocolVersion, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use super::roots::Granted;
use crate::client::CallClient;

/// What the host hears from a server besides answers.
pub(crate) trait Notices: Send + Sync {
    /// `notifications/message`, as the server sent its params.
    fn log(&self, params: serde_json::Value);
    /// `notifications/resources/updated` for `uri`.
    fn resource_updated(&self, uri: String);
}

/// The clients of the calls in flight on one server, and the client that
/// started it.
#[derive(Default)]
pub(super) struct Clients {
    /// By call; `None` for a call without a client (the command line, a
    /// library call that gave none).
    in_flight: Mutex<HashMap<u64, Option<Arc<dyn CallClient>>>>,
    starter: Mutex<Option<Weak<dyn CallClient>>>,
    next: std::sync::atomic::AtomicU64,
    /// What `roots/list` is answered from.
    pub(super) roots: Granted,
}

/// The `_meta` key of the call id plughost sends and a server may echo.
pub(crate) const CALL_KEY: &str = "plughost/call";

/// A call's registration with [`Clients`]; dropping it ends the call's.
pub(super) struct InFlight {
    clients: Arc<Clients>,
    id: u64,
}

impl InFlight {
    /// The call's id among those in flight on the server.
    pub(super) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.clients
            .in_flight
            .lock()
            .expect("clients lock")
            .remove(&self.id);
    }
}

impl Clients {
    pub(super) fn starting(client: Option<&Arc<dyn CallClient>>, roots: Granted) -> Arc<Clients> {
        let clients = Arc::new(Clients {
            roots,
            ..Clients::default()
        });
        *clients.starter.lock().expect("clients lock") = client.map(Arc::downgrade);
        clients
    }

    /// Registers the client of a call for as long as the returned value lives.
    pub(super) fn enter(self: &Arc<Self>, client: Option<Arc<dyn CallClient>>) -> InFlight {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.in_flight
            .lock()
            .expect("clients lock")
            .insert(id, client);
        InFlight {
            clients: self.clone(),
            id,
        }
    }

    /// The client that answers a request of the server now (see the module
    /// docs); `meta` is the request's own.
    fn answering(
        &self,
        method: &str,
        meta: &rmcp::model::RequestMetaObject,
    ) -> Result<Arc<dyn CallClient>, ErrorData> {
        let in_flight = self.in_flight.lock().expect("clients lock");
        let named = meta.0.get(CALL_KEY).and_then(serde_json::Value::as_u64);
        if let Some(Some(client)) = named.and_then(|id| in_flight.get(&id)) {
            return Self::can_answer(client.clone(), method);
        }
        let mut sessions: Vec<(String, &Arc<dyn CallClient>)> = Vec::new();
        for c in in_flight.values().flatten() {
            let s = c.session();
            if !sessions.iter().any(|(k, _)| *k == s) {
                sessions.push((s, c));
            }
        }
        let clientless = in_flight.values().any(Option::is_none);
        let client = match sessions.as_slice() {
            [(_, c)] if !clientless => Arc::clone(c),
            [] if clientless => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "plughost: the caller of this tool (the command line, or a library call without a client) cannot answer {method}; call it from an MCP client that supports it"
                    ),
                    None,
                ));
            }
            [] => match self
                .starter
                .lock()
                .expect("clients lock")
                .as_ref()
                .and_then(Weak::upgrade)
            {
                Some(c) => c,
                None => {
                    return Err(ErrorData::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!(
                            "plughost: no client is there to answer {method} (no call is in flight on this server)"
                        ),
                        None,
                    ));
                }
            },
            _ => {
                return Err(ErrorData::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!(
                        "plughost: calls of {} clients are in flight on this server, and {method} does not say which one it is for; send it while one client's calls run",
                        sessions.len() + usize::from(clientless)
                    ),
                    None,
                ));
            }
        };
        Self::can_answer(client, method)
    }

    /// `client`, if it declared what `method` needs.
    fn can_answer(
        client: Arc<dyn CallClient>,
        method: &str,
    ) -> Result<Arc<dyn CallClient>, ErrorData> {
        if !client.capabilities().answers(method) {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "plughost: the client of this call did not declare {method}; call the tool from an MCP client that supports it"
                ),
                None,
            ));
        }
        Ok(client)
    }

    /// Sends the server's request to the call's client, with the `_meta`
    /// the server put on it (rmcp hands that to the handler apart from the
    /// params), and reads the client's answer.
    async fn forward<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: P,
        meta: &rmcp::model::RequestMetaObject,
    ) -> Result<R, ErrorData> {
        let client = self.answering(method, meta)?;
        let params = serde_json::to_value(params)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let params = with_meta(params, meta);
        let result = client
            .request(method, params)
            .await
            .map_err(|e| ErrorData::new(ErrorCode(e.code), e.message, None))?;
        serde_json::from_value(result).map_err(|e| {
            ErrorData::internal_error(format!("the client's answer to {method}: {e}"), None)
        })
    }
}

/// `params` with the `_meta` a server put on its request (rmcp hands that to
/// the handler apart from the params) added to its own.
fn with_meta(
    mut params: serde_json::Value,
    meta: &rmcp::model::RequestMetaObject,
) -> serde_json::Value {
    if !meta.is_empty()
        && let (Some(params), Ok(serde_json::Value::Object(meta))) =
            (params.as_object_mut(), serde_json::to_value(meta))
    {
        let own = params
            .entry("_meta")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        if let Some(own) = own.as_object_mut() {
            own.extend(meta);
        }
    }
    params
}

/// What a client that can answer `can` declares, as MCP says it: every
/// capability for the session's handshake and listings, those of the call's
/// client on each request to a 2026-07-28 server.
pub(super) fn declared(can: crate::client::ClientCapabilities) -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    if can.sampling {
        capabilities.sampling = Some(Default::default());
    }
    if can.elicitation {
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(Default::default())
                .with_url(Default::default()),
        );
    }
    // Roots whatever the client can: plughost answers them from the
    // plugin's grants when the client cannot (`roots.rs`).
    capabilities.roots = Some(Default::default());
    capabilities
}

/// The client side of the session: rmcp's handler.
#[derive(Clone)]
pub(super) struct Client {
    pub(super) clients: Arc<Clients>,
    pub(super) notices: Arc<dyn Notices>,
    /// Wakes the relisting when the server says its tools, resources or
    /// prompts changed.
    pub(super) changed: Arc<Notify>,
}

impl ClientHandler for Client {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.clients
            .forward("sampling/createMessage", params, &context.meta)
            .await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.clients
            .forward("elicitation/create", params, &context.meta)
            .await
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        // Whichever client is picked (or none): plughost answers from the
        // plugin's grants (see `roots.rs`).
        let client = self.clients.answering("roots/list", &context.meta).ok();
        let params = with_meta(serde_json::json!({}), &context.meta);
        Ok(self.clients.roots.answer(client.as_ref(), params).await)
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.notices.resource_updated(params.uri);
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = declared(crate::client::ClientCapabilities::all(true));
        // The handshake version rmcp defaults to has no `initialize`, so
        // name the newest one that does.
        ClientConfig::new(
            capabilities,
            Implementation::new("plughost", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
