//! MCP over streamable HTTP, behind a bearer token (one per tenant).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::sessions::{Rules, Sessions};
use super::wire::{self, Checked, Rejection};
use super::{McpServer, revision};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How long a server that was asked to stop waits for the calls in flight
/// (the default call timeout): a load balancer's replica drains, then exits.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// Why the HTTP server could not start serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address is not a loopback one and [`HttpOptions::allow_remote`]
    /// is off.
    #[error("{addr} is not a loopback address, and serving other machines was not allowed")]
    NotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// No tenant (no token) was given.
    #[error("no token to serve")]
    NoTenant,
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What binding it gave.
        #[source]
        source: std::io::Error,
    },
}

/// Why the HTTP server's bearer token cannot be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token file cannot be read.
    #[error("cannot read the token file {}: {source}", path.display())]
    Unreadable {
        /// The token file.
        path: PathBuf,
        /// What reading it gave.
        #[source]
        source: std::io::Error,
    },
    /// The given token file holds fewer than 16 characters.
    #[error("the token in {} is shorter than 16 characters", path.display())]
    TooShort {
        /// The token file.
        path: PathBuf,
    },
    /// The state folder's token file is empty.
    #[error("the token file {} is empty; delete it to get a new token", path.display())]
    Empty {
        /// The token file.
        path: PathBuf,
    },
    /// No random bytes for a new token.
    #[error("cannot read random bytes for a token: {0}")]
    NoRandom(#[source] std::io::Error),
    /// The new token's file (or its folder) cannot be made or written.
    #[error("cannot {what} {}: {source}", path.display())]
    Unwritable {
        /// What failed: `create`, `create the token file`, `write the token file`.
        what: &'static str,
        /// The folder or file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

/// Reads the bearer token from `file`, or from `<state>/http-token`, creating
/// that one (mode 0600) with a random token on first use.
pub fn load_or_create_token(file: Option<&Path>, state_dir: &Path) -> Result<String, TokenError> {
    let unreadable = |path: &Path| {
        let path = path.to_owned();
        move |source| TokenError::Unreadable { path, source }
    };
    let unwritable = |what: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| TokenError::Unwritable { what, path, source }
    };
    if let Some(file) = file {
        let token = std::fs::read_to_string(file).map_err(unreadable(file))?;
        let token = token.trim().to_owned();
        if token.len() < 16 {
            return Err(TokenError::TooShort {
                path: file.to_owned(),
            });
        }
        return Ok(token);
    }
    let path = state_dir.join("http-token");
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => return Err(TokenError::Empty { path }),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(unreadable(&path)(e)),
        Err(_) => {}
    }
    let bytes = crate::random::bytes::<32>().map_err(TokenError::NoRandom)?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(state_dir).map_err(unwritable("create", state_dir))?;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(unwritable("create the token file", &path))?;
    f.write_all(token.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(unwritable("write the token file", &path))?;
    Ok(token)
}

/// How `serve_http` listens and treats its sessions.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The address and port to listen on.
    pub addr: SocketAddr,
    /// Listen on an address other than loopback.
    pub allow_remote: bool,
    /// Browser origins allowed besides the server's own (`http://host:port`).
    pub allowed_origins: Vec<String>,
    /// How long a call outlives the connection that carried its answer, for
    /// the client to resume the stream (`GET` with `Last-Event-ID`); then it is
    /// cancelled and its process tree killed. Zero cancels it at once.
    pub resume_window: Duration,
    /// Call slots one session may hold at once (default: a quarter of the
    /// host's concurrency, at least one).
    pub session_slots: Option<usize>,
    /// A session without a call, an open stream or a request for this long
    /// ends, and its id answers 404.
    pub session_idle: Duration,
    /// Sessions a tenant may hold at once. A new one ends the session idle
    /// longest that has no call or stream; when all are busy, `initialize`
    /// is answered 503. A tenant's 2026-07-28 `subscriptions/listen`
    /// streams are held to the same number; one more is refused.
    pub max_sessions: usize,
    /// Where each tenant's open sessions are counted (its hosts count their
    /// own calls: [`crate::PluginHostBuilder::prometheus`]).
    #[cfg(feature = "prometheus")]
    pub metrics: Option<Arc<crate::observe::Prometheus>>,
}

