//! `plughost serve`: the MCP server, on stdio or (with `--http ADDR`) over
//! streamable HTTP. Only protocol messages go to stdout; logs go to stderr and,
//! with `--log-file`, to a file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use plughost::mcp::{self, McpServer};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Serve MCP over streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// The bearer token file for --http (default: generated into the state folder).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Allow --http on an address other than loopback.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// Allow requests from browser pages of this origin (e.g. http://localhost:3000)
    /// besides the server's own; repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Also append log lines to this file.
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let log = Arc::new(super::log::Log::open(args.log_file.as_deref())?);
    let host = Arc::new(cli.host_with(|b| b.observer(log.clone()))?);
    let listing = host.listing();
    log.line(&format!(
        "plugins from {}: {} loaded, {} rejected",
        host.plugins_dir().display(),
        listing.plugins.len(),
        listing.rejected.len()
    ));
    let runtime = super::runtime();
    let result = runtime.block_on(async {
        let _watch = host
            .watch()
            .map_err(|e| format!("cannot watch {}: {e}", host.plugins_dir().display()))?;
        let server = McpServer::new(host.clone());
        // A signal stops the server; the host's shutdown below kills calls in flight.
        let stop = async {
            let n = super::termination_signal().await;
            log.line(&format!("stopping on signal {n}"));
        };
        match args.http {
            None => {
                log.line("serving MCP on stdio");
                tokio::select! {
                    r = mcp::serve_stdio(server) => r.map_err(|e| e.to_string())?,
                    _ = stop => {}
                }
            }
            Some(addr) => {
                let token =
                    mcp::load_or_create_token(args.token_file.as_deref(), host.state_dir())?;
                let token_source = match &args.token_file {
                    Some(f) => f.display().to_string(),
                    None => host.state_dir().join("http-token").display().to_string(),
                };
                log.line(&format!("bearer token in {token_source}"));
                let options = mcp::HttpOptions {
                    addr,
                    token,
                    allow_remote: args.allow_remote,
                    allowed_origins: args.allow_origin.clone(),
                };
                mcp::serve_http(server, options, stop, |m| log.line(m)).await?;
            }
        }
        host.shutdown();
        log.line("server stopped");
        Ok(ExitCode::SUCCESS)
    });
    // The stdio transport reads stdin on a blocking thread that only returns when
    // stdin closes; do not wait for it after a signal.
    runtime.shutdown_background();
    result
}
