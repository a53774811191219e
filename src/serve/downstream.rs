//! A front-end session as the client of a call ([`CallClient`]): what an MCP
//! server run as a plugin asks during a call (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) is sent to the session that made the
//! call, on the stream of the call's own request when the transport has one
//! (streamable HTTP), so it reaches the client that is waiting for that call.
#![expect(
    deprecated,
    reason = "sampling, roots, logging and resources/subscribe are the 2025-11-25 protocol's, which MCP clients and servers speak; rmcp marks them for its successor"
)]

use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestParams, ElicitRequest,
    ElicitRequestParams, ErrorCode, GetExtensions, ListRootsRequest, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, ServiceError};
use serde_json::Value;

use crate::client::{BoxFuture, CallClient, ClientCapabilities, ClientRequestError};

/// The session of one call.
pub(super) struct Downstream {
    pub(super) peer: Peer<RoleServer>,
    /// The session's id (what routing compares).
    pub(super) session: String,
    /// The request the call came in: a server's request rides its stream.
    pub(super) request: Option<RequestId>,
}

impl CallClient for Downstream {
    fn capabilities(&self) -> ClientCapabilities {
        let mut c = ClientCapabilities::default();
        if let Some(info) = self.peer.peer_info() {
            c.sampling = info.capabilities.sampling.is_some();
            c.elicitation = info.capabilities.elicitation.is_some();
            c.roots = info.capabilities.roots.is_some();
        }
        c
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
            let invalid = |e: serde_json::Error| {
                ClientRequestError::new(ErrorCode::INVALID_PARAMS.0, e.to_string())
            };
            let mut request = match method {
                "sampling/createMessage" => {
                    let params: CreateMessageRequestParams =
                        serde_json::from_value(params).map_err(invalid)?;
                    ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params))
                }
                "elicitation/create" => {
                    let by_url = params.get("mode").and_then(Value::as_str) == Some("url");
                    let url_declared = self.peer.peer_info().is_some_and(|i| {
                        i.capabilities
                            .elicitation
                            .as_ref()
                            .is_some_and(|e| e.url.is_some())
                    });
                    if by_url && !url_declared {
                        return Err(ClientRequestError::new(
                            ErrorCode::METHOD_NOT_FOUND.0,
                            "plughost: the client of this call did not declare URL elicitation; call the tool from an MCP client that supports it",
                        ));
                    }
                    let params: ElicitRequestParams =
                        serde_json::from_value(params).map_err(invalid)?;
                    ServerRequest::ElicitRequest(ElicitRequest::new(params))
                }
                "roots/list" => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
                other => {
                    return Err(ClientRequestError::new(
                        ErrorCode::METHOD_NOT_FOUND.0,
                        format!("plughost does not pass {other} on"),
                    ));
                }
            };
            if let Some(id) = &self.request {
                request
                    .extensions_mut()
                    .insert(OriginatingRequestId(id.clone()));
            }
            match self.peer.send_request(request).await {
                Ok(result) => Ok(result_value(result)),
                Err(ServiceError::McpError(e)) => {
                    Err(ClientRequestError::new(e.code.0, e.message.into_owned()))
                }
                Err(e) => Err(ClientRequestError::new(
                    ErrorCode::INTERNAL_ERROR.0,
                    format!("the client did not answer {method}: {e}"),
                )),
            }
        })
    }
}

fn result_value(result: ClientResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}