/// The default resume window.
pub const DEFAULT_RESUME_WINDOW: Duration = Duration::from_secs(10);
/// The default idle timeout of a session.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);
/// The default number of sessions a tenant may hold at once.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

impl HttpOptions {
    /// Loopback only, the default resume window, slots and idle timeout.
    pub fn new(addr: SocketAddr) -> HttpOptions {
        HttpOptions {
            addr,
            allow_remote: false,
            allowed_origins: Vec::new(),
            resume_window: DEFAULT_RESUME_WINDOW,
            session_slots: None,
            session_idle: DEFAULT_SESSION_IDLE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            #[cfg(feature = "prometheus")]
            metrics: None,
        }
    }
}

/// Who a bearer token lets in: one server (and its host) per tenant. With a
/// single token, one tenant.
pub struct Tenant {
    /// Named in the log.
    pub name: String,
    /// The bearer token its requests carry.
    pub token: String,
    /// The server its requests reach.
    pub server: McpServer,
}

/// One tenant's front: its token, its sessions, rmcp's service over them.
struct Front {
    token: Arc<str>,
    sessions: Arc<Sessions>,
    mcp: StreamableHttpService<McpServer, Sessions>,
    max_message_bytes: usize,
    log: super::Log,
    /// The tenant's open `subscriptions/listen` streams, held to `max_listeners`.
    listeners: Arc<tokio::sync::Semaphore>,
    max_listeners: usize,
}

