//! An MCP server run as a plugin, spoken to with rmcp's client over the
//! pipes of a process the executor spawned (in its own process group,
//! sandboxed like any plugin).
//!
//! One connection carries many requests at once, as MCP allows: tool calls,
//! resource reads, prompt gets, completions, subscriptions, each with its own
//! deadline, cancellation and answer cap. Within a request, the progress
//! notifications reach the caller before the result ([`wire`]); the deadline
//! and cancellation end it with `notifications/cancelled`; an answer over
//! the cap fails that request alone; a server that exits or closes its stdout
//! fails every request in flight. The server's own requests (sampling,
//! elicitation, roots) go to the client of the call in flight, and its log
//! messages and resource updates to the host ([`client`]). A list_changed
//! notification (tools, resources, prompts) makes the session list what the
//! server offers again and hand it to the host.
//!
//! A server is first asked `server/discover` ([`probe`]): one that speaks
//! 2026-07-28 is spoken to at that revision ([`modern`]), any other gets the
//! 2025-11-25 handshake it expects.

mod client;
mod convert;
mod modern;
mod probe;
mod request;
mod roots;
mod wire;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientRequest, ErrorData, ProtocolVersion, ServerResult};
use rmcp::service::{ClientLifecycleMode, RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientServiceExt, Peer};
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

pub(crate) use client::Notices;
use client::{Client, Clients};
pub(crate) use convert::response;
pub(crate) use roots::Granted;

use crate::client::CallClient;
use crate::plugins::mcp_listing::Listing;
use crate::run::executor::{Output, Progress, StderrCollector, Stdin};

/// Receives a server's listing whenever it changes (tools, resources, prompts).
pub(crate) type OnListing = Arc<dyn Fn(Listing) + Send + Sync>;

/// How much of a server's stderr outside requests is kept, for start-up failures.
const RECENT_STDERR: usize = 8 * 1024;

/// A connected server.
pub(crate) struct McpSession {
    service: RunningService<RoleClient, Client>,
    clients: Arc<Clients>,
    progress: wire::ProgressRoutes,
    /// Set when an oversized answer could not be tied to its request, so the
    /// connection ended.
    broken: Arc<AtomicBool>,
    stderr: Arc<Mutex<StderrTap>>,
    next_request: AtomicU64,
    /// Set when the server speaks 2026-07-28.
    modern: Option<Arc<modern::Modern>>,
    /// The relisting, the stderr drain and (2026-07-28) the listen stream,
    /// stopped with the session.
    _tasks: Vec<Aborting>,
}

/// A background task of the session, stopped with it.
struct Aborting(tokio::task::JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a server answered a request with.
pub(crate) enum McpAnswer {
    Result(Box<ServerResult>),
    /// A JSON-RPC error instead of a result (an unknown tool, bad params).
    Error(ErrorData),
}

/// Why a server could not be connected.
pub(crate) struct ConnectError {
    pub detail: String,
    pub stderr: String,
    /// The server's own error, when it answered a request of the start with
    /// one (a remote server's bridge asks for a new sign-in this way).
    pub server_error: Option<rmcp::model::ErrorData>,
    /// It exited after the `server/discover` probe went unanswered: a
    /// server of an older SDK that ends on a method it does not know, which
    /// the 2025-11-25 handshake alone (`Connect::known_legacy`) may start.
    pub ended_on_probe: bool,
}

/// What one connection needs from the host: where notifications go, what the
/// server is told the client can do, and who started it.
#[derive(Clone)]
pub(crate) struct Connect {
    pub timeout: Duration,
    pub max_message: usize,
    pub notices: Arc<dyn Notices>,
    pub on_listing: OnListing,
    /// The client of the call that starts the server: it answers what the
    /// server asks before any call is in flight.
    pub starter: Option<Arc<dyn CallClient>>,
    /// The server spoke 2025-11-25 when it last listed what it offers: it
    /// gets the handshake at once, without the `server/discover` probe.
    pub known_legacy: bool,
    /// What the server's `roots/list` is answered from: the plugin's grants.
    pub roots: Granted,
}

/// The server's stderr: each request in flight keeps what came while it ran
/// (head and tail); the last few KB are kept for a start-up failure.
struct StderrTap {
    requests: std::collections::HashMap<u64, StderrCollector>,
    recent: StderrCollector,
}

/// One request to a server, as the host asks it.
pub(crate) struct Ask<'a> {
    pub request: ClientRequest,
    pub deadline: tokio::time::Instant,
    pub max_stderr: usize,
    pub on_progress: &'a (dyn Fn(Progress) + Send + Sync),
    /// The client of this call: it answers what the server asks meanwhile.
    pub client: Option<Arc<dyn CallClient>>,
}

