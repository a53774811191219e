//! An MCP server run as a plugin's worker, spoken to with rmcp's client over
//! the pipes of a process the executor spawned (in its own process group,
//! sandboxed like any plugin).
//!
//! One call at a time per server, as for every worker. Within a call: the
//! progress notifications reach the caller before the result ([`wire`]), the
//! answer is capped like a plugin's stdout, the deadline and cancellation end
//! the call with `notifications/cancelled` (the worker is then stopped by its
//! pool), and a server that exits or closes its stdout fails the call.
//! `notifications/tools/list_changed` makes the session list the tools again
//! and hand the new list to the host.

mod convert;
mod wire;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    ErrorData, Implementation, JsonObject, ProtocolVersion, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, Peer, ServiceError, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, mpsc};

use crate::plugins::mcp_tools::ListedTool;
use crate::protocol::Response;
use crate::run::executor::{Output, Progress, StderrCollector, Stdin, Stop};

/// Receives a server's tool list whenever it changes.
pub(crate) type OnTools = Arc<dyn Fn(Vec<ListedTool>) + Send + Sync>;

/// How much of a server's stderr outside calls is kept, for start-up failures.
const RECENT_STDERR: usize = 8 * 1024;

/// A connected server.
pub(crate) struct McpSession {
    service: RunningService<RoleClient, Client>,
    too_large: Arc<AtomicBool>,
    progress: wire::ProgressSlot,
    stderr: Arc<Mutex<StderrTap>>,
    /// The list_changed task and the stderr drain, stopped with the session.
    _tasks: [Aborting; 2],
}

