//! What happens to a host besides calls: catalog changes, approvals, workers,
//! and the host's own news, as typed values. Front ends put them in words
//! (each type's `Display` is the words plughost itself uses).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

pub use crate::plugins::catalog::Offering;
use crate::plugins::manifest::ToolChange;

/// Where the parts of a host that are not the host itself (the worker
/// pools) send their events.
pub(crate) type EventSink = Arc<dyn Fn(HostEvent) + Send + Sync>;

/// Something that changed in the plugins folder, an approval, a worker, or
/// something the host wants people to know. `plughost watch --json` prints one
/// per line; observers receive them through [`crate::observe::Observer::event`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostEvent {
    /// A plugin was loaded that was not before.
    PluginAdded {
        /// The plugin's name, which is also its folder's.
        plugin: String,
        /// Its manifest's `version`.
        version: String,
        /// Its tools, by name.
        tools: Vec<String>,
    },
    /// A loaded plugin changed: its manifest, or the tools it offers.
    PluginUpdated {
        /// The plugin's name, which is also its folder's.
        plugin: String,
        /// The `version` before.
        old_version: String,
        /// The `version` now; the same as `old_version` when only something else
        /// changed.
        new_version: String,
        /// Its tools now, by name.
        tools: Vec<String>,
        /// What changed in the manifest, in words: `version`, `permissions
        /// (+network)`, `tools (+weather_now, -weather_old)`, `env`, …
        changes: Vec<String>,
    },
    /// A plugin's folder is gone (or a rejected folder is).
    PluginRemoved {
        /// The plugin's name, or the rejected folder's.
        plugin: String,
    },
    /// A plugin folder failed validation, or now fails it with other
    /// problems; nothing of it is loaded.
    PluginRejected {
        /// The folder's name.
        folder: String,
        /// Its problems, a line each (`notes/plugin.json: …`).
        errors: Vec<String>,
    },
    /// Two plugins claim one tool or prompt name, resource URI or template.
    Collision {
        /// What is claimed: a tool, a prompt, a resource or a resource template.
        kind: Offering,
        /// The name (or URI, or template) claimed.
        name: String,
        /// The plugin that keeps it.
        kept_by: String,
        /// The plugin whose one of that name is not offered.
        skipped_in: String,
    },
    /// A name claimed twice is now claimed once.
    CollisionResolved {
        /// What was claimed twice.
        kind: Offering,
        /// The name (or URI, or template).
        name: String,
        /// The plugin that offers it now.
        kept_by: String,
    },
    /// A plugin needs approval and the approver is asked (a prompt, an MCP
    /// elicitation, an embedder's dialog, `approve --yes`).
    ApprovalAsked {
        /// The plugin to approve.
        plugin: String,
    },
    /// The user approved a plugin, and the approval is saved.
    ApprovalGranted {
        /// The plugin approved.
        plugin: String,
    },
    /// The approver said no.
    ApprovalDeclined {
        /// The plugin the user declined.
        plugin: String,
    },
    /// A plugin's approval was withdrawn, by
    /// [`PluginHost::revoke`](crate::PluginHost::revoke) or in the approvals
    /// file; its workers are stopped.
    ApprovalRevoked {
        /// The plugin whose approval was withdrawn.
        plugin: String,
    },
    /// An MCP server offers a tool that differs from the one the user
    /// approved (or a new one): it is withheld until approved again.
    ToolWithheld {
        /// The MCP server's plugin.
        plugin: String,
        /// The tool withheld.
        tool: String,
        /// How it differs from what was approved.
        change: ToolChange,
    },
    /// A call failed and its plugin's own output reports a permission error
    /// on something its grants do not reach (see [`crate::sandbox::Denial`]
    /// and its `evidence`: the plugin's word, not a refusal plughost saw):
    /// what, and the grant that would allow it.
    SandboxDenied {
        /// The plugin called.
        plugin: String,
        /// The tool called.
        tool: String,
        /// The permission error it reported, and the grant that would allow it.
        denial: crate::error::Denial,
    },
    /// The egress proxy refused a connection a plugin with host grants
    /// asked for (see [`crate::sandbox::Denial`]): the host, why, and the
    /// grant that would allow it.
    HostRefused {
        /// The plugin whose connection was refused.
        plugin: String,
        /// The connection refused (`host:port`), why, and the grant that would
        /// allow it.
        denial: crate::error::Denial,
    },
    /// The egress proxy met a brokered secret's placeholder on a request:
    /// it placed the value (the host is bound to it), or says why not.
    SecretPlaced {
        /// The plugin that sent the request.
        plugin: String,
        /// The secret.
        secret: String,
        /// The host the request went to (`host:port`).
        target: String,
        /// Whether the value was placed.
        placed: bool,
        /// What was done, in words.
        outcome: String,
    },
    /// An MCP server's resources or resource templates changed (its list
    /// came again and differs).
    ResourcesChanged {
        /// The MCP server's plugin.
        plugin: String,
    },
    /// An MCP server's prompts changed.
    PromptsChanged {
        /// The MCP server's plugin.
        plugin: String,
    },
    /// A resource an MCP server was asked to watch changed
    /// (`notifications/resources/updated`).
    ResourceUpdated {
        /// The MCP server's plugin.
        plugin: String,
        /// The resource's URI.
        uri: String,
    },
    /// A log message of an MCP server (`notifications/message` params: its
    /// `level`, `logger` and `data`).
    ServerLog {
        /// The MCP server's plugin.
        plugin: String,
        /// The notification's params, as the server sent them.
        message: serde_json::Value,
    },
    /// A persistent plugin's worker started; `worker` is its pid.
    WorkerStarted {
        /// The persistent plugin (or MCP server).
        plugin: String,
        /// The worker's pid.
        worker: u32,
    },
    /// A worker stopped, and why: idle, the plugin changed, a timeout…
    WorkerStopped {
        /// The persistent plugin (or MCP server).
        plugin: String,
        /// The worker's pid.
        worker: u32,
        /// Why it stopped.
        reason: WorkerStop,
        /// How many calls it answered.
        calls: u64,
    },
    /// The host's own news: folder created, polling fallback, a degraded
    /// sandbox, an observer that failed.
    Notice(Notice),
}

