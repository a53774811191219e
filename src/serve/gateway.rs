//! The front end of the MCP gateway: what the MCP servers run as plugins
//! offer beyond tool calls, served to every session as the servers sent it
//! (see `host/gateway.rs` for where each request goes).
//!
//! - `resources/list`, `resources/templates/list` and `prompts/list` are the
//!   host's merged lists, in pages of [`PAGE`]; `resources/read`,
//!   `prompts/get` and `completion/complete` are sent to the owning server
//!   with the request's cancellation and its session as the client.
//! - `resources/subscribe` is kept per session; an update reaches the
//!   sessions subscribed to its URI.
//! - A profile applies to every notification about one plugin: the log
//!   messages, resource updates and `list_changed` of a plugin it leaves out
//!   reach none of its clients (see `own_plugin`).
//! - `logging/setLevel` is kept per session, and the most verbose level any
//!   session asked for goes to the servers; a log message reaches each session
//!   whose level lets it through, its `logger` naming the plugin.
//! - A change of what the servers offer becomes the matching `list_changed`.
//! - Tools keep the server's metadata (title, annotations, output schema,
//!   execution, icons, `_meta`); plughost only makes the annotations
//!   stricter: a server's `readOnlyHint: true` becomes false when its plugin
//!   has a write, network or `shell:exec` grant, and `openWorldHint` is
//!   false when the sandbox keeps it off the network.
#![expect(
    deprecated,
    reason = "sampling, roots, logging and resources/subscribe are the 2025-11-25 protocol's, which MCP clients and servers speak; rmcp marks them for its successor"
)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ServerNotification};
use rmcp::service::{Peer, RequestContext};

use super::McpServer;
use super::downstream::Downstream;
use crate::client::CallClient;
use crate::events::HostEvent;

/// What one session asked for.
#[derive(Default)]
pub(super) struct SessionState {
    pub(super) peer: OnceLock<Peer<RoleServer>>,
    pub(super) log_level: Mutex<Option<LoggingLevel>>,
    pub(super) subscriptions: Mutex<HashSet<String>>,
}

impl SessionState {
    pub(super) fn is_closed(&self) -> bool {
        self.peer.get().is_some_and(|p| p.is_transport_closed())
    }
}

impl McpServer {
    /// The client of a request of this session.
    pub(super) fn downstream(&self, context: &RequestContext<RoleServer>) -> Arc<dyn CallClient> {
        Arc::new(Downstream {
            peer: context.peer.clone(),
            session: self.session_id.clone().unwrap_or_default(),
            request: Some(context.id.clone()),
        })
    }

    /// Registers this session for the notifications every session gets.
    pub(super) fn register(&self, peer: Peer<RoleServer>) {
        let _ = self.state.peer.set(peer);
        let mut sessions = self.sessions.lock().expect("sessions lock");
        // The sessions that ended go now: over HTTP they come and go all day.
        sessions.retain(|s| !s.is_closed());
        sessions.push(self.state.clone());
    }

    /// The sessions that are still there.
    fn live(&self) -> Vec<Arc<SessionState>> {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        sessions.retain(|s| !s.is_closed());
        sessions.clone()
    }

    /// Passes one host event on to the sessions it concerns: none when it
    /// is about a plugin the profile leaves out (see [`own_plugin`]).
    pub(super) async fn forward(&self, event: &HostEvent) {
        if let Some(plugin) = own_plugin(event)
            && !self.plugin_filter()(plugin)
        {
            return;
        }
        for change in changes(event) {
            match change {
                Change::Log(plugin, message) => self.forward_log(&plugin, &message).await,
                change => {
                    let Some(notification) = change.notification() else {
                        continue;
                    };
                    for s in self.live() {
                        let wanted = match &change {
                            Change::Updated(uri) => {
                                s.subscriptions.lock().expect("session lock").contains(uri)
                            }
                            _ => true,
                        };
                        if let (true, Some(peer)) = (wanted, s.peer.get()) {
                            let _ = peer.send_notification(notification.clone()).await;
                        }
                    }
                }
            }
        }
    }

    /// A server's log message, to each session whose level lets it through,
    /// its `logger` naming the plugin.
    async fn forward_log(&self, plugin: &str, message: &serde_json::Value) {
        let Some(params) = log_params(plugin, message) else {
            return;
        };
        for s in self.live() {
            let level = *s.log_level.lock().expect("session lock");
            let passes = level.is_none_or(|l| rank(params.level) >= rank(l));
            if let (true, Some(peer)) = (passes, s.peer.get()) {
                let _ = peer.notify_logging_message(params.clone()).await;
            }
        }
    }
}

/// A server's log message as a client gets it: its `logger` names the
/// plugin first. `None` for a message that is not one.
pub(super) fn log_params(
    plugin: &str,
    message: &serde_json::Value,
) -> Option<LoggingMessageNotificationParam> {
    let mut params =
        serde_json::from_value::<LoggingMessageNotificationParam>(message.clone()).ok()?;
    params.logger = Some(match params.logger {
        Some(logger) => format!("{plugin}/{logger}"),
        None => plugin.to_owned(),
    });
    Some(params)
}

