//! The integration tests: the real binary, real plugins, real MCP peers.
//! One test binary with a module per area (one link instead of fifteen).

mod util;

#[cfg(feature = "mcp-server")]
#[path = "util/mcp_client.rs"]
mod mcp_client;

mod add;
mod approval_order;
mod brokered;
mod claude_code;
mod cli;
mod cli_plugins;
mod connect;
mod denials;
mod deploy;
mod docs;
mod escapes;
mod executor;
mod first_hour;
mod fleet;
mod followed_paths;
mod gateway;
mod hot_reload;
#[cfg(feature = "mcp-server")]
mod keyring;
mod mcp;
mod mcp_hostile;
mod mcp_http;
mod mcp_plugins;
mod mcp_profiles;
mod mcp_state;
mod mcp_stdio;
mod net_grants;
mod observers;
mod permissions;
mod protected;
mod remote;
mod remote_sign_in;
mod sdk_plugins;
mod secrets;
mod telemetry;
mod validate_code;
mod words;
mod workers;

/// Whether an MCP server granted no network gets a network namespace of
/// its own here (user namespaces work); a test that needs one fails in CI
/// without it, and says so elsewhere.
fn server_network_namespace() -> bool {
    util::prerequisite(
        "user namespaces (the server's own network namespace)",
        plughost::sandbox::SandboxSupport::here().user_namespaces,
    )
}
