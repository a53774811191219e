//! Call errors: one kind per failure, the same words in the CLI, the library and MCP.
//!
//! A plugin's own `is_error: true` answer is not here: it is a successful call
//! whose [`crate::ToolOutcome`] says `is_error`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::plugins::manifest::{EnvVarName, Permission, ToolChange};
use crate::remedy::Remedy;

/// The kind of a host error, as printed by the CLI and sent over MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// No tool by that name is offered (nor the resource, prompt or
    /// completion asked for).
    NotFound,
    /// The input was refused: it does not match the tool's `input_schema`,
    /// is over the size limit, or the MCP server refused it.
    InvalidArgs,
    /// The call was refused before the plugin ran (see [`Refusal`]).
    NotAllowed,
    /// The plugin did not answer in time.
    Timeout,
    /// The call was cancelled, or the host shut down, before an answer.
    Cancelled,
    /// The plugin's answer went over the stdout limit.
    OutputTooLarge,
    /// The plugin answered, but not with a valid response.
    InvalidOutput,
    /// Anything else that kept the plugin from answering: it could not start,
    /// exited with an error or a signal, or its MCP server answered an error.
    Failed,
}

impl ErrorKind {
    /// `not_found`, `invalid_args`…: the word of the kind, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::InvalidArgs => "invalid_args",
            ErrorKind::NotAllowed => "not_allowed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::OutputTooLarge => "output_too_large",
            ErrorKind::InvalidOutput => "invalid_output",
            ErrorKind::Failed => "failed",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a call did not produce a plugin response.
///
/// The `Display` text is what an agent sees. A plugin's stderr is diagnostics for
/// people: it is carried in `stderr_tail` and shown in the text only for
/// `invalid_output`, where it usually explains the garbage.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No loaded plugin offers the tool. When a rejected plugin declares it,
    /// `rejected` names that plugin and its first problem.
    #[error("{}", not_found(tool, hint.as_deref(), rejected.as_ref()))]
    NotFound {
        /// The name asked for.
        tool: String,
        /// An offered tool whose name is close enough to be what was meant.
        hint: Option<String>,
        /// The rejected plugin that declares the tool, and its first problem.
        rejected: Option<RejectedTool>,
    },

    /// No MCP server run as a plugin offers this resource, prompt or
    /// completion.
    #[error("no MCP server run as a plugin offers {what}")]
    NotOffered {
        /// What was asked for, named (`resource "notes://today"`).
        what: String,
    },

    /// The input does not fit the tool: its `input_schema`, the size limit,
    /// or what its MCP server accepts.
    #[error("input for \"{tool}\" does not match its input_schema: {}", violations.join("; "))]
    InvalidArgs {
        /// The tool called.
        tool: String,
        /// The problems, most led by the JSON pointer of the value at fault
        /// (`/name: value is not of type "string"`).
        violations: Vec<String>,
    },

    /// Refused before the plugin ran.
    #[error("{refusal}")]
    NotAllowed {
        /// Why, as data to match on.
        refusal: Refusal,
    },

    /// The plugin did not answer in time. Its process tree is killed; an MCP
    /// server, which other calls share, has the request cancelled instead.
    #[error("\"{tool}\" did not answer within {}s; its process tree was killed", after.as_secs_f64())]
    Timeout {
        /// The tool called.
        tool: String,
        /// The limit that ran out.
        after: Duration,
        /// The kept part of the plugin's stderr, for diagnostics.
        stderr_tail: String,
    },

    /// The call's cancellation token fired, or the host shut down; nothing
    /// of the call is left running.
    #[error("the call to \"{tool}\" was cancelled; nothing of it is left running")]
    Cancelled {
        /// The tool called.
        tool: String,
    },

    /// The plugin's answer went over the stdout limit.
    #[error("\"{tool}\" wrote more than {limit} bytes to stdout; its process tree was killed")]
    OutputTooLarge {
        /// The tool called.
        tool: String,
        /// The limit, in bytes ([`Limits::max_stdout`](crate::Limits::max_stdout)).
        limit: usize,
    },

