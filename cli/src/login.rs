//! `plughost login NAME` / `logout NAME`: signing in to a remote MCP server
//! with OAuth (`PluginHost::sign_in`). The URL to approve in is opened with
//! `$BROWSER` (its first entry; `%s` stands for the URL) or the system's
//! opener (`xdg-open`, `open`), and always printed, so that on a machine
//! with no browser it can be opened elsewhere (the browser must then reach
//! this machine's loopback address, as with an SSH port forward).

use std::process::{Command, ExitCode, Stdio};

use plughost::remote::oauth::ClientIdentity;
use plughost::{PluginHost, SignInError};

use super::Cli;
use super::terminal::{esay, say};

#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// The remote server's plugin.
    name: String,
    /// Sign in for this tenant of `serve --http --tokens` (its own state
    /// folder, STATE/tenants/NAME): a tenant never uses another's sign-in.
    #[arg(long, value_name = "NAME")]
    tenant: Option<String>,
    #[command(flatten)]
    sign_in: SignInArgs,
}

/// How plughost identifies itself when it signs in (`login`, `add URL`).
#[derive(Debug, Clone, clap::Args)]
pub struct SignInArgs {
    /// A client registered with the server's authorization server
    /// beforehand, used instead of registering one.
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// The environment variable that holds that client's secret (a
    /// confidential client); never the secret itself on the command line.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    client_secret_env: Option<String>,
    /// The URL of a client ID metadata document describing plughost, used
    /// as its client id where the server supports those.
    #[arg(long, value_name = "URL")]
    client_metadata_url: Option<String>,
    /// Print the sign-in URL only; open no browser.
    #[arg(long)]
    no_browser: bool,
}

#[derive(Debug, clap::Args)]
pub struct LogoutArgs {
    /// The remote server's plugin.
    name: String,
    /// Sign out of this tenant of `serve --http --tokens` only.
    #[arg(long, value_name = "NAME")]
    tenant: Option<String>,
}

/// The host of `tenant` (its own state folder), or of the global options.
fn host_of(cli: &Cli, tenant: Option<&str>) -> Result<PluginHost, String> {
    match tenant {
        Some(t) => {
            if !plughost::serve::valid_tenant_name(t) {
                return Err(format!(
                    "--tenant {t}: a tenant's name is lowercase letters, digits, - and _, as in the tokens file"
                ));
            }
            let state = plughost::serve::tenant_state_dir(&cli.state_dir(), t);
            cli.host_with(|b| b.state_dir(state))
        }
        None => cli.host(),
    }
}

pub fn login(cli: &Cli, args: &LoginArgs) -> Result<ExitCode, String> {
    let host = host_of(cli, args.tenant.as_deref())?;
    match sign_in(&host, &args.name, &args.sign_in)? {
        Ok(()) => {
            say!("signed in to {}", args.name);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            esay!("plughost: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// Signs in to plugin `name`'s server; the outer error is the command
/// line's (a variable not set), the inner the sign-in's.
pub fn sign_in(
    host: &PluginHost,
    name: &str,
    args: &SignInArgs,
) -> Result<Result<(), SignInError>, String> {
    let client_secret = match &args.client_secret_env {
        Some(var) => Some(
            std::env::var(var)
                .map_err(|_| format!("--client-secret-env {var}: the variable {var} is not set"))?,
        ),
        None => None,
    };
    let client = ClientIdentity {
        client_id: args.client_id.clone(),
        client_secret,
        metadata_url: args.client_metadata_url.clone(),
    };
    let no_browser = args.no_browser;
    let open = move |url: &str| {
        esay!("Open this URL to sign in (it comes back to this machine):\n  {url}");
        if !no_browser {
            open_browser(url);
        }
    };
    Ok(super::runtime().block_on(host.sign_in(name, &client, open)))
}

pub fn logout(cli: &Cli, args: &LogoutArgs) -> Result<ExitCode, String> {
    let host = host_of(cli, args.tenant.as_deref())?;
    match host.sign_out(&args.name) {
        Ok(true) => say!("signed out of {}", args.name),
        Ok(false) => say!("{} had no sign-in", args.name),
        Err(e) => return Err(e.to_string()),
    }
    Ok(ExitCode::SUCCESS)
}

/// Shows, and opens, the URL of a sign-in a remote server asks for in the
/// middle of a session (step-up, or a sign-in it refused): on stderr, which
/// is never the MCP channel of `serve`.
pub fn open_again(plugin: &str, url: &str) {
    esay!(
        "plugin {plugin}'s remote server asks for a new sign-in; open this URL to approve it (it comes back to this machine):\n  {url}"
    );
    open_browser(url);
}

/// Opens `url` with `$BROWSER`, else the system's opener; a browser that
/// cannot be started leaves the printed URL to the user.
fn open_browser(url: &str) {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let (program, args): (String, Vec<String>) = match browser {
        Some(b) => {
            let first = b.split(':').next().unwrap_or_default().to_owned();
            let mut words: Vec<String> = first.split_whitespace().map(str::to_owned).collect();
            if words.is_empty() {
                return;
            }
            let program = words.remove(0);
            match words.iter().any(|w| w.contains("%s")) {
                true => {
                    let args = words.iter().map(|w| w.replace("%s", url)).collect();
                    (program, args)
                }
                false => {
                    words.push(url.to_owned());
                    (program, words)
                }
            }
        }
        None if cfg!(target_os = "macos") => ("open".into(), vec![url.to_owned()]),
        None => ("xdg-open".into(), vec![url.to_owned()]),
    };
    let started = Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match started {
        // Waited for, so that a long-running `serve` leaves no zombie.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => esay!("(could not start {program}: {e}; open the URL yourself)"),
    }
}
