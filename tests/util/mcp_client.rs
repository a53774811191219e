//! A real MCP client (rmcp's) driving `plughost serve` over stdio, for the
//! tests of the MCP front end.
#![allow(dead_code, reason = "each test module uses a part of the client")]

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RequestHandle, RunningService,
};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::util::Sandbox;

/// A client that records progress and list_changed, and answers elicitations.
#[derive(Clone)]
pub struct TestClient {
    pub progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    pub list_changed: mpsc::UnboundedSender<()>,
    pub approve: Arc<Mutex<Option<bool>>>,
    pub asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.approve.lock().unwrap().is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("plughost-tests", "0.0.0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.lock().unwrap().push(message);
        let yes = self.approve.lock().unwrap().unwrap_or(false);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "approve": yes })))
    }
}

pub struct Session {
    pub client: RunningService<RoleClient, TestClient>,
    pub progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    pub list_changed: mpsc::UnboundedReceiver<()>,
    pub asked: Arc<Mutex<Vec<String>>>,
}

impl Session {
    /// The next progress notification, within 5 s. rmcp's client handles
    /// each notification in a task of its own, so they may trail the
    /// response and reach the handler in any order.
    pub async fn next_progress(&mut self) -> ProgressNotificationParam {
        tokio::time::timeout(std::time::Duration::from_secs(5), self.progress.recv())
            .await
            .expect("progress arrives")
            .expect("the client is running")
    }
}

/// Starts `plughost serve` on the sandbox and connects a client. `approve`:
/// `None` for a client without elicitation, `Some(answer)` with it.
pub async fn connect(sandbox: &Sandbox, approve: Option<bool>) -> Session {
    connect_command(serve(sandbox), approve).await
}

/// `plughost serve` on the sandbox's folders.
fn serve(sandbox: &Sandbox) -> tokio::process::Command {
    tokio::process::Command::new(crate::util::plughost()).configure(|c| {
        c.arg("--plugins-dir")
            .arg(sandbox.plugins())
            .arg("--state-dir")
            .arg(sandbox.state())
            .arg("serve");
    })
}

/// Connects a client to the MCP server that `cmd` starts on stdio.
pub async fn connect_command(cmd: tokio::process::Command, approve: Option<bool>) -> Session {
    connect_at(cmd, approve, None).await
}

/// Like [`connect`], as a 2026-07-28 client: `server/discover`, no
/// handshake, and the server's questions come in `input_required` rounds
/// (rmcp's `call_tool` answers them through the handler).
pub async fn connect_2026(sandbox: &Sandbox, approve: Option<bool>) -> Session {
    let discover = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    connect_at(serve(sandbox), approve, Some(discover)).await
}

async fn connect_at(
    cmd: tokio::process::Command,
    approve: Option<bool>,
    lifecycle: Option<rmcp::service::ClientLifecycleMode>,
) -> Session {
    let (ptx, progress) = mpsc::unbounded_channel();
    let (ltx, list_changed) = mpsc::unbounded_channel();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let handler = TestClient {
        progress: ptx,
        list_changed: ltx,
        approve: Arc::new(Mutex::new(approve)),
        asked: asked.clone(),
    };
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = match lifecycle {
        None => handler.serve(transport).await,
        Some(lifecycle) => {
            use rmcp::ClientServiceExt;
            handler.serve_with_lifecycle(transport, lifecycle).await
        }
    }
    .expect("the MCP session starts");
    Session {
        client,
        progress,
        list_changed,
        asked,
    }
}

pub fn call(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().unwrap().clone())
}

/// Sends a `tools/call` (no arguments) and returns its handle: for progress
/// tokens and cancellation, which `call_tool` does not expose.
pub async fn start_call(
    s: &Session,
    tool: &str,
    options: PeerRequestOptions,
) -> RequestHandle<RoleClient> {
    start_call_with(s, tool, json!({}), options).await
}

/// [`start_call`] with arguments.
pub async fn start_call_with(
    s: &Session,
    tool: &str,
    args: Value,
    options: PeerRequestOptions,
) -> RequestHandle<RoleClient> {
    s.client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(call(tool, args))),
            options,
        )
        .await
        .unwrap()
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