    #[error(
        "\"{tool}\" gave an invalid response: {reason}{}{}",
        head_suffix(stdout_head),
        tail_suffix(stderr_tail)
    )]
    /// The plugin answered with something that is not a valid response: not
    /// the protocol's JSON, a `structured` result its `output_schema`
    /// refuses, an attachment that does not check out.
    InvalidOutput {
        /// The tool called.
        tool: String,
        /// What is wrong with the answer.
        reason: String,
        /// The first 200 bytes of its stdout (lossy UTF-8); empty for an
        /// attachment that does not check out.
        stdout_head: String,
        /// The kept part of the plugin's stderr, for diagnostics.
        stderr_tail: String,
    },

    /// Anything else that kept the plugin from answering: it could not
    /// start, exited with an error or was killed by a signal, its MCP server
    /// answered an error, or its data folder could not be made.
    #[error("\"{tool}\": {reason}{}", denied(denials))]
    Failed {
        /// The tool called.
        tool: String,
        /// What failed, in one sentence.
        reason: String,
        /// What the plugin was refused before it failed: refusals plughost
        /// recorded (the egress proxy's), and permission errors its stderr
        /// reports on targets its grants do not reach (see
        /// [`Denial::evidence`]), with the grant that allows each.
        denials: Vec<Denial>,
        /// The plugin's exit code, when it exited with one.
        exit_code: Option<i32>,
        /// The kept part of the plugin's stderr, for diagnostics; empty when
        /// there is none.
        stderr_tail: String,
        /// The error behind it, when there is one (an I/O error starting the
        /// plugin, an approval that could not be saved…).
        #[source]
        cause: Option<Cause>,
    },
}

/// The error behind a [`CallError::Failed`].
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A tool declared by a plugin that was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedTool {
    /// The plugin's folder name.
    pub plugin: String,
    /// Its first problem.
    pub reason: String,
}

fn not_found(tool: &str, hint: Option<&str>, rejected: Option<&RejectedTool>) -> String {
    match (rejected, hint) {
        (Some(r), _) => format!(
            "no tool named \"{tool}\" is offered: plugin \"{}\" declares it but was rejected ({})",
            r.plugin, r.reason
        ),
        (None, Some(h)) => format!("no tool named \"{tool}\"; did you mean \"{h}\"?"),
        (None, None) => format!("no tool named \"{tool}\""),
    }
}

/// `; the sandbox refused connecting to X; grant "…" to allow it` (or the
/// plugin's report, in its own words: see [`Denial`]), for each denial.
fn denied(denials: &[Denial]) -> String {
    denials.iter().map(|d| format!("; {d}")).collect()
}

fn head_suffix(head: &str) -> String {
    if head.is_empty() {
        String::new()
    } else {
        format!("; stdout began with {head:?}")
    }
}

fn tail_suffix(tail: &str) -> String {
    let tail = tail.trim();
    if tail.is_empty() {
        String::new()
    } else {
        format!("; stderr ends with: {}", last_chars(tail, 500))
    }
}

/// The last `n` characters of `s` (on a char boundary).
pub(crate) fn last_chars(s: &str, n: usize) -> &str {
    match s.char_indices().rev().nth(n.saturating_sub(1)) {
        Some((i, _)) if s.len() > n => &s[i..],
        _ => s,
    }
}

/// Something a plugin asks for that the user must grant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Requirement {
    /// A permission (`network`, `filesystem:write:~/notes`…).
    Permission(Permission),
    /// An environment variable the plugin receives from the user's environment.
    Env(EnvVarName),
    /// A brokered secret: placed by plughost on the plugin's requests to
    /// these hosts, never given to the plugin.
    Secret {
        /// The secret, and the variable that holds its placeholder.
        name: String,
        /// The hosts, as the manifest writes them.
        hosts: Vec<String>,
    },
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Permission(p) => write!(f, "{p}"),
            Requirement::Env(e) => write!(f, "env {}", e.0),
            Requirement::Secret { name, hosts } => {
                write!(f, "secret {name} for {}", hosts.join(", "))
            }
        }
    }
}