impl McpSession {
    /// The handshake and the first listing, within `timeout`. `exited`
    /// resolves when the server's process exits, which ends the wait at once.
    pub(crate) async fn connect(
        mut stdin: Stdin,
        stdout: Output,
        stderr: Option<Output>,
        exited: impl Future<Output = ()>,
        connect: Connect,
    ) -> Result<(McpSession, Listing), ConnectError> {
        let progress: wire::ProgressRoutes = Arc::default();
        let broken = Arc::new(AtomicBool::new(false));
        let tap = Arc::new(Mutex::new(StderrTap {
            requests: Default::default(),
            recent: StderrCollector::new(RECENT_STDERR),
        }));
        let drain = Aborting(tokio::spawn(drain_stderr(stderr, tap.clone())));
        let mut reader = wire::Wire::new(
            stdout,
            connect.max_message,
            progress.clone(),
            broken.clone(),
        )
        .with_logs(connect.notices.clone());
        let changed = Arc::new(Notify::new());
        let clients = Clients::starting(connect.starter.as_ref(), connect.roots.clone());
        let client = Client {
            clients: clients.clone(),
            notices: connect.notices.clone(),
            changed: changed.clone(),
        };
        // The probe went unanswered (a server that then exits ended on it).
        let probe_unanswered = AtomicBool::new(false);
        let failed = |Unlisted {
                          detail,
                          server_error,
                      },
                      exited: bool| {
            let stderr = tap.lock().expect("stderr tap").recent.render();
            ConnectError {
                detail,
                stderr,
                server_error,
                ended_on_probe: exited && probe_unanswered.load(Ordering::Relaxed),
            }
        };
        let handshake = async {
            let spoken = match connect.known_legacy {
                true => probe::Spoken::Legacy,
                false => {
                    // Unanswered from the moment it is sent: a server that
                    // exits on it may be seen gone before the probe gives up.
                    probe_unanswered.store(true, Ordering::Relaxed);
                    let spoken = probe::probe(&mut stdin, &mut reader, connect.timeout / 2).await;
                    probe_unanswered.store(spoken == probe::Spoken::Legacy, Ordering::Relaxed);
                    spoken
                }
            };
            let lifecycle = match spoken {
                probe::Spoken::Modern => ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
                probe::Spoken::Legacy => ClientLifecycleMode::Initialize,
            };
            // The wire's own cap applies first; rmcp's keeps its buffer bounded.
            let transport = AsyncRwTransport::new_client(reader, stdin)
                .with_max_line_length(connect.max_message + 64 * 1024);
            let service = client
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| {
                    let server_error = match &e {
                        rmcp::service::ClientInitializeError::JsonRpcError(e) => Some(e.clone()),
                        _ => None,
                    };
                    Unlisted {
                        detail: handshake_failed(e),
                        server_error,
                    }
                })?;
            // What a server offers is listed when it says it changed, and
            // approval pins it: a cached list would hide a change.
            service
                .peer()
                .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
                .await;
            let listing = list(service.peer()).await?;
            // A 2026-07-28 server tells its changes on a stream opened now,
            // before the first call (one it refuses is asked for again later).
            let modern = speaks_2026(service.peer()).then(|| Arc::new(modern::Modern::new()));
            let stream = match &modern {
                Some(m) => modern::open(service.peer(), m).await.ok(),
                None => None,
            };
            Ok::<_, Unlisted>((service, listing, modern, stream))
        };
        tokio::pin!(exited);
        let (service, listing, modern, stream) = tokio::select! {
            r = tokio::time::timeout(connect.timeout, handshake) => match r {
                Ok(Ok(done)) => done,
                Ok(Err(detail)) => {
                    // A closed pipe: the process is exiting, or gone.
                    let gone = tokio::time::timeout(Duration::from_millis(200), &mut exited)
                        .await
                        .is_ok();
                    return Err(failed(detail, gone));
                }
                Err(_) => {
                    return Err(failed(
                        Unlisted::from(format!(
                            "the MCP server did not finish its handshake within {}s",
                            connect.timeout.as_secs_f64()
                        )),
                        false,
                    ));
                }
            },
            _ = &mut exited => {
                // Let the drain take what the server said before it went.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(failed(
                    Unlisted::from("the MCP server exited during its start-up".to_owned()),
                    true,
                ));
            }
        };
        let mut tasks = vec![drain];
        if let Some(modern) = &modern {
            tasks.push(Aborting(tokio::spawn(modern::listen(
                service.peer().clone(),
                modern.clone(),
                stream,
                changed.clone(),
                connect.notices.clone(),
            ))));
        }
        tasks.push(Aborting(tokio::spawn(relist(
            service.peer().clone(),
            changed,
            connect.on_listing,
        ))));
        let session = McpSession {
            service,
            clients,
            progress,
            broken,
            stderr: tap,
            next_request: AtomicU64::new(0),
            modern,
            _tasks: tasks,
        };
        Ok((session, listing))
    }

    /// Whether the connection is gone (the server closed its stdout, or rmcp
    /// gave up on it).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.peer().is_transport_closed()
    }

    /// What the server offers now: tools, and the resources, templates and
    /// prompts of the capabilities it declared, within `timeout`.
    pub(crate) async fn list(&self, timeout: Duration) -> Result<Listing, String> {
        match tokio::time::timeout(timeout, list(self.service.peer())).await {
            Ok(listed) => listed.map_err(|u| u.detail),
            Err(_) => Err(format!(
                "the MCP server did not list what it offers within {}s",
                timeout.as_secs_f64()
            )),
        }
    }

    /// Ends the session: the connection closes (the server sees EOF on its
    /// stdin), the background tasks stop.
    pub(crate) fn close(&self) {
        self.service.cancellation_token().cancel();
    }
}