/// Serves the tenants' servers over MCP streamable HTTP at `http://ADDR/mcp`
/// until `stop` resolves. Every request must carry `Authorization: Bearer
/// TOKEN` of a tenant (else 401), which picks the tenant; other paths are 404.
/// A request from a browser page of another origin is refused (403), as the
/// MCP transport rules ask against DNS rebinding, unless that origin is
/// allowed. Binds only to loopback unless `allow_remote`.
///
/// Every POST is read (up to the server's message limit) and checked before
/// rmcp sees it: a body that is not a JSON-RPC message is answered with a
/// JSON-RPC error (`400` without an id, `200` with the request's id), one
/// over the limit with `413` naming it. `DELETE` of a session cancels its
/// calls and answers `204`; an unknown session `404`.
pub async fn serve(
    tenants: Vec<Tenant>,
    options: HttpOptions,
    stop: impl std::future::Future<Output = ()>,
    log: impl Fn(&str) + Send + Sync + 'static,
) -> Result<(), ServeError> {
    let HttpOptions {
        addr,
        allow_remote,
        allowed_origins,
        resume_window,
        session_slots,
        session_idle,
        max_sessions,
        #[cfg(feature = "prometheus")]
        metrics,
    } = options;
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(ServeError::NotLoopback { addr });
    }
    if tenants.is_empty() {
        return Err(ServeError::NoTenant);
    }
    let log: super::Log = Arc::new(log);
    let shutdown = CancellationToken::new();
    let mut fronts = Vec::new();
    let mut hosts = Vec::new();
    let mut names = Vec::new();
    for Tenant {
        name,
        token,
        mut server,
    } in tenants
    {
        super::forward_catalog_changes(&server);
        hosts.push(server.host().clone());
        let slots = session_slots.unwrap_or_else(|| (server.host().concurrency() / 4).max(1));
        let sessions = Sessions::new(
            Rules {
                resume_window,
                slots,
                idle: session_idle,
                max_sessions: max_sessions.max(1),
            },
            server.log.clone(),
        );
        server.calls = Some(sessions.registry().clone());
        #[cfg(feature = "prometheus")]
        if let Some(metrics) = &metrics {
            let registry = Arc::downgrade(sessions.registry());
            metrics.watch_sessions(&name, move || registry.upgrade().map(|r| r.count()));
        }
        let mut config =
            StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token());
        // Bodies are checked (and capped) before rmcp reads them.
        config.max_request_body_bytes = usize::MAX;
        if allow_remote {
            // The bearer token is the gate; the Host check would refuse every remote name.
            config.allowed_hosts.clear();
        }
        let factory = server.clone();
        let mcp =
            StreamableHttpService::new(move || Ok(factory.session()), sessions.clone(), config);
        names.push(name);
        fronts.push(Front {
            token: token.into(),
            sessions,
            mcp,
            max_message_bytes: server.max_message_bytes,
            log: server.log.clone(),
            listeners: Arc::new(tokio::sync::Semaphore::new(max_sessions.max(1))),
            max_listeners: max_sessions.max(1),
        });
    }
    let fronts: Arc<[Front]> = fronts.into();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    log(&format!(
        "serving MCP at http://{bound}/mcp (bearer token required{})",
        if names.len() > 1 {
            format!("; tenants {}", names.join(", "))
        } else {
            String::new()
        }
    ));
    let mut origins = vec![format!("http://{bound}")];
    if bound.ip().is_loopback() {
        origins.push(format!("http://localhost:{}", bound.port()));
    }
    origins.extend(allowed_origins);
    let origins: Arc<[String]> = origins.into();
    let draining = Arc::new(AtomicBool::new(false));
    // Requests being read and handed over (until their answer starts).
    let arriving = Arc::new(AtomicUsize::new(0));
    let drain = CancellationToken::new();
    let connections = TaskTracker::new();
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    // An answer goes out in several writes (headers, then
                    // each event): without this, Nagle's algorithm holds
                    // the last one until the client's delayed ACK, 40 ms.
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Err(e) => {
                    log(&format!("accept failed: {e}"));
                    // Out of descriptors, say: do not spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let (fronts, origins) = (fronts.clone(), origins.clone());
        let (draining, drain, arriving) = (draining.clone(), drain.clone(), arriving.clone());
        connections.spawn(async move {
            let svc = service_fn(move |req: Request<Incoming>| {
                let (fronts, origins, draining, arriving) = (
                    fronts.clone(),
                    origins.clone(),
                    draining.clone(),
                    arriving.clone(),
                );
                async move {
                    if let Some(r) = health(&req, draining.load(Ordering::Relaxed)) {
                        return Ok::<_, Infallible>(r);
                    }
                    // Counted until answered, or dropped (a client gone).
                    let _arriving = Arriving::enter(&arriving);
                    Ok::<_, Infallible>(route(req, &fronts, &origins).await)
                }
            });
            let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = drain.cancelled() => {
                    // The request in flight is answered, then the connection closes.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    // Draining: no new connection (the listener is closed), open ones close
    // after their request in flight, and the calls taken finish (within
    // DRAIN_LIMIT); then the streams that never end (listen, GET) end and
    // the hosts stop.
    drop(listener);
    draining.store(true, Ordering::Relaxed);
    drain.cancel();
    let deadline = tokio::time::Instant::now() + DRAIN_LIMIT;
    let finished = drained(&hosts, &arriving, deadline).await;
    log(&if finished {
        "drained: every call in flight was answered".to_owned()
    } else {
        format!(
            "drain limit of {}s reached: stopping the calls still in flight",
            DRAIN_LIMIT.as_secs()
        )
    });
    // The answers of the last calls are on their way to their streams:
    // connections get a moment to send them and close.
    connections.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), connections.wait()).await;
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(2), connections.wait()).await;
    for host in hosts {
        host.shutdown();
    }
    Ok(())
}

/// One request being handed over, counted while it lives.
struct Arriving(Arc<AtomicUsize>);

impl Arriving {
    fn enter(count: &Arc<AtomicUsize>) -> Arriving {
        count.fetch_add(1, Ordering::SeqCst);
        Arriving(count.clone())
    }
}

