//! The `plughost` command line: argument parsing and dispatch. Each command
//! lives in its own file and returns the process exit code.

mod add;
mod approve;
mod call;
mod completions;
mod connect;
mod doctor;
mod export;
mod list;
mod log;
mod login;
mod metrics;
mod new;
mod otlp_client;
mod remedy;
mod scaffold;
mod schema;
mod secret;
mod serve;
mod shell;
mod stats;
mod terminal;
mod traces;
mod validate;
mod watch;
mod with_code;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use plughost::{PluginHost, PluginHostBuilder, SandboxMode};

/// Runs AI-agent tools as plugins: one process per call, JSON on stdin and stdout.
#[derive(Debug, Parser)]
#[command(name = "plughost", version, about, max_term_width = 100)]
pub struct Cli {
    /// Folder holding one folder per plugin (default: ~/.plugins).
    #[arg(long, global = true, env = "PLUGHOST_PLUGINS_DIR", value_name = "DIR")]
    plugins_dir: Option<PathBuf>,

    /// Folder for approvals and plugin data (default: $XDG_STATE_HOME/plughost).
    #[arg(long, global = true, env = "PLUGHOST_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,

    /// Approvals (grants and tool pins) in this file instead of the state
    /// folder's: one approval state for many hosts. `serve` only reads it
    /// (and follows its changes); `approve` and `revoke` write it. With
    /// `serve --tokens`, a `{tenant}` in it names each tenant's own file.
    #[arg(long, global = true, env = "PLUGHOST_APPROVALS", value_name = "FILE")]
    approvals: Option<PathBuf>,

    /// Folder of profiles, one NAME.json each (default: $XDG_CONFIG_HOME/plughost/profiles).
    #[arg(long, global = true, env = "PLUGHOST_PROFILES_DIR", value_name = "DIR")]
    profiles_dir: Option<PathBuf>,

    /// Time limit of one call in seconds, overriding every tool's timeout_secs.
    #[arg(long, global = true, value_name = "SECS")]
    timeout: Option<f64>,

    /// Print JSON instead of text (listings and call outcomes).
    #[arg(long, global = true)]
    json: bool,

    /// Pass the whole environment to plugins instead of the allowlist.
    #[arg(long, global = true)]
    inherit_env: bool,

    /// Append one JSON line per call to this file (time, tool, plugin, caller, outcome, duration).
    #[arg(long, global = true, env = "PLUGHOST_AUDIT_LOG", value_name = "FILE")]
    audit_log: Option<PathBuf>,

    /// Record each call's input in the audit log too.
    #[arg(long, global = true, requires = "audit_log")]
    audit_inputs: bool,

    /// Run plugins without the Linux sandbox: permissions become advisory.
    #[arg(long, global = true, conflicts_with = "require_sandbox")]
    no_sandbox: bool,

    /// Refuse calls when this kernel cannot enforce a plugin's restrictions.
    #[arg(long, global = true)]
    require_sandbox: bool,

    /// How many plugin processes run at once (further calls wait).
    #[arg(long, global = true, value_name = "N", default_value_t = plughost::PluginHostBuilder::DEFAULT_CONCURRENCY)]
    concurrency: usize,

    /// Largest tool input accepted, in bytes of JSON (default 1 MiB).
    #[arg(long, global = true, value_name = "BYTES")]
    max_input_bytes: Option<usize>,

    /// Allow each plugin at most N calls per minute.
    #[arg(long, global = true, value_name = "N")]
    rate_limit: Option<u32>,

    /// Allow each session (MCP connection or library session id) at most N calls.
    #[arg(long, global = true, value_name = "N")]
    session_budget: Option<u32>,