/// Why a call was refused before anything ran (`not_allowed`), as data an
/// embedder can match on. The words say what happened; what to do about it
/// (the command that approves a plugin, a dialog) is the front end's to say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The plugin asks for permissions or variables the user has not granted.
    #[error(
        "plugin \"{plugin}\" needs {} for {}",
        if *again { "re-approval" } else { "approval" },
        listed(missing, *again)
    )]
    NeedsApproval {
        /// The plugin to approve.
        plugin: String,
        /// What is not granted.
        missing: Vec<Requirement>,
        /// It was approved before and now asks for more.
        again: bool,
    },
    /// The approver was asked and said no.
    #[error("the user declined plugin \"{plugin}\"")]
    Declined {
        /// The plugin the user declined.
        plugin: String,
    },
    /// The plugin's rate limit is spent for now.
    #[error(
        "plugin \"{plugin}\" is limited to {limit} calls per minute; try again in {}s",
        retry_after.as_secs() + 1
    )]
    RateLimited {
        /// The plugin called.
        plugin: String,
        /// Its limit, in calls per minute.
        limit: u32,
        /// How long until the next call is let through.
        retry_after: Duration,
    },
    /// The session's budget of calls is spent.
    #[error(
        "session \"{session}\" has used its budget of {budget} tool calls; start a new session or raise the budget"
    )]
    BudgetSpent {
        /// The session's id, from the call's [`Invocation`](crate::protocol::Invocation).
        session: String,
        /// Its budget, in calls.
        budget: u32,
    },
    /// The sandbox is required and this system cannot enforce all of it.
    #[error(
        "plugin \"{plugin}\": the sandbox is required but this system cannot enforce: {}",
        missing.join("; ")
    )]
    SandboxUnavailable {
        /// The plugin called.
        plugin: String,
        /// Each restriction this system cannot enforce, in words.
        missing: Vec<String>,
    },
    /// The sandbox could not be built (a folder it needs cannot be opened…).
    #[error("plugin \"{plugin}\": the sandbox could not be prepared: {reason}")]
    SandboxFailed {
        /// The plugin called.
        plugin: String,
        /// What went wrong.
        reason: String,
    },
    /// A remote server's sign-in cannot be used (expired and not
    /// refreshed, damaged, or for another URL): the server is not
    /// contacted until the user signs in again.
    #[error("plugin \"{plugin}\" needs a new sign-in to its remote server: {reason}")]
    SignInNeeded {
        /// The remote server's plugin.
        plugin: String,
        /// Why, and what to do.
        reason: String,
    },
    /// An MCP server's tool differs from what the user approved (or is new):
    /// it is withheld until approved again.
    #[error(
        "tool \"{tool}\" of plugin \"{plugin}\" is withheld: {change}; review it and approve the plugin again"
    )]
    ToolChanged {
        /// The MCP server's plugin.
        plugin: String,
        /// The tool withheld.
        tool: String,
        /// How it differs from what was approved.
        change: ToolChange,
    },
    /// The approvals file cannot be read, so nothing that needs approval runs.
    #[error(transparent)]
    ApprovalsUnreadable(#[from] ApprovalError),
    /// The secret store cannot be read, so a plugin that lists a variable
    /// (which may be a secret) does not start.
    #[error(transparent)]
    SecretsUnreadable(#[from] crate::secrets::SecretError),
    /// A tool no plugin offers, that an MCP server never approved may offer:
    /// its tools are not known before its approval.
    #[error(
        "no tool named \"{tool}\" is known, and plugin \"{plugin}\" is an MCP server that is not approved yet: its tools are listed when it is approved"
    )]
    ServerNotApproved {
        /// The MCP server's plugin; its tools are listed once it is approved.
        plugin: String,
        /// The tool asked for.
        tool: String,
    },
}