/// Whether `peer`'s server answered `server/discover` (2026-07-28 has no
/// `initialize`).
fn speaks_2026(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|i| !i.protocol_version.has_initialize())
}

/// Why a start or a listing failed: in words, and the server's own error
/// when it answered with one.
struct Unlisted {
    detail: String,
    server_error: Option<rmcp::model::ErrorData>,
}

impl From<String> for Unlisted {
    fn from(detail: String) -> Unlisted {
        Unlisted {
            detail,
            server_error: None,
        }
    }
}

impl Unlisted {
    /// Listing `what` failed with `e`.
    fn of(what: &str, e: rmcp::ServiceError) -> Unlisted {
        let detail = format!("listing its {what} failed: {e}");
        let server_error = match e {
            rmcp::ServiceError::McpError(e) => Some(e),
            _ => None,
        };
        Unlisted {
            detail,
            server_error,
        }
    }
}

/// Everything `peer`'s server offers: its tools, and the resources,
/// templates and prompts of the capabilities it declared.
async fn list(peer: &Peer<RoleClient>) -> Result<Listing, Unlisted> {
    let info = peer.peer_info();
    let capabilities = info
        .as_ref()
        .map(|i| serde_json::to_value(&i.capabilities).unwrap_or_default())
        .unwrap_or_default();
    let instructions = info.as_ref().and_then(|i| i.instructions.clone());
    let protocol_version = info.as_ref().map(|i| i.protocol_version.to_string());
    let offers = |c: &str| capabilities.get(c).is_some();
    let tools = if offers("tools") {
        peer.list_all_tools()
            .await
            .map_err(|e| Unlisted::of("tools", e))?
    } else {
        Vec::new()
    };

    let (resources, resource_templates) = if offers("resources") {
        let resources = peer
            .list_all_resources()
            .await
            .map_err(|e| Unlisted::of("resources", e))?;
        // A server may offer resources without templates: that is no failure.
        let templates = peer.list_all_resource_templates().await.unwrap_or_default();
        (objects(resources), objects(templates))
    } else {
        (Vec::new(), Vec::new())
    };
    let prompts = if offers("prompts") {
        objects(
            peer.list_all_prompts()
                .await
                .map_err(|e| Unlisted::of("prompts", e))?,
        )
    } else {
        Vec::new()
    };
    Ok(Listing {
        tools: tools.into_iter().map(convert::listed).collect(),
        resources,
        resource_templates,
        prompts,
        instructions,
        capabilities,
        protocol_version,
    })
}

/// Items of rmcp's model as the JSON objects the server sent.
fn objects<T: serde::Serialize>(items: Vec<T>) -> Vec<serde_json::Map<String, serde_json::Value>> {
    items
        .into_iter()
        .filter_map(|i| match serde_json::to_value(i) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect()
}

/// Reads the server's stderr to its end, so it never blocks on a full pipe.
async fn drain_stderr(stderr: Option<Output>, tap: Arc<Mutex<StderrTap>>) {
    let Some(mut stderr) = stderr else { return };
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut tap = tap.lock().expect("stderr tap");
                let chunk = &buf[..n];
                tap.recent.push(chunk, &|_| {});
                for c in tap.requests.values_mut() {
                    c.push(chunk, &|_| {});
                }
            }
        }
    }
}

/// Lists again whenever the server says its tools, resources or prompts changed.
async fn relist(peer: Peer<RoleClient>, changed: Arc<Notify>, on_listing: OnListing) {
    loop {
        changed.notified().await;
        match list(&peer).await {
            Ok(listing) => on_listing(listing),
            Err(_) if peer.is_transport_closed() => return,
            Err(_) => {}
        }
    }
}

/// Why the handshake failed, in words for the user: a transport error is
/// its cause alone (rmcp's own text names its Rust types).
fn handshake_failed(e: rmcp::service::ClientInitializeError) -> String {
    match e {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => format!(
            "the MCP handshake failed: the server's stdio closed ({})",
            error.error
        ),
        e => format!("the MCP handshake failed: {e}"),
    }
}