    /// Export a span per call over OTLP/HTTP to this collector (its base URL,
    /// e.g. http://localhost:4318); the OTEL_EXPORTER_OTLP_* variables work too.
    #[arg(long, global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List plugins, their tools, and every rejected plugin with its reason.
    List,
    /// Validate one plugin folder, or every plugin in the plugins folder (no plugin code runs unless --with-code).
    Validate(validate::Args),
    /// Call a tool once and print its result.
    Call(call::Args),
    /// Approve a plugin's permissions (asks on the terminal; --yes for scripts).
    Approve(approve::ApproveArgs),
    /// Withdraw a plugin's approval.
    Revoke(approve::RevokeArgs),
    /// Print the tool specs for an LLM provider's function calling.
    Export(export::Args),
    /// Read a model's reply on stdin and print its <tool_call> blocks as JSON.
    ParseToolCall,
    /// What this machine enforces, the folders in use, and plugins with problems;
    /// with NAME, what the sandbox refused that plugin recently and the
    /// permission errors it reported.
    Doctor(doctor::Args),
    /// Write plughost's entry into an MCP client's configuration (with a preview,
    /// a backup and --undo); --list shows where it is connected.
    Connect(connect::Args),
    /// Create a plugin folder that validates and runs, to start from.
    New(new::Args),
    /// Install an MCP server from npm or PyPI into a new plugin folder, list
    /// its tools in the sandbox, and ask for approval.
    Add(add::AddArgs),
    /// Find MCP servers in the MCP Registry by name (add one with plughost add NAME).
    Search(add::SearchArgs),
    /// Sign in to a remote MCP server's plugin with OAuth, in the browser;
    /// its tokens are kept in the secret store, for that plugin alone.
    Login(login::LoginArgs),
    /// Forget a remote MCP server's sign-in.
    Logout(login::LogoutArgs),
    /// Keep secrets (API tokens) for plugins: set, list, rm. A plugin that
    /// lists a secret's name in "env" gets its value.
    Secret(secret::Args),
    /// Install a newer version of a package added with `plughost add`; its
    /// changed tools are withheld until approved again.
    Update(add::UpdateArgs),
    /// Summarize an audit log: calls, outcomes and durations per tool.
    Stats(stats::Args),
    /// Serve every plugin tool over MCP (stdio, or streamable HTTP with --http).
    Serve(serve::Args),
    /// Print hot-reload events as they happen, until interrupted.
    Watch,
    /// Print a JSON Schema (manifest, request or response).
    Schema(schema::Args),
    /// Print shell completions: plughost completions bash > /etc/bash_completion.d/plughost
    Completions(completions::Args),
    /// Print the man page (roff): plughost man | man -l -
    Man,
    /// The process that stands for a remote MCP server: JSON-RPC lines on
    /// stdin and stdout, bridged to the server's streamable HTTP at URL.
    #[command(hide = true)]
    RemoteBridge {
        /// The server's URL.
        url: String,
    },
}

/// Parses the command line and runs the command.
fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(message) => {
            terminal::esay!("plughost: {message}");
            ExitCode::from(2)
        }
    }
}

/// A reader that stops reading (`plughost list --json | head`) ends the
/// output quietly: `println!` panics on a closed stdout, and that panic
/// becomes the exit a program killed by SIGPIPE has (141), without a word.
/// SIGPIPE itself stays ignored: the pipes to plugins that exit early need
/// that.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// The hidden command a remote server's process runs.
const REMOTE_BRIDGE: &str = "remote-bridge";

/// This program, which runs remote servers' bridges: as the running file
/// names it, so that a rebuilt binary bridges the next server.
fn bridge_program() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("plughost"))
}

