//! plughost runs AI-agent tools as plugins: a folder with a `plugin.json`
//! manifest and an executable. Each call spawns the executable, writes one JSON
//! request to its stdin and reads one JSON response from its stdout, under a
//! timeout, output caps and a process-group kill.
//!
//! Data flow: [`loader`] reads plugin folders and [`validate`]s them into a
//! [`catalog::Catalog`] snapshot; [`PluginHost::call`] checks the input, runs the
//! [`executor`] and turns the result into a [`ToolOutcome`] or a [`CallError`].
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

pub mod approval;
pub mod error;
pub mod export;
pub mod host;
pub mod mcp;
pub mod observe;
pub mod paths;
pub mod plugins;
pub mod protocol;
pub mod run;
pub mod schemas;

pub use error::{CallError, ErrorKind};
pub use host::{CallOptions, PluginHost, PluginHostBuilder, SandboxMode, ToolInfo};
pub use observe::policy::Policy;
pub use observe::{CallInfo, CallSummary, Interests, Observer, ObserverResult};
pub use plugins::events::HostEvent;
pub use protocol::{Invocation, Scope, Source};
pub use run::executor::{Limits, Progress};
pub use run::outcome::ToolOutcome;