impl Refusal {
    /// The plugin that approving would let through, when approval is the remedy.
    pub fn plugin_to_approve(&self) -> Option<&str> {
        match self {
            Refusal::NeedsApproval { plugin, .. }
            | Refusal::Declined { plugin }
            | Refusal::ToolChanged { plugin, .. }
            | Refusal::ServerNotApproved { plugin, .. } => Some(plugin),
            _ => None,
        }
    }

    /// What lifts the refusal, when one action does: approving the plugin.
    pub fn remedy(&self) -> Option<Remedy> {
        self.plugin_to_approve().map(|plugin| Remedy::Approve {
            plugin: plugin.to_owned(),
        })
    }
}

/// `network, env API_TOKEN`, or `new permissions network, env API_TOKEN`.
fn listed(missing: &[Requirement], again: bool) -> String {
    let items: Vec<String> = missing.iter().map(ToString::to_string).collect();
    if items.is_empty() {
        // An MCP server that asks for nothing still has its tools pinned.
        return "its tools".into();
    }
    if again {
        format!("new permissions {}", items.join(", "))
    } else {
        items.join(", ")
    }
}

/// Why the approvals could not be read or changed. Every message names the file.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// The file is empty, not JSON, or not in the approvals' shape.
    #[error(
        "the approvals file {} is corrupt ({reason}); no plugin counts as approved until it is fixed: fix it, or delete it to start over (deleting it revokes every approval)",
        path.display()
    )]
    Corrupt {
        /// The approvals file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// The file's `version` is not the one this plughost reads.
    #[error(
        "the approvals file {} has format version {found}, but this plughost reads version {supported}; use a newer plughost, or delete the file to start over (deleting it revokes every approval)",
        path.display()
    )]
    UnsupportedVersion {
        /// The approvals file.
        path: PathBuf,
        /// The file's `version`, as JSON text.
        found: String,
        /// The version this plughost reads.
        supported: u64,
    },

    /// The file cannot be opened or read.
    #[error(
        "cannot read the approvals file {}: {source}; no plugin counts as approved until it can be read: fix its permissions, or delete it to start over",
        path.display()
    )]
    Read {
        /// The approvals file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: Arc<io::Error>,
    },

    /// Something other than a regular file is in the file's place.
    #[error(
        "the approvals file {} is {what}; plughost reads only a regular file and never follows a symbolic link, so no plugin counts as approved until it is one: put the file itself in its place, or delete it to start over (deleting it revokes every approval)",
        path.display()
    )]
    NotAFile {
        /// The approvals file.
        path: PathBuf,
        /// What is there instead, in words (`a symbolic link`, `a folder`…).
        what: &'static str,
    },

    /// The file is over the size limit, so it is not read.
    #[error(
        "the approvals file {} is {size} bytes, over the limit of {limit} bytes ({} MiB); no plugin counts as approved until it is smaller: fix it, or delete it to start over (deleting it revokes every approval)",
        path.display(), limit >> 20
    )]
    TooLarge {
        /// The approvals file.
        path: PathBuf,
        /// Its size, in bytes, or the bytes read when it grew during the read.
        size: u64,
        /// The limit, in bytes (4 MiB).
        limit: u64,
    },

    /// The file (or its folder) cannot be written.
    #[error("cannot write the approvals file {}: {source}", path.display())]
    Write {
        /// The approvals file.
        path: PathBuf,
        /// Why it cannot be written.
        #[source]
        source: Arc<io::Error>,
    },

    /// The approvals file a host was given to read (one kept for a fleet)
    /// does not exist.
    #[error(
        "the approvals file {} does not exist; no plugin counts as approved until it does",
        path.display()
    )]
    Missing {
        /// The approvals file.
        path: PathBuf,
    },

    /// The host only reads its approvals file: a change was asked of it.
    #[error(
        "the approvals in {} are only read here, never written; change them where that file is kept, and every host that reads it follows within seconds",
        path.display()
    )]
    ReadOnly {
        /// The approvals file.
        path: PathBuf,
    },

    /// The lock file that serializes changes cannot be opened or locked.
    #[error("cannot lock the approvals file with {}: {source}", path.display())]
    Lock {
        /// The lock file beside the approvals file.
        path: PathBuf,
        /// Why it cannot be locked.
        #[source]
        source: Arc<io::Error>,
    },
}