/// A background task of the session, stopped with it.
struct Aborting(tokio::task::JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a server answered a call with.
pub(crate) enum McpAnswer {
    Result(Response),
    /// A JSON-RPC error instead of a result (an unknown tool, bad params).
    Error(ErrorData),
}

/// Why a server could not be connected.
pub(crate) struct ConnectError {
    pub detail: String,
    pub stderr: String,
}

/// The server's stderr: the call in flight keeps its head and tail; between
/// calls the last few KB are kept for a start-up failure's message.
struct StderrTap {
    call: Option<StderrCollector>,
    recent: StderrCollector,
}

/// The client side of the session: rmcp's handler.
#[derive(Clone)]
struct Client {
    tools_changed: Arc<Notify>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        // No roots: a filesystem server would take the client's roots over
        // the folders its arguments name. The handshake version rmcp defaults
        // to has no `initialize`, so name the newest one that does.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("plughost", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

impl McpSession {
    /// The handshake and the first tool listing, within `timeout`. `exited`
    /// resolves when the server's process exits, which ends the wait at once.
    pub(crate) async fn connect(
        stdin: Stdin,
        stdout: Output,
        stderr: Option<Output>,
        exited: impl Future<Output = ()>,
        timeout: Duration,
        max_message: usize,
        on_tools: OnTools,
    ) -> Result<(McpSession, Vec<ListedTool>), ConnectError> {
        let too_large = Arc::new(AtomicBool::new(false));
        let progress: wire::ProgressSlot = Arc::default();
        let tap = Arc::new(Mutex::new(StderrTap {
            call: None,
            recent: StderrCollector::new(RECENT_STDERR),
        }));
        let drain = Aborting(tokio::spawn(drain_stderr(stderr, tap.clone())));
        let reader = wire::Wire::new(stdout, max_message, too_large.clone(), progress.clone());
        // The wire's own cap fails first; rmcp's keeps its buffer small.
        let transport =
            AsyncRwTransport::new_client(reader, stdin).with_max_line_length(max_message + 1);
        let tools_changed = Arc::new(Notify::new());
        let client = Client {
            tools_changed: tools_changed.clone(),
        };
        let failed = |detail: String| {
            let stderr = tap.lock().expect("stderr tap").recent.render();
            ConnectError { detail, stderr }
        };
        let connect = async {
            let service = client
                .serve(transport)
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            let tools = service
                .list_all_tools()
                .await
                .map_err(|e| format!("listing its tools failed: {e}"))?;
            Ok::<_, String>((service, tools))
        };
        tokio::pin!(exited);
        let (service, tools) = tokio::select! {
            r = tokio::time::timeout(timeout, connect) => match r {
                Ok(Ok(done)) => done,
                Ok(Err(detail)) => return Err(failed(detail)),
                Err(_) => {
                    return Err(failed(format!(
                        "the MCP server did not finish its handshake within {}s",
                        timeout.as_secs_f64()
                    )));
                }
            },
            _ = &mut exited => {
                // Let the drain take what the server said before it went.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(failed("the MCP server exited during its start-up".into()));
            }
        };
        let relist = Aborting(tokio::spawn(relist(
            service.peer().clone(),
            tools_changed,
            on_tools,
        )));
        let session = McpSession {
            service,
            too_large,
            progress,
            stderr: tap,
            _tasks: [relist, drain],
        };
        Ok((session, tools.into_iter().map(convert::listed).collect()))
    }

    /// Asks the server for its tools now (`tools/list`, every page), within
    /// `timeout`.
    pub(crate) async fn list_tools(&self, timeout: Duration) -> Result<Vec<ListedTool>, String> {
        match tokio::time::timeout(timeout, self.service.peer().list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools.into_iter().map(convert::listed).collect()),
            Ok(Err(e)) => Err(format!("listing its tools failed: {e}")),
            Err(_) => Err(format!(
                "the MCP server did not list its tools within {}s",
                timeout.as_secs_f64()
            )),
        }
    }

    /// Whether the connection is gone (the server closed its stdout, or rmcp
    /// gave up on it).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.peer().is_transport_closed()
    }

    /// One `tools/call`. Returns how it ended and the stderr the server wrote
    /// meanwhile (head and tail, `max_stderr` bytes).
    #[expect(clippy::too_many_arguments, reason = "one call's whole context")]
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        deadline: tokio::time::Instant,
        max_stderr: usize,
        cancel: impl Future<Output = ()>,
        exited: impl Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> (Result<McpAnswer, Stop>, String) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        *self.progress.lock().expect("progress slot") = Some(tx);
        self.stderr.lock().expect("stderr tap").call = Some(StderrCollector::new(max_stderr));
        let ended = self
            .exchange(
                tool,
                arguments,
                deadline,
                cancel,
                exited,
                &mut rx,
                on_progress,
            )
            .await;
        *self.progress.lock().expect("progress slot") = None;
        // Progress written before the answer is already in the channel.
        while let Ok(p) = rx.try_recv() {
            on_progress(p);
        }
        let stderr = self
            .stderr
            .lock()
            .expect("stderr tap")
            .call
            .take()
            .map(|c| c.render())
            .unwrap_or_default();
        (ended, stderr)
    }

    #[expect(clippy::too_many_arguments, reason = "one call's whole context")]
    async fn exchange(
        &self,
        tool: &str,
        arguments: JsonObject,
        deadline: tokio::time::Instant,
        cancel: impl Future<Output = ()>,
        exited: impl Future<Output = ()>,
        progress: &mut mpsc::UnboundedReceiver<Progress>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> Result<McpAnswer, Stop> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments),
        ));
        let mut handle = match self
            .service
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(self.lost(e)),
        };
        tokio::pin!(cancel, exited);
        let stop = loop {
            tokio::select! {
                r = &mut handle.rx => {
                    return match r {
                        Ok(Ok(ServerResult::CallToolResult(result))) => {
                            Ok(McpAnswer::Result(convert::response(result)))
                        }
                        Ok(Ok(_)) => Ok(McpAnswer::Error(ErrorData::internal_error(
                            "the server answered tools/call with something else than a tool result",
                            None,
                        ))),
                        Ok(Err(ServiceError::McpError(e))) => Ok(McpAnswer::Error(e)),
                        Ok(Err(e)) => Err(self.lost(e)),
                        Err(_) => Err(self.lost(ServiceError::TransportClosed)),
                    };
                }
                Some(p) = progress.recv() => on_progress(p),
                _ = tokio::time::sleep_until(deadline) => break Stop::Timeout,
                _ = &mut cancel => break Stop::Cancelled,
                _ = &mut exited => {
                    return Err(Stop::Died { stdout: Vec::new(), exited: true });
                }
            }
        };
        let reason = match stop {
            Stop::Timeout => "the call timed out",
            _ => "the caller cancelled the call",
        };
        let _ = tokio::time::timeout(
            Duration::from_millis(200),
            handle.cancel(Some(reason.into())),
        )
        .await;
        Err(stop)
    }

    /// A call that lost its connection: the answer was too large, or the
    /// server went away.
    fn lost(&self, _: ServiceError) -> Stop {
        if self.too_large.load(Ordering::Relaxed) {
            Stop::OutputTooLarge
        } else {
            Stop::Died {
                stdout: Vec::new(),
                exited: false,
            }
        }
    }

    /// Ends the session: the connection closes (the server sees EOF on stdin),
    /// the background tasks stop.
    pub(crate) async fn close(self) {
        let McpSession { service, .. } = self;
        let _ = tokio::time::timeout(Duration::from_secs(1), service.cancel()).await;
    }
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
                match tap.call.as_mut() {
                    Some(call) => call.push(chunk, &|_| {}),
                    None => tap.recent.push(chunk, &|_| {}),
                }
            }
        }
    }
}

/// Lists the tools again whenever the server says they changed.
async fn relist(peer: Peer<RoleClient>, changed: Arc<Notify>, on_tools: OnTools) {
    loop {
        changed.notified().await;
        match peer.list_all_tools().await {
            Ok(tools) => on_tools(tools.into_iter().map(convert::listed).collect()),
            Err(_) if peer.is_transport_closed() => return,
            Err(_) => {}
        }
    }
}
