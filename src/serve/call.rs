//! One `tools/call` of a client, whichever revision it speaks: its progress
//! forwarded, its approval asked through elicitation when the client can
//! answer, its session's slot taken over HTTP, and its result made MCP
//! content.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::mpsc;

use super::content::{error_result, outcome_result};
use super::{McpServer, elicit, gateway};
use crate::approval::Approver;
use crate::host::CallOptions;
use crate::protocol::{Invocation, Scope, Source};

impl McpServer {
    /// Runs a `tools/call` with `client` as the client of what an MCP server
    /// plugin asks during it, until `cancel`: its result as MCP content.
    pub(super) async fn call_tool_as(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        client: Arc<dyn crate::client::CallClient>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> rmcp::model::CallToolResult {
        match self.run_tool(request, context, client, cancel).await {
            Ok(outcome) => outcome_result(&outcome),
            Err(e) => error_result(&e, &self.remedies),
        }
    }

    /// [`Self::call_tool_as`] for a 2026-07-28 client: a server's answer
    /// that the client lacks a capability is that client's `-32021` error,
    /// with the server's data, not a tool error.
    pub(super) async fn call_tool_modern(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        client: Arc<dyn crate::client::CallClient>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
        match self.run_tool(request, context, client, cancel).await {
            Ok(outcome) => Ok(outcome_result(&outcome)),
            Err(crate::CallError::Failed {
                cause: Some(cause), ..
            }) if cause.is::<crate::client::MissingCapability>() => {
                let missing = cause
                    .downcast_ref::<crate::client::MissingCapability>()
                    .expect("checked above");
                Err(rmcp::ErrorData::new(
                    rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    missing.message.clone(),
                    missing.data.clone(),
                ))
            }
            Err(e) => Ok(error_result(&e, &self.remedies)),
        }
    }

    /// The call itself: progress forwarded, approval asked through the
    /// client, the session's slot taken over HTTP.
    async fn run_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        client: Arc<dyn crate::client::CallClient>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<crate::ToolOutcome, crate::CallError> {
        let input = Value::Object(request.arguments.unwrap_or_default());
        let peer = context.peer.clone();
        let progress = context.meta.get_progress_token().map(|token| {
            // One forwarding task per call keeps the notifications in order.
            let (tx, mut rx) = mpsc::unbounded_channel::<crate::Progress>();
            let peer = peer.clone();
            let forwarder = tokio::spawn(async move {
                while let Some(p) = rx.recv().await {
                    let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
                    if let Some(total) = p.total {
                        param = param.with_total(total);
                    }
                    if let Some(message) = p.message {
                        param = param.with_message(message);
                    }
                    let _ = peer.notify_progress(param).await;
                }
            });
            (tx, forwarder)
        });
        let (progress, forwarder) = progress.unzip();
        let logs = self.forward_call_logs(&request.name, &context).await;
        let approver =
            elicit::ElicitApprover::of(&client).map(|a| Arc::new(a) as Arc<dyn Approver>);
        // Over HTTP the session cancels the call when its client is gone, and
        // the call waits for one of the session's slots first.
        let ticket = self.calls.as_ref().and_then(|calls| {
            let parts = context.extensions.get::<hyper::http::request::Parts>()?;
            let session = parts.headers.get("mcp-session-id")?.to_str().ok()?;
            calls.bind(session, &context.id, &cancel)
        });
        let _slot = match &ticket {
            Some(ticket) => tokio::select! {
                slot = ticket.slots().clone().acquire_owned() => Some(slot),
                () = cancel.cancelled() => None,
            },
            None => None,
        };
        if ticket.is_some() && _slot.is_none() {
            return Err(crate::CallError::Cancelled {
                tool: request.name.to_string(),
            });
        }
        let client = Some(client);
        let options = CallOptions {
            client,
            invocation: Invocation {
                request_id: Some(format!("{}", context.id)),
                session_id: self.session_id.clone(),
                source: Some(Source::Mcp),
                scope: Some(Scope::Foreground),
                trace: trace_context(&context),
                ..Invocation::default()
            },
            cancel: Some(cancel),
            on_progress: progress.map(|tx| {
                Arc::new(move |p| drop(tx.send(p))) as Arc<dyn Fn(crate::Progress) + Send + Sync>
            }),
            approver,
        };
        let result = self.host.call_with(&request.name, input, options).await;
        // The call's end dropped the last sender: once the forwarder has sent
        // what is left, every progress notification precedes the result.
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        if let Some(logs) = logs {
            logs.finish().await;
        }
        result
    }
}

impl McpServer {
    /// A 2026-07-28 request that names a log level in its `_meta` gets the
    /// log messages of the server that runs its call, at that level or
    /// above, while the call runs (the revision has no `logging/setLevel`).
    /// The server is asked to log at that level if no session asked for
    /// more. [`CallLogs::finish`] passes on what is still queued, before
    /// the result goes.
    async fn forward_call_logs(
        &self,
        tool: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<CallLogs> {
        let level = context.meta.log_level()?;
        let plugin = self
            .host
            .tools()
            .into_iter()
            .find(|t| t.name == tool)?
            .plugin;
        let mut events = self.host.events();
        if let Ok(Value::String(name)) = serde_json::to_value(level) {
            self.host.raise_log_level(&name).await;
        }
        let peer = context.peer.clone();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let pass_on = move |event: crate::events::HostEvent| {
            let crate::events::HostEvent::ServerLog {
                plugin: from,
                message,
            } = event
            else {
                return None;
            };
            (from == plugin)
                .then(|| gateway::log_params(&from, &message))
                .flatten()
                .filter(|p| gateway::rank(p.level) >= gateway::rank(level))
        };
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    event = events.recv() => match event {
                        Ok(event) => if let Some(params) = pass_on(event) {
                            let _ = peer.notify_logging_message(params).await;
                        },
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(_) => return,
                    },
                    _ = &mut stopped => break,
                }
            }
            // The call ended: what its server said before its result is
            // queued (the wire hands log messages on before the answer).
            while let Ok(event) = events.try_recv() {
                if let Some(params) = pass_on(event) {
                    let _ = peer.notify_logging_message(params).await;
                }
            }
        });
        Some(CallLogs { stop, task })
    }
}

/// The log forwarding of one call.
struct CallLogs {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl CallLogs {
    /// Passes on what is queued, then stops.
    async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// The caller's W3C trace context: the request's `_meta.traceparent` and
/// `tracestate` (MCP's place for them), else over HTTP the request's own
/// `traceparent` and `tracestate` headers. A malformed one is ignored.
fn trace_context(context: &RequestContext<RoleServer>) -> Option<crate::protocol::TraceContext> {
    use crate::protocol::TraceContext;
    let meta = &context.meta.0;
    if let Some(parent) = meta.get_traceparent() {
        return TraceContext::parse(parent, meta.get_tracestate());
    }
    let headers = &context
        .extensions
        .get::<hyper::http::request::Parts>()?
        .headers;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    TraceContext::parse(header("traceparent")?, header("tracestate"))
}
