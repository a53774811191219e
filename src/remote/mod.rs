//! Remote MCP servers: a server reached over streamable HTTP is run as a
//! plugin whose process is a bridge. The bridge reads the JSON-RPC lines
//! plughost's client writes on its stdin, posts each to the server, and
//! writes what the server sends back (an answer, or the events of a stream)
//! as lines on its stdout; so the gateway, approval, pinning, the call
//! limits and the sandbox treat a remote server exactly as a local one. Run
//! confined, the bridge reaches the network only through plughost's egress
//! proxy, and only the server's host, which the plugin is granted.
//!
//! [`bridge`] is that program's body; the `plughost` binary runs it as a
//! hidden command, and [`crate::PluginHostBuilder::remote_bridge`] tells a
//! host which program to start.

mod headers;
mod http;
pub mod oauth;
mod sse;
mod streams;
mod wanted;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use http::Endpoint;
pub use wanted::{SIGN_IN_WANTED, SignInWanted};

/// The largest message the bridge takes from the server (the host's own,
/// smaller cap then applies to it as to any server's).
const MAX_MESSAGE: usize = 64 << 20;

/// How often a stream that ended before its answer is resumed.
const RESUMES: u32 = 5;

/// How many messages wait for the host to read them: past that, the bridge
/// stops reading from the server, whose own sending then slows (a server
/// that floods is held by TCP, not buffered).
const WAITING: usize = 64;

/// The variable a bridge is given its sign-in's access token in, by the
/// host that starts it (never a plugin's own).
pub const BEARER_VARIABLE: &str = "PLUGHOST_REMOTE_BEARER";

/// How long what follows the handshake waits for the server's own stream.
const LISTEN_WAIT: Duration = Duration::from_secs(2);

/// The header a streamable HTTP server names its session with.
const SESSION: &str = "mcp-session-id";

/// Why the bridge ended other than by its input closing.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The URL cannot be used.
    #[error("{0}")]
    Url(String),
    /// The server ended the session (`404` to a request that named it): a
    /// new bridge starts a new one.
    #[error("the remote MCP server at {0} ended its session; it is started again on the next call")]
    SessionEnded(String),
    /// Reading the input or writing the output failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Bridges the MCP server at `url` to `input` and `output` (JSON-RPC, one
/// message per line), until `input` closes; then ends the server's session.
/// Each request carries `bearer` (an OAuth access token), when given.
pub async fn bridge<R, W>(
    url: &str,
    bearer: Option<&str>,
    input: R,
    output: W,
) -> Result<(), BridgeError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let endpoint = Endpoint::new(url).map_err(BridgeError::Url)?;
    let bearer = bearer
        .map(|t| HeaderValue::from_str(&format!("Bearer {t}")))
        .transpose()
        .map_err(|_| {
            BridgeError::Url("the sign-in's access token cannot be sent in a header".into())
        })?
        .map(|mut v| {
            v.set_sensitive(true);
            v
        });
    let (out, rx) = mpsc::channel(WAITING);
    let writer = tokio::spawn(write_lines(rx, output));
    let link = Arc::new(Link {
        endpoint,
        bearer,
        session: Mutex::default(),
        version: Mutex::default(),
        out,
        in_flight: Mutex::default(),
        tools: Mutex::default(),
        ended: CancellationToken::new(),
        listening: Default::default(),
    });
    let mut lines = BufReader::new(input).lines();
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line?,
            _ = link.ended.cancelled() => break,
        };
        let Some(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        link.cancelled(&message);
        let key = request_key(&message);
        let initialized =
            message.get("method").and_then(Value::as_str) == Some("notifications/initialized");
        let task = tokio::spawn(link.clone().post(message));
        if initialized {
            // The server's own stream opens before anything else is sent.
            let _ = task.await;
            continue;
        }
        if let Some(key) = key {
            let mut in_flight = link.in_flight.lock().expect("in-flight lock");
            in_flight.retain(|_, t| !t.is_finished());
            in_flight.insert(key, task.abort_handle());
        }
    }
    let ended = link.ended.is_cancelled();
    link.ended.cancel();
    link.close().await;
    drop(link);
    // What is in flight may never end; what was written has been flushed.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer).await;
    match ended {
        true => Err(BridgeError::SessionEnded(url.to_owned())),
        false => Ok(()),
    }
}

/// What the bridge knows of the connection, shared by its requests.
struct Link {
    endpoint: Endpoint,
    /// `Authorization` of every request, from the sign-in.
    bearer: Option<HeaderValue>,
    /// The session the server named in its answer to `initialize`.
    session: Mutex<Option<HeaderValue>>,
    /// The revision agreed on, sent with every request after it.
    version: Mutex<Option<HeaderValue>>,
    out: mpsc::Sender<Value>,
    /// The requests being posted, by id: one the host cancels (its deadline,
    /// its client) stops, and its stream with it.
    in_flight: Mutex<std::collections::HashMap<String, tokio::task::AbortHandle>>,
    /// The arguments each tool mirrors in headers (`x-mcp-header`), from
    /// the server's last tool list.
    tools: Mutex<headers::Mirrored>,
    /// Cancelled when the bridge ends.
    ended: CancellationToken,
    /// Whether the stream of the server's own messages (`GET`) is open.
    listening: std::sync::atomic::AtomicBool,
}