impl Drop for Arriving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits (until `deadline`) for the calls taken to end: no request is
/// being handed over and no host has a call in flight, twice in a row a
/// moment apart (a request handed over just now has its call started by
/// then). Whether they ended in time.
async fn drained(
    hosts: &[Arc<crate::PluginHost>],
    arriving: &AtomicUsize,
    deadline: tokio::time::Instant,
) -> bool {
    const SETTLE: Duration = Duration::from_millis(100);
    let mut quiet = 0;
    while quiet < 2 {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        let mut idle = arriving.load(Ordering::SeqCst) == 0;
        for host in hosts {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            idle &= host.until_idle(Duration::ZERO).await;
            if !idle {
                host.until_idle(left).await;
            }
        }
        quiet = if idle { quiet + 1 } else { 0 };
        tokio::time::sleep(SETTLE).await;
    }
    true
}

/// The answers to a load balancer's or an orchestrator's probes, which need
/// no token and say nothing about plugins: `GET /healthz` (the process
/// serves) and `GET /readyz` (it takes requests: `503` once it drains).
fn health(req: &Request<Incoming>, draining: bool) -> Option<Reply> {
    if req.method() != Method::GET {
        return None;
    }
    match req.uri().path() {
        "/healthz" => Some(plain(StatusCode::OK, "ok")),
        "/readyz" if draining => Some(plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "draining: this server is stopping",
        )),
        "/readyz" => Some(plain(StatusCode::OK, "ready")),
        _ => None,
    }
}

type Reply = Response<BoxBody<Bytes, Infallible>>;