/// Why a persistent plugin's worker (or MCP server) stopped. Serialized as
/// its words.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerStop {
    /// It was idle for its `idle_timeout_secs`.
    Idle {
        /// The idle timeout, in seconds.
        secs: u64,
    },
    /// Its plugin folder changed (new code or manifest).
    PluginChanged,
    /// Its plugin folder was removed.
    PluginRemoved,
    /// What the plugin is granted changed.
    ApprovalChanged,
    /// Its approval was withdrawn.
    ApprovalRevoked,
    /// The approvals file cannot be read, so nothing that needs approval runs.
    ApprovalsUnreadable,
    /// The host shut down.
    HostShutDown,
    /// Asked to stop (`PluginHost::stop_workers`).
    AskedToStop,
    /// A call timed out.
    TimedOut,
    /// A call was cancelled.
    Cancelled,
    /// Its answer was over the size limit.
    AnswerTooLarge,
    /// It exited before answering a call.
    ExitedBeforeAnswering,
    /// It closed its stdout before answering a call.
    ClosedStdout,
    /// It broke the protocol (answered out of step, wrote between calls,
    /// closed its pipes…): how, in words.
    Misbehaved {
        /// How, in words.
        why: String,
    },
}

impl WorkerStop {
    /// One word for the reason, from a fixed list (a metric label):
    /// `idle`, `plugin_changed`, `timed_out`, `misbehaved`…
    pub fn kind(&self) -> &'static str {
        match self {
            WorkerStop::Idle { .. } => "idle",
            WorkerStop::PluginChanged => "plugin_changed",
            WorkerStop::PluginRemoved => "plugin_removed",
            WorkerStop::ApprovalChanged => "approval_changed",
            WorkerStop::ApprovalRevoked => "approval_revoked",
            WorkerStop::ApprovalsUnreadable => "approvals_unreadable",
            WorkerStop::HostShutDown => "host_shut_down",
            WorkerStop::AskedToStop => "asked_to_stop",
            WorkerStop::TimedOut => "timed_out",
            WorkerStop::Cancelled => "cancelled",
            WorkerStop::AnswerTooLarge => "answer_too_large",
            WorkerStop::ExitedBeforeAnswering => "exited_before_answering",
            WorkerStop::ClosedStdout => "closed_stdout",
            WorkerStop::Misbehaved { .. } => "misbehaved",
        }
    }
}