/// Two errors are equal when they say the same about the same file (an I/O
/// error is compared by its words).
impl PartialEq for ApprovalError {
    fn eq(&self, other: &Self) -> bool {
        self.path() == other.path() && self.to_string() == other.to_string()
    }
}

impl Eq for ApprovalError {}

impl ApprovalError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ApprovalError::Corrupt { path, .. }
            | ApprovalError::UnsupportedVersion { path, .. }
            | ApprovalError::Read { path, .. }
            | ApprovalError::NotAFile { path, .. }
            | ApprovalError::TooLarge { path, .. }
            | ApprovalError::Write { path, .. }
            | ApprovalError::Missing { path }
            | ApprovalError::ReadOnly { path }
            | ApprovalError::Lock { path, .. } => path,
        }
    }
}

/// What was refused: a read, a write or a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Access {
    /// Reading the target.
    Read,
    /// Writing to the target.
    Write,
    /// Connecting to the target, a `host:port`.
    Connect,
}

/// How plughost knows of a [`Denial`]: whether it saw the refusal itself,
/// or only read of it in what the plugin wrote.
///
/// Only a [`Recorded`](Evidence::Recorded) denial is the sandbox's word. A
/// plugin writes what it likes on its stderr and in its result, "Permission
/// denied: ~/.ssh/id_ed25519" included; such a line is shown as the
/// plugin's report, never as a refusal of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Evidence {
    /// plughost refused it itself and recorded it as it happened (the
    /// egress proxy refusing a host).
    Recorded,
    /// The plugin's own words (its stderr, its error result) report a
    /// permission error on a target its grants do not reach. Likely the
    /// sandbox's doing, but nothing plughost saw: a plugin can write such a
    /// line without having tried anything. The default, for records that
    /// do not say: never claim a refusal that was not seen.
    #[default]
    ReportedByPlugin,
}

impl Evidence {
    /// `recorded` or `reported_by_plugin`, as in JSON and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Recorded => "recorded",
            Evidence::ReportedByPlugin => "reported_by_plugin",
        }
    }
}

/// One thing a plugin was refused (or says it was), and the grant that
/// would allow it. [`Denial::evidence`] says whose word it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Denial {
    /// What the plugin tried: reading, writing or connecting.
    pub access: Access,
    /// The path (or, for `connect`, the `host:port`) refused. For a
    /// denial the plugin reported, taken from its text: shown on a
    /// terminal only once escaped.
    pub target: String,
    /// The permission that would allow it, as a manifest writes it
    /// (`filesystem:read:~/.gitconfig`); `None` when no grant reaches it
    /// (plughost's own state, plugins folder, binary or configuration).
    pub grant: Option<String>,
    /// When the target is a protected path: what it holds, and the path a
    /// grant must name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protected: Option<(PathBuf, String)>,
    /// Why, when the target alone does not say (a granted name that
    /// resolves to a loopback address, a port not granted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Whether plughost saw the refusal or the plugin said so.
    pub evidence: Evidence,
}

impl Denial {
    /// A connection to `target` (`host:port`) the egress proxy refused:
    /// recorded, the proxy saw it.
    pub(crate) fn connect(target: String, grant: String, why: Option<String>) -> Denial {
        Denial {
            access: Access::Connect,
            target,
            grant: Some(grant),
            protected: None,
            why,
            evidence: Evidence::Recorded,
        }
    }

    /// The same denial, as the plugin's report rather than plughost's record.
    pub(crate) fn reported_by_plugin(self) -> Denial {
        Denial {
            evidence: Evidence::ReportedByPlugin,
            ..self
        }
    }

    /// Whether plughost itself saw the refusal (see [`Evidence`]).
    pub fn is_recorded(&self) -> bool {
        self.evidence == Evidence::Recorded
    }
}

