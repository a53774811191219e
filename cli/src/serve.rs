//! `plughost serve`: the MCP server, on stdio or (with `--http ADDR`) over
//! streamable HTTP. Only protocol messages go to stdout; logs go to stderr and,
//! with `--log-file`, to a file. With `--tokens FILE`, each token is a tenant
//! with a host of its own (see `plughost::serve` tenants).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use plughost::PluginHost;
use plughost::serve::{self as mcp, McpServer};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Serve MCP over streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// The bearer token file for --http (default: generated into the state folder).
    #[arg(
        long,
        value_name = "FILE",
        requires = "http",
        conflicts_with = "tokens"
    )]
    token_file: Option<PathBuf>,
    /// Tenants for --http: a file of `NAME TOKEN` lines. Each token gets its
    /// own approvals, data folders, call slots and sessions, in STATE/tenants/NAME.
    #[arg(long, value_name = "FILE", requires = "http")]
    tokens: Option<PathBuf>,
    /// Offer only what the profile NAME admits (profiles/NAME.json in the
    /// configuration folder, see --profiles-dir); with --tokens, each tenant's
    /// line names its own.
    #[arg(long, value_name = "NAME", conflicts_with = "tokens")]
    profile: Option<String>,
    /// List two tools, search_tools and call_tool, instead of every tool: the
    /// model searches the approved tools and calls the one it picks.
    #[arg(long)]
    tool_search: bool,
    /// Allow --http (and --metrics) on an address other than loopback.
    #[arg(long)]
    allow_remote: bool,
    /// Allow requests from browser pages of this origin (e.g. http://localhost:3000)
    /// besides the server's own; repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Seconds a call outlives the HTTP connection that carried its answer, for
    /// the client to resume it; then it is cancelled (0: at once).
    #[arg(long, value_name = "SECS", requires = "http", default_value_t = mcp::DEFAULT_RESUME_WINDOW.as_secs_f64())]
    resume_window: f64,
    /// Calls one HTTP session may run at once (default: a quarter of --concurrency).
    #[arg(long, value_name = "N", requires = "http")]
    session_slots: Option<usize>,
    /// Seconds an HTTP session may go without a call, a stream or a request before it ends.
    #[arg(long, value_name = "SECS", requires = "http", default_value_t = mcp::DEFAULT_SESSION_IDLE.as_secs_f64())]
    session_idle: f64,
    /// HTTP sessions one tenant may hold; a new one ends the session idle longest.
    #[arg(long, value_name = "N", requires = "http", default_value_t = mcp::DEFAULT_MAX_SESSIONS)]
    max_sessions: usize,
    /// The largest message accepted (a stdio line or an HTTP body), in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = mcp::DEFAULT_MAX_MESSAGE_BYTES)]
    max_message_bytes: usize,
    /// A file of at least 32 random bytes that seals the requestState of
    /// input_required rounds (default: a random key of this process). Give
    /// every replica of a fleet the same file, so that a retry any of them
    /// gets continues a round of a 2026-07-28 server.
    #[arg(long, value_name = "FILE")]
    request_state_key: Option<PathBuf>,
    /// Also append log lines to this file.
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464),
    /// on a listener of their own with no token; loopback only unless
    /// --allow-remote.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
}

impl Args {
    /// Whether it serves tenants (`--tokens`).
    pub fn has_tenants(&self) -> bool {
        self.tokens.is_some()
    }
}