impl fmt::Display for WorkerStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerStop::Idle { secs } => write!(f, "idle for {secs}s"),
            WorkerStop::PluginChanged => f.write_str("the plugin changed"),
            WorkerStop::PluginRemoved => f.write_str("the plugin was removed"),
            WorkerStop::ApprovalChanged => f.write_str("its approval changed"),
            WorkerStop::ApprovalRevoked => f.write_str("its approval was revoked"),
            WorkerStop::ApprovalsUnreadable => f.write_str("the approvals file cannot be read"),
            WorkerStop::HostShutDown => f.write_str("the host shut down"),
            WorkerStop::AskedToStop => f.write_str("asked to stop"),
            WorkerStop::TimedOut => f.write_str("the call timed out"),
            WorkerStop::Cancelled => f.write_str("the call was cancelled"),
            WorkerStop::AnswerTooLarge => f.write_str("its answer was too large"),
            WorkerStop::ExitedBeforeAnswering => f.write_str("it exited before answering"),
            WorkerStop::ClosedStdout => f.write_str("it closed its stdout before answering"),
            WorkerStop::Misbehaved { why } => f.write_str(why),
        }
    }
}

impl Serialize for WorkerStop {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The host's own news: not a plugin, approval or worker change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "notice", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Notice {
    /// The plugins folder did not exist and was created.
    PluginsDirCreated {
        /// The plugins folder.
        path: PathBuf,
    },
    /// The plugins folder was removed; the watcher waits for it.
    PluginsDirRemoved {
        /// The plugins folder.
        path: PathBuf,
    },
    /// The plugins folder is back.
    PluginsDirBack {
        /// The plugins folder.
        path: PathBuf,
    },
    /// The platform's file watching is unavailable or failed; `polling` says
    /// whether the folder is polled instead (every half second).
    WatchingFailed {
        /// Why watching failed.
        reason: String,
        /// Whether the folder is polled instead.
        polling: bool,
    },
    /// This kernel cannot enforce every permission (said once per host).
    SandboxDegraded {
        /// Each restriction it cannot enforce, in words.
        missing: Vec<String>,
    },
    /// An MCP server's tool list could not be cached; it is listed again at
    /// its next start.
    ToolCacheUnwritable {
        /// The MCP server's plugin.
        plugin: String,
        /// The cache file it could not write.
        path: PathBuf,
        /// Why it could not be written.
        error: String,
    },
    /// A worker keeps exiting before answering; it is started again with
    /// backoff, at most every `max_backoff_secs`.
    WorkerBackoff {
        /// The persistent plugin.
        plugin: String,
        /// How the worker last ended, with the end of its stderr when it wrote any.
        failure: String,
        /// The longest wait between two starts, in seconds.
        max_backoff_secs: u64,
    },
    /// An observer returned an error (`error`) or panicked (`None`); the
    /// host goes on.
    ObserverFailed {
        /// The hook that failed (`call_started`, `call_ended`…, or `an
        /// event`).
        hook: String,
        /// The error it returned; `None` when it panicked.
        error: Option<String>,
    },
    /// A subscriber fell behind and lost this many events.
    EventsDropped {
        /// How many events were lost.
        count: u64,
    },
    /// An MCP server started without variables its manifest's `env` lists:
    /// they are not set where plughost runs.
    EnvMissing {
        /// The MCP server's plugin.
        plugin: String,
        /// The variables not set, by name.
        vars: Vec<String>,
    },
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::PluginsDirCreated { path } => {
                write!(f, "created the plugins folder {}", path.display())
            }
            Notice::PluginsDirRemoved { path } => write!(
                f,
                "the plugins folder {} was removed; waiting for it to come back",
                path.display()
            ),
            Notice::PluginsDirBack { path } => {
                write!(f, "the plugins folder {} is back", path.display())
            }
            Notice::WatchingFailed {
                reason,
                polling: true,
            } => write!(
                f,
                "file watching failed ({reason}); polling the plugins folder every 500ms instead"
            ),
            Notice::WatchingFailed {
                reason,
                polling: false,
            } => write!(
                f,
                "file watching failed ({reason}) and polling could not start: changes to the plugins folder are not noticed until a restart"
            ),
            Notice::SandboxDegraded { missing } => write!(
                f,
                "warning: this kernel cannot enforce every permission: {}",
                missing.join("; ")
            ),
            Notice::ToolCacheUnwritable {
                plugin,
                path,
                error,
            } => write!(
                f,
                "plugin \"{plugin}\": cannot write its tool cache {}: {error}; its tools will be listed again at the next start",
                path.display()
            ),
            Notice::WorkerBackoff {
                plugin,
                failure,
                max_backoff_secs,
            } => write!(
                f,
                "plugin \"{plugin}\": its worker keeps exiting before answering ({failure}); it is started again with backoff, at most every {max_backoff_secs}s"
            ),
            Notice::ObserverFailed {
                hook,
                error: Some(e),
            } => write!(f, "an observer failed on {hook}: {e}"),
            Notice::ObserverFailed { hook, error: None } => {
                write!(f, "an observer panicked on {hook}; the host goes on")
            }
            Notice::EventsDropped { count } => write!(
                f,
                "{count} events were dropped; list the plugins for the current state"
            ),
            Notice::EnvMissing { plugin, vars } => write!(
                f,
                "the MCP server of plugin \"{plugin}\" started without {} {}, which its plugin.json lists: set {} where plughost runs",
                if vars.len() == 1 {
                    "the variable"
                } else {
                    "the variables"
                },
                vars.join(", "),
                if vars.len() == 1 { "it" } else { "them" }
            ),
        }
    }
}

