#![warn(unnameable_types, unreachable_pub, missing_docs)]
//! plughost runs AI-agent tools as plugins: a folder with a `plugin.json`
//! manifest and an executable in any language. Each call writes one JSON
//! request to the plugin's stdin and reads one JSON response from its stdout,
//! under a timeout, output caps and a kill of its whole process tree; a
//! persistent plugin keeps one process running and answers a line per
//! request, and an MCP server can be a plugin too. On Linux every plugin
//! process runs in a Landlock and seccomp sandbox built from the permissions
//! the user approved.
//!
//! This crate is the host an agent embeds; the `plughost` binary (the
//! `plughost-cli` package, `cli/` beside it) is one front end of it. The
//! guide (`docs/` in the repository, built by `scripts/guide`) has the
//! plugin format, the sandbox and the command line; its page "The library"
//! is the companion of these docs.
//!
//! # An agent host in one function
//!
//! ```
//! use plughost::export::{Format, export};
//! use plughost::protocol::Invocation;
//! use plughost::{ErrorKind, PluginHost, Refusal};
//! use serde_json::json;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Approvals and the plugins' data folders; by default the XDG state folder.
//!     let state = std::env::temp_dir().join("plughost-example");
//!     let host = PluginHost::builder()
//!         .plugins_dir("plugins-examples") // by default ~/.plugins
//!         .state_dir(&state)
//!         .build()?;
//!
//!     // The tools to offer a model, in its provider's function-calling shape.
//!     let tools = export(&host.tools(), Format::Anthropic)?;
//!     assert!(tools.as_array().is_some_and(|tools| !tools.is_empty()));
//!
//!     // A call the model asked for.
//!     let outcome = host
//!         .call("hello_greet", json!({"name": "Alice"}), Invocation::default())
//!         .await?;
//!     assert_eq!(outcome.result, "Hello, Alice!");
//!
//!     // The tool's own error is an outcome: its text goes back to the model.
//!     let outcome = host
//!         .call("kv_get", json!({"key": "nope"}), Invocation::default())
//!         .await?;
//!     assert!(outcome.is_error);
//!
//!     // A host error has a kind, the same word as in the CLI and MCP; its
//!     // message is written for the model, which can fix its input and retry.
//!     let err = host
//!         .call("hello_greet", json!({"name": 42}), Invocation::default())
//!         .await
//!         .unwrap_err();
//!     assert_eq!(err.kind(), ErrorKind::InvalidArgs);
//!
//!     // A refusal is typed: a plugin that needs approval can be approved
//!     // after asking the user (here no plugin needs it).
//!     if let Some(plugin) = err.refusal().and_then(Refusal::plugin_to_approve) {
//!         host.approve(plugin).await?;
//!     }
//!     Ok(())
//! }
//! ```
//!
//! # The types you meet
//!
//! - [`PluginHost`], built with [`PluginHost::builder`]: loads the plugins
//!   folder, watches it ([`PluginHost::watch`]), and runs calls
//!   ([`PluginHost::call`], [`PluginHost::call_with`] with [`CallOptions`]:
//!   cancellation, progress, a per-call approver). The call future is
//!   `'static`: spawn it; dropping it, or dropping the host, kills the
//!   plugin's process tree.
//! - A call ends in a [`ToolOutcome`] (the plugin answered; its own
//!   `is_error` included) or a [`CallError`] whose [`ErrorKind`] is the same
//!   word in the CLI, the library and MCP. A refused call carries a
//!   [`Refusal`] to match on; [`CallError::remedy`] says what fixes it, as a
//!   [`Remedy`] for the front end to put in its own words.
//! - Approvals: [`ApprovalState`](approval::ApprovalState), an
//!   [`Approver`](approval::Approver) that asks the user
//!   ([`TerminalApprover`](approval::TerminalApprover), or your own dialog),
//!   [`PluginHost::approve_with`].
//! - What happens besides calls is a [`HostEvent`](events::HostEvent), on
//!   [`PluginHost::events`] and for every [`Observer`](observe::Observer).
//!   The library never prints. Each type has one public path: the types of
//!   a subject live in its module (`approval`, `client`, `events`,
//!   `observe`, `protocol`…), and the crate root holds the host and its
//!   calls.
//! - [`manifest`] and [`protocol`] are the plugin format; [`export`] turns
//!   tools into function-calling specs; [`sandbox`] says what this machine
//!   enforces; [`report`] holds `list`, `validate` and `doctor` as data;
//!   `serve` (feature `mcp-server`) serves a host over MCP.
//!
//! # Features
//!
//! - `mcp-server`: the `serve` module, which serves a host over MCP on stdio
//!   and streamable HTTP (rmcp, hyper).
//! - `otel`: the OTLP/HTTP exporter of traces; `prometheus`: the Prometheus
//!   registry of metrics.
//!
//! All are on by default; `default-features = false` gives the host alone,
//! which still runs MCP servers as plugins (`"protocol": "mcp"`, spoken to
//! with rmcp's client): they are plugins like any other.
//!
//! # How it is built
//!
//! The load side (`plugins`) reads plugin folders, validates them and builds an
//! immutable catalog snapshot, swapped atomically on every reload. The call
//! side (`host` then `run`) checks the input, the policy and the approval,
//! prepares the sandbox, and runs the plugin: a process per call, a
//! persistent worker, or a request to an MCP server. `approval` keeps the
//! grants, `observe` the hooks. The guide's page "Contributing" has the map of
//! the source.