impl Link {
    /// Posts `message`, and passes on what comes back.
    async fn post(self: Arc<Self>, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").filter(|_| method.is_some()).cloned();
        if let Some(v) = message
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .and_then(Value::as_str)
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            *self.version.lock().expect("version lock") = Some(v);
        }
        let body = serde_json::to_vec(&message).expect("a Value serializes");
        let mut request = self
            .headers(self.endpoint.request(hyper::Method::POST))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        if let Some(m) = method.as_deref().filter(|_| modern(&message)) {
            let tools = self.tools.lock().expect("tools lock");
            for (name, value) in headers::for_request(m, &message, &tools) {
                request = request.header(name, value);
            }
        }
        let request = match request.body(Full::new(Bytes::from(body))) {
            Ok(r) => r,
            Err(e) => {
                return self
                    .fail(id, format!("the request cannot be sent: {e}"))
                    .await;
            }
        };
        let response = match self.endpoint.send(request).await {
            Ok(r) => r,
            Err(e) => {
                let host = self.endpoint.authority();
                return self
                    .fail(
                        id,
                        format!("cannot reach the remote MCP server {host}: {e}"),
                    )
                    .await;
            }
        };
        let status = response.status();
        if method.as_deref() == Some("initialize")
            && status.is_success()
            && let Some(s) = response.headers().get(SESSION)
        {
            *self.session.lock().expect("session lock") = Some(s.clone());
        }
        if status == hyper::StatusCode::NOT_FOUND && self.has_session() {
            self.fail(id, "the remote MCP server ended its session".into())
                .await;
            self.ended.cancel();
            return;
        }
        if status == hyper::StatusCode::ACCEPTED || (status.is_success() && id.is_none()) {
            if method.as_deref() == Some("notifications/initialized") {
                // What the server sends on its own stream before it is
                // open goes nowhere: what the host sends next waits for it
                // (the bridge's loop waits for this post), two seconds at
                // most.
                let _ = tokio::time::timeout(LISTEN_WAIT, self.clone().listen()).await;
            }
            return;
        }
        // A notification or an answer the server refused: nothing waits for
        // what it says (passed on, an error with no id would be answered
        // with another, posted back, and so on without end).
        if id.is_none() {
            return;
        }
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if status.is_success() && streamed {
            return self.stream(response.into_body(), id).await;
        }
        let challenge = response
            .headers()
            .get(hyper::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.chars()
                    .filter(|c| !c.is_control())
                    .take(300)
                    .collect::<String>()
            });
        let location = response
            .headers()
            .get(hyper::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(200).collect::<String>());
        let bytes = match read_capped(response.into_body()).await {
            Ok(b) => b,
            Err(e) => return self.fail(id, e).await,
        };
        let signing_in = status == hyper::StatusCode::UNAUTHORIZED
            || (status == hyper::StatusCode::FORBIDDEN
                && challenge
                    .as_deref()
                    .is_some_and(|c| c.contains("insufficient_scope")));
        match serde_json::from_slice::<Value>(&bytes) {
            // A JSON-RPC answer, whatever the status: a server's error for
            // the request is the request's answer (but for a sign-in, which
            // is said in plughost's words, with what to do).
            Ok(value) if is_answer(&value) && !signing_in => {
                self.pass(answering(value, id.as_ref())).await
            }
            _ if status.is_success() && id.is_none() => {}
            _ => {
                let text = String::from_utf8_lossy(&bytes);
                let text: String = text.chars().take(200).collect();
                let host = self.endpoint.authority();
                let why = match (status.as_u16(), location) {
                    (401, _) if self.bearer.is_some() => format!(
                        "the remote MCP server {host} refused the sign-in (HTTP 401): it expired or was revoked; sign in to the plugin again"
                    ),
                    (401, _) => format!(
                        "the remote MCP server {host} wants a sign-in (HTTP 401): sign in to the plugin first"
                    ),
                    (403, _)
                        if challenge
                            .as_deref()
                            .is_some_and(|c| c.contains("insufficient_scope")) =>
                    {
                        format!(
                            "the remote MCP server {host} asks for more access than the sign-in gave (HTTP 403, {}): sign in to the plugin again",
                            challenge.as_deref().unwrap_or_default()
                        )
                    }
                    (300..=399, Some(to)) => format!(
                        "the remote MCP server {host} redirects to {to} (HTTP {status}), which plughost does not follow: put that URL in the plugin's \"remote\""
                    ),
                    (200..=299, _) => format!(
                        "the remote MCP server {host} answered with what is not JSON-RPC: {}",
                        text.trim()
                    ),
                    _ if text.trim().is_empty() => {
                        format!("the remote MCP server {host} answered HTTP {status}")
                    }
                    _ => format!(
                        "the remote MCP server {host} answered HTTP {status}: {}",
                        text.trim()
                    ),
                };
                let wanted = (signing_in && self.bearer.is_some()).then(|| SignInWanted {
                    status: status.as_u16(),
                    scope: challenge.as_deref().and_then(oauth::challenged_scope),
                });
                match wanted {
                    Some(w) => {
                        let data = json!({"signIn": w});
                        self.fail_with(id, SIGN_IN_WANTED, why, Some(data)).await;
                    }
                    None => self.fail(id, why).await,
                }
            }
        }
    }

    /// The session and revision headers every request after the handshake
    /// carries.
    fn headers(&self, mut request: hyper::http::request::Builder) -> hyper::http::request::Builder {
        if let Some(b) = &self.bearer {
            request = request.header(hyper::header::AUTHORIZATION, b.clone());
        }
        if let Some(s) = self.session.lock().expect("session lock").clone() {
            request = request.header(SESSION, s);
        }
        if let Some(v) = self.version.lock().expect("version lock").clone() {
            request = request.header("mcp-protocol-version", v);
        }
        request
    }

    fn has_session(&self) -> bool {
        self.session.lock().expect("session lock").is_some()
    }

    /// When the host cancels a request, stops posting it and reading its
    /// stream (the cancellation itself still goes to the server).
    fn cancelled(&self, message: &Value) {
        if message.get("method").and_then(Value::as_str) != Some("notifications/cancelled") {
            return;
        }
        let Some(id) = message.pointer("/params/requestId") else {
            return;
        };
        if let Some(task) = self
            .in_flight
            .lock()
            .expect("in-flight lock")
            .remove(&id.to_string())
        {
            task.abort();
        }
    }

    /// Ends the session, if the server named one.
    async fn close(&self) {
        if !self.has_session() {
            return;
        }
        let Ok(request) = self
            .headers(self.endpoint.request(hyper::Method::DELETE))
            .body(Full::new(Bytes::new()))
        else {
            return;
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), self.endpoint.send(request)).await;
    }

    /// Passes a message from the server on, taking the revision agreed on
    /// from an answer to `initialize`.
    async fn pass(&self, mut value: Value) {
        if let Some(tools) = value
            .pointer_mut("/result/tools")
            .and_then(Value::as_array_mut)
        {
            // Pages of one list add up; a tool listed again is learned again.
            let learned = headers::learn(tools);
            self.tools.lock().expect("tools lock").extend(learned);
        }
        if let Some(v) = value
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            *self.version.lock().expect("version lock") = Some(v);
        }
        let _ = self.out.send(value).await;
    }

    /// Answers the request `id` (if it is one) with an error saying `why`.
    async fn fail(&self, id: Option<Value>, why: String) {
        self.fail_with(id, -32603, why, None).await;
    }

    /// Answers the request `id` (if it is one) with the error `code`.
    async fn fail_with(&self, id: Option<Value>, code: i32, why: String, data: Option<Value>) {
        if let Some(id) = id {
            let mut error = json!({"code": code, "message": why});
            if let Some(data) = data {
                error["data"] = data;
            }
            let _ = self
                .out
                .send(json!({"jsonrpc": "2.0", "id": id, "error": error}))
                .await;
        }
    }
}