async fn route(req: Request<Incoming>, fronts: &[Front], origins: &[String]) -> Reply {
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !origins.iter().any(|o| o.as_bytes() == origin.as_bytes())
    {
        return plain(
            StatusCode::FORBIDDEN,
            "forbidden: this origin may not use the MCP endpoint (the server allows the origins it was told to)",
        );
    }
    if req.uri().path() != "/mcp" {
        return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    let Some(front) = tenant(&req, fronts) else {
        let mut r = plain(
            StatusCode::UNAUTHORIZED,
            "unauthorized: send Authorization: Bearer TOKEN",
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    };
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(SessionId::from);
    match *req.method() {
        Method::DELETE => match session {
            None => plain(
                StatusCode::BAD_REQUEST,
                "bad request: DELETE needs the Mcp-Session-Id header",
            ),
            Some(id) if front.sessions.end(&id).await => {
                (front.log)(&format!("http: session {id} deleted"));
                let mut r = Response::new(Full::new(Bytes::new()).boxed());
                *r.status_mut() = StatusCode::NO_CONTENT;
                r
            }
            Some(_) => plain(StatusCode::NOT_FOUND, "not found: no such session"),
        },
        Method::POST => post(req, front, session.is_some()).await,
        _ => front.mcp.handle(req).await,
    }
}

/// Reads and checks a POST's message, then hands it to rmcp.
async fn post(req: Request<Incoming>, front: &Front, has_session: bool) -> Reply {
    let (parts, mut body) = req.into_parts();
    let limit = front.max_message_bytes;
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return plain(StatusCode::BAD_REQUEST, "bad request: the body broke off");
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if bytes.len() + data.len() > limit {
            bytes.extend_from_slice(
                &data[..(64 * 1024usize).saturating_sub(bytes.len()).min(data.len())],
            );
            return refuse(
                front,
                StatusCode::PAYLOAD_TOO_LARGE,
                &Rejection::too_large(&bytes, limit),
            );
        }
        bytes.extend_from_slice(&data);
    }
    // A session-less request at 2026-07-28 or later: answered on its own.
    let modern = !has_session && {
        let header = parts
            .headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok());
        let body = serde_json::from_slice(&bytes).unwrap_or_default();
        if revision::speaks_2026(header, &body)
            && let Some(method) = body["method"]
                .as_str()
                .filter(|m| revision::REMOVED.contains(m))
        {
            return refuse(
                front,
                StatusCode::NOT_FOUND,
                &Rejection {
                    id: body["id"].clone(),
                    code: wire::METHOD_NOT_FOUND,
                    message: format!("Method not found: {method} is not part of MCP 2026-07-28"),
                },
            );
        }
        revision::speaks_2026(header, &body)
    };
    match wire::check(&bytes) {
        Checked::Reject(r) => {
            let status = if r.id.is_null() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            refuse(front, status, &r)
        }
        Checked::Drop(why) => refuse(
            front,
            StatusCode::BAD_REQUEST,
            &Rejection {
                id: serde_json::Value::Null,
                code: wire::INVALID_REQUEST,
                message: format!("Invalid Request: {why}"),
            },
        ),
        Checked::Message(m) => {
            let is_initialize = matches!(
                m.as_ref(),
                rmcp::model::ClientJsonRpcMessage::Request(r)
                    if matches!(r.request, rmcp::model::ClientRequest::InitializeRequest(_))
            );
            // The id a refusal answers with.
            let id = || match m.as_ref() {
                rmcp::model::ClientJsonRpcMessage::Request(r) => r.id.clone().into_json_value(),
                _ => serde_json::Value::Null,
            };
            if !has_session && !is_initialize && !modern {
                // rmcp would serve it statelessly, outside any session and its limits.
                return refuse(
                    front,
                    StatusCode::BAD_REQUEST,
                    &Rejection {
                        id: id(),
                        code: wire::INVALID_REQUEST,
                        message: "Bad Request: send initialize first, then the Mcp-Session-Id header it returns with every request".to_owned(),
                    },
                );
            }
            if is_initialize
                && !has_session
                && let Err(limit) = front.sessions.make_room().await
            {
                return busy(
                    front,
                    id(),
                    format!(
                        "all {limit} sessions this server keeps have a call or a stream open; close sessions you no longer use (DELETE)"
                    ),
                );
            }
            // A listen stream holds its connection for as long as the
            // client keeps it: a tenant holds as many as it may sessions.
            let listens = matches!(
                m.as_ref(),
                rmcp::model::ClientJsonRpcMessage::Request(r)
                    if matches!(r.request, rmcp::model::ClientRequest::SubscriptionsListenRequest(_))
            );
            let open = match listens {
                true => match front.listeners.clone().try_acquire_owned() {
                    Ok(open) => Some(open),
                    Err(_) => {
                        return busy(
                            front,
                            id(),
                            format!(
                                "{} subscriptions/listen streams are open, the most one token may hold; close one you no longer use",
                                front.max_listeners
                            ),
                        );
                    }
                },
                false => None,
            };
            let reply = front
                .mcp
                .handle(Request::from_parts(parts, Full::new(Bytes::from(bytes))))
                .await;
            match open {
                // The stream's place is given back when its body is dropped.
                Some(open) => reply.map(|body| {
                    body.map_frame(move |frame| {
                        let _ = &open;
                        frame
                    })
                    .boxed()
                }),
                None => reply,
            }
        }
    }
}

/// `503` with `-32000`: `why` the server is busy, and to try again later.
fn busy(front: &Front, id: serde_json::Value, why: String) -> Reply {
    refuse(
        front,
        StatusCode::SERVICE_UNAVAILABLE,
        &Rejection {
            id,
            code: wire::SERVER_BUSY,
            message: format!("Server busy: {why}, or try again later"),
        },
    )
}

/// A JSON-RPC error as the whole answer, logged.
fn refuse(front: &Front, status: StatusCode, r: &Rejection) -> Reply {
    (front.log)(&r.log_line("http"));
    let mut reply = Response::new(Full::new(Bytes::from(r.to_json())).boxed());
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    reply
}

fn plain(status: StatusCode, message: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(Full::new(Bytes::from_static(message.as_bytes())).boxed());
    *r.status_mut() = status;
    r
}

/// The tenant whose token the request carries. Every token is compared, in
/// constant time, so neither a token's bytes nor which tenant matched can be
/// learned from response times.
fn tenant<'a, B>(req: &Request<B>, fronts: &'a [Front]) -> Option<&'a Front> {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))?;
    let mut found = None;
    for front in fronts {
        if same(given.as_bytes(), front.token.as_bytes()) {
            found = Some(front);
        }
    }
    found
}

fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
