//! plughost runs AI-agent tools as plugins: a folder with a `plugin.json`
//! manifest and an executable. Each call spawns the executable, writes one JSON
//! request to its stdin and reads one JSON response from its stdout, under a
//! timeout, output caps and a process-group kill.
//!
//! Data flow: [`loader`] reads plugin folders and [`validate`]s them into a
//! [`catalog::Catalog`] snapshot; [`PluginHost::call`] checks the input, runs the
//! [`executor`] and turns the result into a [`ToolOutcome`] or a [`CallError`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use plughost::{Invocation, PluginHost};
//! use serde_json::json;
//!
//! let host = PluginHost::builder().plugins_dir("plugins-examples").build()?;
//! let outcome = host.call("hello_greet", json!({"name": "Alice"}), Invocation::default()).await?;
//! assert_eq!(outcome.result, "Hello, Alice!");
//! # Ok(()) }
//! ```

pub mod approval;
pub mod audit;
pub mod catalog;
pub mod env;
pub mod error;
pub mod events;
pub mod executor;
pub mod export;
pub mod host;
pub mod loader;
pub mod manifest;
pub mod metrics;
pub mod observe;
pub mod outcome;
pub mod paths;
pub mod policy;
pub mod protocol;
pub mod sandbox;
pub mod scaffold;
pub mod schemas;
pub mod validate;
pub mod watcher;

pub use error::{CallError, ErrorKind};
pub use events::HostEvent;
pub use executor::{Limits, Progress};
pub use host::{CallOptions, PluginHost, PluginHostBuilder, SandboxMode, ToolInfo};
pub use observe::{CallInfo, CallSummary, Interests, Observer, ObserverResult};
pub use outcome::ToolOutcome;
pub use policy::Policy;
pub use protocol::{Invocation, Scope, Source};