/// The id of a request, as a key (`None` for a notification or an answer).
fn request_key(message: &Value) -> Option<String> {
    message.get("method")?;
    message.get("id").map(Value::to_string)
}

/// Whether `message` is spoken at 2026-07-28 or later (its `_meta` names
/// the revision), whose requests carry the standard headers.
fn modern(message: &Value) -> bool {
    message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v >= "2026-07-28")
}

/// Whether `value` is an answer (a result or an error), or a batch.
fn is_answer(value: &Value) -> bool {
    value.is_array() || value.get("result").is_some() || value.get("error").is_some()
}

/// A server's error with no id (`null`), in the body that answers the
/// request `id`: that request's answer (a server that could not read it
/// answers `400` so), which would otherwise wait for its deadline.
fn answering(mut value: Value, id: Option<&Value>) -> Value {
    if let Some(id) = id
        && value.get("error").is_some()
        && value.get("id").is_none_or(Value::is_null)
    {
        value["id"] = id.clone();
    }
    value
}

/// A body, up to [`MAX_MESSAGE`].
async fn read_capped(body: hyper::body::Incoming) -> Result<Vec<u8>, String> {
    let limited = http_body_util::Limited::new(body, MAX_MESSAGE);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes().to_vec()),
        Err(e) => Err(format!(
            "the remote MCP server's answer could not be read: {e}"
        )),
    }
}

/// Writes each message as one line.
async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Value>, mut output: W) {
    while let Some(value) = rx.recv().await {
        let values = match value {
            Value::Array(batch) => batch,
            one => vec![one],
        };
        for v in values {
            let mut line = serde_json::to_vec(&v).expect("a Value serializes");
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    }
}