/// What a host event changes for a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Change {
    /// The tools listed may differ.
    Tools,
    /// The prompts listed may differ.
    Prompts,
    /// The resources listed may differ.
    Resources,
    /// A resource's content changed.
    Updated(String),
    /// A server's log message: its plugin and params.
    Log(String, serde_json::Value),
}

impl Change {
    /// Every list may differ: what a change of the catalog or of an
    /// approval means, and what a stream that fell behind must assume.
    pub(super) fn every_list() -> Vec<Change> {
        vec![Change::Tools, Change::Prompts, Change::Resources]
    }

    /// The notification that says so; none for a log message, which goes
    /// by each session's level.
    pub(super) fn notification(&self) -> Option<ServerNotification> {
        Some(match self {
            Change::Tools => ServerNotification::ToolListChangedNotification(Default::default()),
            Change::Prompts => {
                ServerNotification::PromptListChangedNotification(Default::default())
            }
            Change::Resources => {
                ServerNotification::ResourceListChangedNotification(Default::default())
            }
            Change::Updated(uri) => ServerNotification::ResourceUpdatedNotification(
                rmcp::model::ResourceUpdatedNotification::new(
                    rmcp::model::ResourceUpdatedNotificationParam::new(uri.clone()),
                ),
            ),
            Change::Log(..) => return None,
        })
    }
}

/// What `event` changes for clients. Worker churn, notices, denials and an
/// approval asked or declined change nothing offered (a server's new listing
/// comes as a plugin update): they must not make every client list again. A
/// change of the catalog or of an approval may change any list; a tool
/// withheld changes the tools.
pub(super) fn changes(event: &HostEvent) -> Vec<Change> {
    match event {
        HostEvent::Notice(_)
        | HostEvent::WorkerStarted { .. }
        | HostEvent::WorkerStopped { .. }
        | HostEvent::SandboxDenied { .. }
        | HostEvent::HostRefused { .. }
        | HostEvent::SecretPlaced { .. }
        | HostEvent::ApprovalAsked { .. }
        | HostEvent::ApprovalDeclined { .. } => vec![],
        HostEvent::ToolWithheld { .. } => vec![Change::Tools],
        HostEvent::ResourcesChanged { .. } => vec![Change::Resources],
        HostEvent::PromptsChanged { .. } => vec![Change::Prompts],
        HostEvent::ResourceUpdated { uri, .. } => vec![Change::Updated(uri.clone())],
        HostEvent::ServerLog { plugin, message } => {
            vec![Change::Log(plugin.clone(), message.clone())]
        }
        HostEvent::PluginAdded { .. }
        | HostEvent::PluginUpdated { .. }
        | HostEvent::PluginRemoved { .. }
        | HostEvent::PluginRejected { .. }
        | HostEvent::Collision { .. }
        | HostEvent::CollisionResolved { .. }
        | HostEvent::ApprovalGranted { .. }
        | HostEvent::ApprovalRevoked { .. } => Change::every_list(),
    }
}

/// The plugin whose own offer or output `event` is about: a server's log
/// message, a change of its resources, prompts or tools, an update of one of
/// its resources. A client whose profile leaves that plugin out gets none of
/// it, as it gets none of the plugin's resources and prompts. `None` for an
/// event that concerns every client (the catalog, an approval).
pub(super) fn own_plugin(event: &HostEvent) -> Option<&str> {
    match event {
        HostEvent::ServerLog { plugin, .. }
        | HostEvent::ResourceUpdated { plugin, .. }
        | HostEvent::ResourcesChanged { plugin }
        | HostEvent::PromptsChanged { plugin }
        | HostEvent::ToolWithheld { plugin, .. } => Some(plugin),
        _ => None,
    }
}

/// The order of log levels, most verbose first.
pub(super) fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only what changes an offer makes clients list again.
    #[test]
    fn only_changes_of_what_is_offered_are_announced() {
        let plugin = || "p".to_owned();
        for quiet in [
            HostEvent::ApprovalAsked { plugin: plugin() },
            HostEvent::ApprovalDeclined { plugin: plugin() },
        ] {
            assert_eq!(changes(&quiet), vec![], "{quiet:?}");
        }
        let withheld = HostEvent::ToolWithheld {
            plugin: plugin(),
            tool: "t".into(),
            change: crate::approval::ToolChange::New,
        };
        assert_eq!(changes(&withheld), vec![Change::Tools]);
        for loud in [
            HostEvent::ApprovalGranted { plugin: plugin() },
            HostEvent::ApprovalRevoked { plugin: plugin() },
        ] {
            assert_eq!(changes(&loud), Change::every_list(), "{loud:?}");
        }
    }
}