/// Bridges stdin and stdout to the remote MCP server at `url` (see
/// `plughost::remote`), until stdin closes.
fn remote_bridge(url: &str) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start: {e}"))?;
    // The sign-in's access token, which the host that started this bridge
    // gave it (see `plughost::remote::BEARER_VARIABLE`).
    let bearer = std::env::var(plughost::remote::BEARER_VARIABLE).ok();
    runtime
        .block_on(plughost::remote::bridge(
            url,
            bearer.as_deref().filter(|b| !b.is_empty()),
            tokio::io::stdin(),
            tokio::io::stdout(),
        ))
        .map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match &cli.command {
        Command::List => list::run(&cli),
        Command::Validate(args) => validate::run(&cli, args),
        Command::Call(args) => call::run(&cli, args),
        Command::Approve(args) => approve::approve(&cli, args),
        Command::Revoke(args) => approve::revoke(&cli, args),
        Command::Schema(args) => schema::run(args),
        Command::Watch => watch::run(&cli),
        Command::Serve(args) => serve::run(&cli, args),
        Command::Stats(args) => stats::run(&cli, args),
        Command::New(args) => new::run(&cli, args),
        Command::Add(args) => add::add(&cli, args),
        Command::Update(args) => add::update(&cli, args),
        Command::Secret(args) => secret::run(&cli, args),
        Command::Login(args) => login::login(&cli, args),
        Command::Logout(args) => login::logout(&cli, args),
        Command::Search(args) => add::search(args),
        Command::Connect(args) => connect::run(&cli, args),
        Command::Doctor(args) => doctor::run(&cli, args),
        Command::Export(args) => export::run(&cli, args),
        Command::ParseToolCall => export::run_parse(),
        Command::Completions(args) => completions::run(args),
        Command::Man => completions::run_man(),
        Command::RemoteBridge { url } => remote_bridge(url),
    }
}

impl Cli {
    fn plugins_dir(&self) -> PathBuf {
        self.plugins_dir
            .clone()
            .unwrap_or_else(plughost::paths::default_plugins_dir)
    }

    fn profiles_dir(&self) -> PathBuf {
        self.profiles_dir
            .clone()
            .unwrap_or_else(plughost::paths::default_profiles_dir)
    }