fn seconds(value: f64, flag: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("{flag} takes seconds, 0 or more"))
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let log = Arc::new(super::log::Log::open(args.log_file.as_deref())?);
    let resume_window = seconds(args.resume_window, "--resume-window")?;
    let session_idle = seconds(args.session_idle, "--session-idle")?;
    if args.allow_remote && args.http.is_none() && args.metrics.is_none() {
        return Err("--allow-remote goes with --http or --metrics".to_owned());
    }
    let runtime = super::runtime();
    let traces = super::traces::Traces::from_env(cli.otlp_endpoint.as_deref(), runtime.handle())?;
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = plughost::observe::Prometheus::new(&mut registry);
    let with_telemetry = |b: plughost::PluginHostBuilder, tenant: &str| {
        super::traces::Traces::apply(traces.as_ref(), b).prometheus(&metrics, tenant)
    };
    let profile = |name: Option<&str>| {
        name.map(|n| {
            plughost::profile::ProfileSource::new(&cli.profiles_dir(), n).map_err(|e| e.to_string())
        })
        .transpose()
    };
    // What no plugin of any tenant may read or write, whatever it was
    // granted: the whole state folder (every tenant's approvals and secrets
    // are under it), the files of bearer tokens and the request-state key.
    let credentials = |mut b: plughost::PluginHostBuilder| {
        b = b.private_path(cli.state_dir());
        for file in [&args.tokens, &args.token_file, &args.request_state_key]
            .into_iter()
            .flatten()
        {
            b = b.private_path(file);
        }
        b
    };
    // One host per tenant (a single one without --tokens), each with its log
    // and its profile.
    let tenants: Vec<Tenant> = match &args.tokens {
        None => vec![Tenant {
            name: "default".to_owned(),
            token: None,
            host: Arc::new(
                cli.host_with(|b| with_telemetry(credentials(b).observer(log.clone()), "default"))?,
            ),
            profile: profile(args.profile.as_deref())?,
        }],
        Some(file) => {
            let mut hosts = Vec::new();
            for (i, line) in mcp::read_tokens(file)
                .map_err(|e| e.to_string())?
                .into_iter()
                .enumerate()
            {
                let name = line.name;
                let tagged = Arc::new(log.tagged(&name, i == 0));
                let state = mcp::tenant_state_dir(&cli.state_dir(), &name);
                let approvals = cli.tenant_approvals(&name);
                let host = cli.host_with(|b| {
                    let mut b = credentials(b).observer(tagged).state_dir(state);
                    if let Some(file) = approvals {
                        b = b.approvals_file(file, false);
                    }
                    with_telemetry(b, &name)
                })?;
                hosts.push(Tenant {
                    profile: profile(line.profile.as_deref())?,
                    name,
                    token: Some(line.token),
                    host: Arc::new(host),
                });
            }
            hosts
        }
    };
    let host = tenants[0].host.clone();
    let listing = host.listing();
    log.line(&format!(
        "plugins from {}: {} loaded, {} rejected",
        host.plugins_dir().display(),
        listing.plugins.len(),
        listing.rejected.len()
    ));
    for t in &tenants {
        if let Some(p) = &t.profile {
            log.line(&format!(
                "{}profile \"{}\" from {}",
                match args.tokens {
                    Some(_) => format!("[{}] ", t.name),
                    None => String::new(),
                },
                p.name(),
                p.path().display()
            ));
        }
    }
    let state_secret = match &args.request_state_key {
        Some(file) => Some(request_state_secret(file)?),
        None => None,
    };
    let server_for = |t: &Tenant| {
        let (log, tag) = (log.clone(), t.name.clone());
        let tagged = args.tokens.is_some();
        let folders = crate::remedy::Folders::of(&t.host);
        let mut server = McpServer::new(t.host.clone())
            .with_tool_search(args.tool_search)
            .with_max_message_bytes(args.max_message_bytes)
            .with_remedy_command(move |remedy| folders.command(remedy))
            .with_log(move |m| match tagged {
                true => log.line(&format!("[{tag}] {m}")),
                false => log.line(m),
            });
        if let Some(secret) = &state_secret {
            server = server.with_request_state_secret(secret, &t.name);
        }
        if let Some(name) = t.profile.as_ref().map(|p| p.name().to_owned()) {
            let source = plughost::profile::ProfileSource::new(&cli.profiles_dir(), &name)
                .expect("the name was checked above");
            server = server.with_profile(source);
        }
        server
    };
    if traces.is_some() {
        log.line("exporting traces over OTLP/HTTP");
    }
    let registry = Arc::new(registry);
    let result = runtime.block_on(async {
        // Dropped (and so stopped) with this block.
        let _metrics = match args.metrics {
            Some(addr) => {
                let listener = super::metrics::bind(addr, args.allow_remote).await?;
                let bound = listener.local_addr().map_err(|e| e.to_string())?;
                log.line(&super::metrics::describe(bound));
                Some(AbortOnDrop(tokio::spawn(super::metrics::serve(
                    listener,
                    registry.clone(),
                ))))
            }
            None => None,
        };
        let mut watchers = Vec::new();
        let mut listers = Vec::new();
        for Tenant { host, name, .. } in &tenants {
            watchers.push(
                host.watch()
                    .map_err(|e| format!("cannot watch {}: {e}", host.plugins_dir().display()))?,
            );
            let tag = args.tokens.is_some().then(|| name.clone());
            listers.push(AbortOnDrop(tokio::spawn(keep_servers_listed(
                host.clone(),
                log.clone(),
                tag,
            ))));
        }
        // A signal stops the server; the hosts' shutdown below kills calls in flight.
        let stop = async {
            let n = super::termination_signal().await;
            log.line(&format!("stopping on signal {n}"));
        };
        match args.http {
            None => {
                log.line("serving MCP on stdio");
                tokio::select! {
                    r = mcp::serve_stdio(server_for(&tenants[0])) => r.map_err(|e| e.to_string())?,
                    _ = stop => {}
                }
            }
            Some(addr) => {
                let mut served = Vec::new();
                for tenant in &tenants {
                    let Tenant { name, token, host, .. } = tenant;
                    let token = match token {
                        Some(t) => t.clone(),
                        None => {
                            let token = mcp::load_or_create_token(
                                args.token_file.as_deref(),
                                host.state_dir(),
                            )
                            .map_err(|e| e.to_string())?;
                            let source = match &args.token_file {
                                Some(f) => f.display().to_string(),
                                None => host.state_dir().join("http-token").display().to_string(),
                            };
                            log.line(&format!("bearer token in {source}"));
                            token
                        }
                    };
                    served.push(mcp::Tenant {
                        name: name.clone(),
                        token,
                        server: server_for(tenant),
                    });
                }
                if let Some(file) = &args.tokens {
                    log.line(&format!(
                        "{} tenants from {}, state in {}",
                        served.len(),
                        file.display(),
                        mcp::tenant_state_dir(&cli.state_dir(), "NAME").display()
                    ));
                }
                let mut options = mcp::HttpOptions::new(addr);
                options.allow_remote = args.allow_remote;
                options.allowed_origins = args.allow_origin.clone();
                options.resume_window = resume_window;
                options.session_slots = args.session_slots;
                options.session_idle = session_idle;
                options.max_sessions = args.max_sessions;
                options.metrics = Some(metrics.clone());
                let log = log.clone();
                mcp::serve_http(served, options, stop, move |m| log.line(m))
                    .await
                    .map_err(|e| match e {
                        mcp::ServeError::NotLoopback { addr } => format!(
                            "{addr} is not a loopback address; pass --allow-remote to serve other machines"
                        ),
                        e => e.to_string(),
                    })?;
            }
        }
        // Calls in flight kill and reap their processes before the program
        // exits (the runtime is dropped in the background below).
        for Tenant { host, .. } in &tenants {
            host.shutdown_and_wait(std::time::Duration::from_secs(5)).await;
        }
        drop(watchers);
        log.line("server stopped");
        Ok(ExitCode::SUCCESS)
    });
    // The last spans leave while the runtime their requests run on is there.
    drop(traces);
    // The stdio transport reads stdin on a blocking thread that only returns when
    // stdin closes; do not wait for it after a signal.
    runtime.shutdown_background();
    result
}