pub mod approval;
pub mod client;
mod error;
pub mod events;
pub mod export;
mod fsat;
mod host;
pub mod observe;
pub mod paths;
mod plugins;
pub mod profile;
pub mod protect;
pub mod protocol;
mod random;
mod remedy;
#[cfg(feature = "mcp-server")]
pub mod remote;
mod run;
pub mod schemas;
pub mod search;
pub mod secrets;
#[cfg(feature = "mcp-server")]
pub mod serve;
mod state_file;
mod variables;

/// The `plugin.json` format: its types, and [`check_folder`](manifest::check_folder),
/// the check the host loads a plugin folder with.
pub mod manifest {
    pub use crate::plugins::manifest::*;
    pub use crate::plugins::validate::check_folder;
}

/// What the sandbox enforces and what it refused: [`SandboxMode`] (at the
/// crate root) for a host, [`SandboxSupport`](sandbox::SandboxSupport) for this machine,
/// [`Denial`](sandbox::Denial) for what a plugin was refused (or reported it was).
pub mod sandbox {
    pub use crate::error::{Access, Denial, Evidence};
    pub use crate::host::{BrokeredRecord, DenialRecord};
    pub use crate::run::sandbox::{NetLevel, SandboxLevel, SandboxSupport};
}

/// What a host reports about itself: `list`, `validate` and `doctor` as
/// data, for a front end to print.
pub mod report {
    pub use crate::error::RejectedTool;
    pub use crate::host::Offered;
    pub use crate::host::{Doctor, Listing, PluginListing, Problem, ToolListing, Validation};
    pub use crate::plugins::catalog::{Collision, Precedence, Rejected};
    pub use crate::run::worker::{WorkerInfo, WorkerLoad};
}

// The integration tests' helpers (throwaway folders, /proc scans), shared.
#[cfg(test)]
#[path = "../tests/util/mod.rs"]
#[allow(
    unreachable_pub,
    reason = "written for the integration tests, whose crate roots export them"
)]
mod test_support;

pub use error::{BuildError, CallError, Cause, ErrorKind, Refusal, Requirement};
#[cfg(feature = "mcp-server")]
pub use host::SignInError;
pub use host::{
    CallOptions, CodeToolsError, PluginHost, PluginHostBuilder, Policy, SandboxMode, SignInOpener,
    ToolInfo,
};
pub use plugins::watcher::Watcher;
pub use remedy::Remedy;
pub use run::executor::{Limits, Progress};
pub use run::outcome::ToolOutcome;