    fn state_dir(&self) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(plughost::paths::default_state_dir)
    }

    /// `plughost` with the global options that were given (those a later
    /// command needs to act on the same plugins, state and sandbox), for
    /// the commands plughost tells the user to run next.
    fn command_line(&self, rest: &str) -> String {
        self.command_line_in(self.plugins_dir.as_deref(), rest)
    }

    /// [`Cli::command_line`] for the plugins folder `plugins`.
    fn command_line_in(&self, plugins: Option<&std::path::Path>, rest: &str) -> String {
        let q = shell::quote;
        let mut cmd = String::from("plughost");
        if let Some(d) = plugins {
            cmd.push_str(&format!(" --plugins-dir {}", q(&d.to_string_lossy())));
        }
        if let Some(d) = &self.state_dir {
            cmd.push_str(&format!(" --state-dir {}", q(&d.to_string_lossy())));
        }
        if let Some(f) = &self.approvals {
            cmd.push_str(&format!(" --approvals {}", q(&f.to_string_lossy())));
        }
        if let Some(t) = self.timeout {
            cmd.push_str(&format!(" --timeout {t}"));
        }
        for (given, flag) in [
            (self.no_sandbox, "--no-sandbox"),
            (self.require_sandbox, "--require-sandbox"),
            (self.inherit_env, "--inherit-env"),
        ] {
            if given {
                cmd.push(' ');
                cmd.push_str(flag);
            }
        }
        cmd.push(' ');
        cmd.push_str(rest);
        cmd
    }

    /// A host configured from the global options.
    fn host(&self) -> Result<PluginHost, String> {
        self.host_with(|b| b)
    }

    /// The sandbox mode the global options ask for.
    fn sandbox_mode(&self) -> SandboxMode {
        if self.no_sandbox {
            SandboxMode::Off
        } else if self.require_sandbox {
            SandboxMode::Required
        } else {
            SandboxMode::On
        }
    }

    /// A host configured from the global options, then by `extra`.
    fn host_with(
        &self,
        extra: impl FnOnce(PluginHostBuilder) -> PluginHostBuilder,
    ) -> Result<PluginHost, String> {
        let mut builder = PluginHost::builder()
            .remote_bridge(bridge_program(), [REMOTE_BRIDGE])
            .plugins_dir(self.plugins_dir())
            .state_dir(self.state_dir())
            .inherit_env(self.inherit_env)
            .reap_orphans(true)
            .concurrency(self.concurrency)
            .sandbox(self.sandbox_mode())
            .policy(plughost::Policy {
                rate_per_minute: self.rate_limit,
                session_budget: self.session_budget,
                ..plughost::Policy::default()
            });
        // A server's tenants are not at this machine: whoever approved here
        // would give them their own sign-in.
        if !matches!(&self.command, Command::Serve(args) if args.has_tenants()) {
            builder = builder.sign_in_opener(login::open_again);
        }
        if let Some(max) = self.max_input_bytes {
            builder = builder.limits(plughost::Limits {
                max_input: max,
                ..plughost::Limits::default()
            });
        }
        if let Some(path) = &self.audit_log {
            builder = builder.audit_log(path, self.audit_inputs);
        }
        if let Some(file) = &self.approvals {
            // A server is one of the fleet's replicas: it never writes.
            let writable = !matches!(self.command, Command::Serve(_));
            if file
                .parent()
                .is_some_and(|f| f.to_string_lossy().contains(TENANT))
            {
                return Err(format!(
                    "--approvals {}: put {TENANT} in the file's name, not in a folder's: every tenant's file sits in one folder that no plugin may read",
                    file.display()
                ));
            }
            if file.to_string_lossy().contains(TENANT)
                && !matches!(&self.command, Command::Serve(args) if args.has_tenants())
            {
                return Err(format!(
                    "--approvals {}: only `serve --tokens` fills in {TENANT}, with each tenant's name; name one tenant's file here",
                    file.display()
                ));
            }
            let file = absolute(file)?;
            let folder = file.parent().unwrap_or(std::path::Path::new("/"));
            let shared = folder == std::path::Path::new("/")
                || Some(folder) == std::env::home_dir().as_deref()
                || self.plugins_dir().starts_with(folder)
                || self.state_dir().starts_with(folder);
            if shared {
                return Err(format!(
                    "--approvals {}: keep the approvals file in a folder of its own (such as ~/fleet/approvals.json); no plugin may read or write that folder",
                    file.display()
                ));
            }
            builder = builder.approvals_file(file, writable);
        }
        if let Some(secs) = self.timeout {
            if !(secs > 0.0 && secs.is_finite()) {
                return Err(format!(
                    "--timeout must be a positive number of seconds, not {secs}"
                ));
            }
            builder = builder.timeout(Duration::from_secs_f64(secs));
        }
        extra(builder).build().map_err(|e| error_chain(&e))
    }

    /// The approvals file of tenant `name`: `--approvals` with its
    /// `{tenant}` filled in, when it has one.
    fn tenant_approvals(&self, name: &str) -> Option<PathBuf> {
        let file = self.approvals.as_ref()?.to_string_lossy().into_owned();
        file.contains(TENANT)
            .then(|| absolute(std::path::Path::new(&file.replace(TENANT, name))).ok())
            .flatten()
    }
}

/// `path` made absolute against the current folder (a relative file would
/// change meaning with the folder a plugin runs in).
/// What `--approvals` holds in the place of a tenant's name.
const TENANT: &str = "{tenant}";

fn absolute(path: &std::path::Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|e| format!("cannot resolve {}: {e}", path.display()))
}

/// Resolves with the signal number when plughost is asked to stop (SIGINT,
/// SIGTERM, SIGHUP). Plugins run in their own process groups, so a signal to
/// plughost never reaches them: whoever awaits this must shut the host down,
/// which kills their process trees.
async fn termination_signal() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    }
}

/// An error and its causes, each once: `cannot read the plugins folder X: permission denied`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// A value of one of the library's enums on the command line: its names
/// and their order come from the library (`ALL`, `name`).
fn choice<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(all.iter().map(|t| name(*t))).map(move |chosen| {
        *all.iter()
            .find(|t| name(**t) == chosen)
            .expect("clap only passes a possible value")
    })
}

/// A multi-threaded runtime for commands that run calls.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
}

/// Prints `value` as pretty JSON on stdout, with nothing in it a terminal
/// acts on (see [`terminal::json`]).
fn print_json(value: &impl serde::Serialize) {
    println!("{}", terminal::json(value));
}