/// One tenant: its name, its token (none: the single server's own), its
/// host and its profile.
struct Tenant {
    name: String,
    token: Option<String>,
    host: Arc<PluginHost>,
    profile: Option<plughost::profile::ProfileSource>,
}

/// A task that ends with its owner.
/// The secret in `file` (`--request-state-key`): its bytes, surrounding
/// whitespace aside; at least 32 of them.
fn request_state_secret(file: &std::path::Path) -> Result<Vec<u8>, String> {
    let bytes =
        std::fs::read(file).map_err(|e| format!("--request-state-key {}: {e}", file.display()))?;
    let secret = bytes.trim_ascii();
    if secret.len() < 32 {
        return Err(format!(
            "--request-state-key {}: it holds {} bytes, and a key needs at least 32 random ones (make one with: head -c 32 /dev/urandom | base64 > {})",
            file.display(),
            secret.len(),
            file.display()
        ));
    }
    Ok(secret.to_vec())
}

/// Lists the approved MCP servers `host` has no listing of, now and after
/// each change of the plugins or the approvals: a replica whose approvals
/// file was written elsewhere offers their tools from its first list.
async fn keep_servers_listed(
    host: Arc<PluginHost>,
    log: Arc<super::log::Log>,
    tag: Option<String>,
) {
    use plughost::events::HostEvent;
    let mut events = host.events();
    let tag = tag.map(|t| format!("[{t}] ")).unwrap_or_default();
    loop {
        for (plugin, why) in host.list_approved_servers().await {
            log.line(&format!(
                "{tag}plugin \"{plugin}\": its tools could not be listed: {why}"
            ));
        }
        loop {
            match events.recv().await {
                Ok(
                    HostEvent::ApprovalGranted { .. }
                    | HostEvent::PluginAdded { .. }
                    | HostEvent::PluginUpdated { .. },
                )
                | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