/// A recorded denial: `the sandbox refused reading X; grant "…" to allow
/// it`. A reported one: `the plugin reported a permission error reading X,
/// which its grants do not reach; if it needs it, grant "…"`.
impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.access {
            Access::Read => "reading",
            Access::Write => "writing",
            Access::Connect => "connecting to",
        };
        let recorded = self.is_recorded();
        if recorded {
            write!(f, "the sandbox refused {verb} {}", self.target)?;
        } else {
            write!(
                f,
                "the plugin reported a permission error {verb} {}, which its grants do not reach",
                self.target
            )?;
        }
        if let Some(why) = &self.why {
            write!(f, " ({why})")?;
        }
        match (&self.protected, &self.grant) {
            (Some((path, what)), None) if self.access == Access::Write => write!(
                f,
                ", {what} ({}): no grant reaches it; a plugin keeps what it writes in its data folder ($PLUGHOST_DATA_DIR)",
                path.display()
            ),
            (Some((path, what)), None) => {
                write!(f, ", {what} ({}): no grant reaches it", path.display())
            }
            (Some((path, what)), Some(grant)) => write!(
                f,
                ", a protected path ({what}): only a grant that names it reaches it, \"{grant}\" ({} holds it)",
                path.display()
            ),
            (None, Some(grant)) if recorded => write!(f, "; grant \"{grant}\" to allow it"),
            (None, Some(grant)) => write!(f, "; if it needs it, grant \"{grant}\""),
            (None, None) => Ok(()),
        }
    }
}

/// Why a host could not be built. The host goes on despite broken plugins;
/// these stop it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The plugins folder exists but cannot be read.
    #[error("cannot read the plugins folder {}", path.display())]
    PluginsDir {
        /// The plugins folder.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: std::io::Error,
    },
    /// A folder path cannot be made absolute (the working directory is gone).
    #[error("cannot resolve the folder {}", path.display())]
    Path {
        /// The folder as given.
        path: PathBuf,
        /// Why it cannot be resolved.
        #[source]
        source: std::io::Error,
    },
    /// The audit log cannot be opened for appending.
    #[error("cannot open the audit log {}", path.display())]
    AuditLog {
        /// The audit log's path.
        path: PathBuf,
        /// Why it cannot be opened.
        #[source]
        source: std::io::Error,
    },
}

impl CallError {
    /// Why the call was refused, when it was (`not_allowed`).
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            CallError::NotAllowed { refusal } => Some(refusal),
            _ => None,
        }
    }

    /// What fixes the error, when one action does: approving a refused
    /// plugin, or checking the rejected plugin that declares the tool asked
    /// for. Front ends show it after the message, in their own words.
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            CallError::NotAllowed { refusal } => refusal.remedy(),
            CallError::NotFound {
                rejected: Some(r), ..
            } => Some(Remedy::Validate {
                plugin: r.plugin.clone(),
            }),
            _ => None,
        }
    }

    /// The kind of the error, the word front ends print and send.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::NotFound { .. } | CallError::NotOffered { .. } => ErrorKind::NotFound,
            CallError::InvalidArgs { .. } => ErrorKind::InvalidArgs,
            CallError::NotAllowed { .. } => ErrorKind::NotAllowed,
            CallError::Timeout { .. } => ErrorKind::Timeout,
            CallError::Cancelled { .. } => ErrorKind::Cancelled,
            CallError::OutputTooLarge { .. } => ErrorKind::OutputTooLarge,
            CallError::InvalidOutput { .. } => ErrorKind::InvalidOutput,
            CallError::Failed { .. } => ErrorKind::Failed,
        }
    }

    /// The plugin's exit code, when it exited with a non-zero one.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            CallError::Failed { exit_code, .. } => *exit_code,
            _ => None,
        }
    }

    /// The diagnostic stderr tail, when the failure happened in a running plugin.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            CallError::Timeout { stderr_tail, .. }
            | CallError::InvalidOutput { stderr_tail, .. }
            | CallError::Failed { stderr_tail, .. } => Some(stderr_tail),
            _ => None,
        }
    }
}
