#![warn(unnameable_types, unreachable_pub)]
//! plughost runs AI-agent tools as plugins: a folder with a `plugin.json`
//! manifest and an executable in any language. Each call writes one JSON
//! request to the plugin's stdin and reads one JSON response from its stdout,
//! under a timeout, output caps and a kill of its whole process tree; a
//! persistent plugin keeps one process running and answers a line per request.
//!
//! # The types you meet
//!
//! - [`PluginHost`], built with [`PluginHost::builder`]: loads the plugins
//!   folder, watches it ([`PluginHost::watch`]), and runs calls
//!   ([`PluginHost::call`], [`PluginHost::call_with`] with [`CallOptions`]).
//! - A call ends in a [`ToolOutcome`] (the plugin answered; its own
//!   `is_error` included) or a [`CallError`] whose [`ErrorKind`] is the same
//!   word in the CLI, the library and MCP. A refused call carries a
//!   [`Refusal`] to match on.
//! - Approvals: [`ApprovalState`], an [`Approver`] that asks the user
//!   ([`TerminalApprover`], or your own dialog), [`PluginHost::approve_with`].
//! - What happens besides calls is a [`HostEvent`], on
//!   [`PluginHost::events`] and for every [`Observer`]. The library never
//!   prints.
//! - [`manifest`] and [`protocol`] are the plugin format; [`export`] turns
//!   tools into function-calling specs; `mcp` (feature `mcp`) serves a host
//!   over MCP.
//!
//! ```
//! use plughost::{Invocation, PluginHost};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let state = tempfile::tempdir()?;
//! let host = PluginHost::builder()
//!     .plugins_dir("plugins-examples")
//!     .state_dir(state.path())
//!     .build()?;
//! let runtime = tokio::runtime::Runtime::new()?;
//! let outcome = runtime.block_on(host.call("hello_greet", json!({"name": "Alice"}), Invocation::default()))?;
//! assert_eq!(outcome.result, "Hello, Alice!");
//! assert!(!outcome.is_error);
//!
//! // A host error is a typed error with a kind, not a panic or a string.
//! let err = runtime.block_on(host.call("hello_greet", json!({"name": 42}), Invocation::default())).unwrap_err();
//! assert_eq!(err.kind(), plughost::ErrorKind::InvalidArgs);
//! # Ok(()) }
//! ```
//!
//! # How it is built
//!
//! The load side (`plugins`) reads plugin folders, validates them and builds an
//! immutable catalog snapshot, swapped atomically on every reload. The call
//! side (`host` then `run`) checks the input, the policy and the approval,
//! prepares the sandbox, and runs the plugin: a process per call, or a
//! persistent worker. `approval` keeps the grants, `observe` the hooks. The
//! README has the map.

pub mod approval;
pub mod client;
mod error;
pub mod events;
pub mod export;
mod host;
#[cfg(feature = "mcp-server")]
pub mod mcp;
pub mod observe;
pub mod paths;
mod plugins;
pub mod protect;
pub mod protocol;
mod run;
pub mod schemas;

/// The `plugin.json` format: its types, and [`check_folder`](manifest::check_folder),
/// the check the host loads a plugin folder with.
pub mod manifest {
    pub use crate::plugins::manifest::*;
    pub use crate::plugins::validate::check_folder;
}

/// What the sandbox enforces and what it refused: [`SandboxMode`](sandbox::SandboxMode)
/// for a host, [`SandboxSupport`](sandbox::SandboxSupport) for this machine,
/// [`Denial`](sandbox::Denial) for what a plugin was refused.
pub mod sandbox {
    pub use crate::error::{Access, Denial};
    pub use crate::host::{DenialRecord, SandboxMode};
    pub use crate::run::sandbox::{NetLevel, SandboxLevel, SandboxSupport};
}

/// What a host reports about itself: `list`, `validate` and `doctor` as
/// data, for a front end to print.
pub mod report {
    pub use crate::error::RejectedTool;
    #[cfg(feature = "mcp-plugins")]
    pub use crate::host::Offered;
    pub use crate::host::{Doctor, Listing, PluginListing, ToolListing, Validation};
    pub use crate::plugins::catalog::{Collision, Rejected};
    pub use crate::run::sandbox::{NetLevel, SandboxSupport};
    pub use crate::run::worker::WorkerInfo;
}

// The integration tests' helpers (throwaway folders, /proc scans), shared.
#[cfg(test)]
#[path = "../tests/util/mod.rs"]
#[allow(
    unreachable_pub,
    reason = "written for the integration tests, whose crate roots export them"
)]
mod test_support;

pub use approval::{Approval, ApprovalError, ApprovalState, ApproveError, Approver};
pub use client::CallClient;
pub use error::{BuildError, CallError, Cause, ErrorKind, Refusal, Requirement};
pub use events::HostEvent;
pub use host::{CallOptions, CodeToolsError, PluginHost, PluginHostBuilder, SandboxMode, ToolInfo};
pub use observe::Observer;
pub use plugins::watcher::Watcher;
pub use protocol::{Invocation, Scope, Source};
pub use run::executor::{Limits, Progress};
pub use run::outcome::ToolOutcome;
