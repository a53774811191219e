//! The client a call comes from, as an MCP server run as a plugin may need
//! it: servers ask their client for a model's completion
//! (`sampling/createMessage`), for the user's input (`elicitation/create`)
//! and for its roots (`roots/list`), in the middle of a call.
//!
//! plughost's MCP front end gives each call its session as a [`CallClient`];
//! an embedder that has a model or a user at hand gives its own
//! ([`crate::CallOptions::client`]). A server's request goes to the client
//! of the call in flight on that server, never to another session: see
//! `run/mcp_client/client.rs` for how it is routed.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// A boxed future, so handlers can be trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a client can answer, as MCP's client capabilities say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCapabilities {
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `elicitation/create`.
    pub elicitation: bool,
    /// `roots/list`.
    pub roots: bool,
}

impl ClientCapabilities {
    /// Every capability, or none.
    pub fn all(yes: bool) -> ClientCapabilities {
        ClientCapabilities {
            sampling: yes,
            elicitation: yes,
            roots: yes,
        }
    }

    /// Whether the client can answer `method`.
    pub fn answers(&self, method: &str) -> bool {
        match method {
            "sampling/createMessage" => self.sampling,
            "elicitation/create" => self.elicitation,
            "roots/list" => self.roots,
            _ => false,
        }
    }
}

/// Why a client did not answer a request: a JSON-RPC error, passed on to the
/// server that asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (error {code})")]
#[non_exhaustive]
pub struct ClientRequestError {
    /// The JSON-RPC error code (`-32602` for invalid params…).
    pub code: i32,
    /// The error's message.
    pub message: String,
}

impl ClientRequestError {
    /// An error with this JSON-RPC code and message.
    pub fn new(code: i32, message: impl Into<String>) -> ClientRequestError {
        ClientRequestError {
            code,
            message: message.into(),
        }
    }
}

/// An MCP server's answer that its request needs a client capability the
/// caller did not declare (2026-07-28's `-32021`): the cause of the call's
/// [`CallError::Failed`](crate::CallError::Failed), so that a front end can
/// pass it on in its own words, or as the same error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct MissingCapability {
    /// The server's message.
    pub message: String,
    /// The server's `data` (`requiredCapabilities`…), as it sent it.
    pub data: Option<Value>,
}

/// The `_meta` key of a request handed to a call's client that holds the
/// server's `requestState` (or null) for the round the request belongs to, a
/// 2026-07-28 server's: a client of
/// plughost at 2026-07-28 gets it back sealed, so that any replica can
/// continue the round (`serve/rounds.rs`). Never sent to a client as it is.
pub(crate) const SERVER_STATE: &str = "plughost/serverState";

/// The client of a call: answers what an MCP server run as a plugin asks
/// during it. Requests and results are MCP's JSON (`params` of the request,
/// the `result` object).
pub trait CallClient: Send + Sync {
    /// What it can answer.
    fn capabilities(&self) -> ClientCapabilities;
    /// What it declared, which a server that speaks 2026-07-28 is told on
    /// each request, so that it asks only that. The same as
    /// [`capabilities`](Self::capabilities) unless the client takes more
    /// requests than it declared, to refuse them itself.
    fn declared(&self) -> ClientCapabilities {
        self.capabilities()
    }
    /// Which client session it is: requests of servers that several calls
    /// share go to a session only when it is the only one with calls in
    /// flight on that server.
    fn session(&self) -> String;
    /// Sends `method` with `params` to the client and returns its result.
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ClientRequestError>>;
    /// `Some` when this call continues a 2026-07-28 server's
    /// `input_required` round, with the server's `requestState` if it sent
    /// one; given once. The call's first request to the server carries it,
    /// and the server asks again what it still needs (its client's answers
    /// come back to it through [`Self::request`]). A server that no longer
    /// speaks 2026-07-28 is not run again from the start.
    fn resumes(&self) -> Option<Option<String>> {
        None
    }
}