impl fmt::Display for HostEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostEvent::PluginAdded {
                plugin,
                version,
                tools,
            } => {
                write!(f, "added    {plugin} {version} ({})", tools.join(", "))
            }
            HostEvent::PluginUpdated {
                plugin,
                old_version,
                new_version,
                changes,
                ..
            } => {
                write!(f, "updated  {plugin} ")?;
                if old_version == new_version {
                    write!(f, "{new_version}")?;
                } else {
                    write!(f, "{old_version} -> {new_version}")?;
                }
                let changes: Vec<&str> = changes
                    .iter()
                    .map(String::as_str)
                    .filter(|c| *c != "version")
                    .collect();
                if !changes.is_empty() {
                    write!(f, ": {}", changes.join("; "))?;
                }
                Ok(())
            }
            HostEvent::PluginRemoved { plugin } => write!(f, "removed  {plugin}"),
            HostEvent::PluginRejected { folder, errors } => {
                write!(f, "rejected {folder}")?;
                for e in errors {
                    write!(f, "\n         {e}")?;
                }
                Ok(())
            }
            HostEvent::Collision {
                kind,
                name,
                kept_by,
                skipped_in,
            } => write!(
                f,
                "collision: {kind} \"{name}\" of \"{skipped_in}\" is skipped; \"{kept_by}\" keeps it"
            ),
            HostEvent::CollisionResolved {
                kind,
                name,
                kept_by,
            } => write!(
                f,
                "resolved: {kind} \"{name}\" is offered by \"{kept_by}\" alone again"
            ),
            HostEvent::ToolWithheld {
                plugin,
                tool,
                change,
            } => write!(
                f,
                "withheld tool \"{tool}\" of {plugin}: {change}; approve {plugin} again to review it"
            ),
            HostEvent::SandboxDenied {
                plugin,
                tool,
                denial,
            } if denial.is_recorded() => write!(f, "denied   {plugin} ({tool}): {denial}"),
            HostEvent::SandboxDenied {
                plugin,
                tool,
                denial,
            } => write!(f, "reported {plugin} ({tool}): {denial}"),
            HostEvent::HostRefused { plugin, denial } => {
                write!(f, "refused  {plugin}: {denial}")
            }
            HostEvent::SecretPlaced {
                plugin,
                secret,
                target,
                outcome,
                ..
            } => write!(f, "secret   {plugin}: {secret} to {target}: {outcome}"),
            HostEvent::ApprovalAsked { plugin } => write!(f, "asking   {plugin} for approval"),
            HostEvent::ApprovalGranted { plugin } => write!(f, "approved {plugin}"),
            HostEvent::ApprovalDeclined { plugin } => write!(f, "declined {plugin}"),
            HostEvent::ApprovalRevoked { plugin } => write!(f, "revoked  {plugin}"),
            HostEvent::ResourcesChanged { plugin } => write!(f, "changed  {plugin}: its resources"),
            HostEvent::PromptsChanged { plugin } => write!(f, "changed  {plugin}: its prompts"),
            HostEvent::ResourceUpdated { plugin, uri } => {
                write!(f, "updated  {plugin}: resource {uri}")
            }
            HostEvent::ServerLog { plugin, message } => {
                let level = message["level"].as_str().unwrap_or("info");
                let data = match &message["data"] {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                write!(f, "log      {plugin} [{level}] {data}")
            }
            HostEvent::WorkerStarted { plugin, worker } => {
                write!(f, "worker   {plugin} started (pid {worker})")
            }
            HostEvent::WorkerStopped {
                plugin,
                worker,
                reason,
                calls,
            } => write!(
                f,
                "worker   {plugin} stopped (pid {worker}, {calls} call{}): {reason}",
                if *calls == 1 { "" } else { "s" }
            ),
            HostEvent::Notice(notice) => write!(f, "note     {notice}"),
        }
    }
}
