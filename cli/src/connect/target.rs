//! What the written entry runs: this plughost, by its absolute path, with
//! the global options it was given (so the client sees the same plugins,
//! approvals and limits), or the URL of a running `plughost serve --http`
//! with its bearer token.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::super::Cli;
use super::clients::Target;
use crate::shell;

/// `plughost [global options] serve [--profile NAME]`, started by the
/// client. A profile must exist and read well now: a client whose profile
/// is broken would be offered nothing.
pub fn stdio(cli: &Cli, profile: Option<&str>) -> Result<Target, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot tell where this plughost is: {e}"))?;
    let mut args = global_args(cli)?;
    args.push("serve".to_owned());
    if let Some(name) = profile {
        plughost::profile::ProfileSource::new(&cli.profiles_dir(), name)
            .and_then(|p| p.current())
            .map_err(|e| match e.file() {
                Some(file) => format!("{e} (the file {})", file.display()),
                None => e.to_string(),
            })?;
        args.push("--profile".to_owned());
        args.push(name.to_owned());
    }
    Ok(Target::Stdio {
        command: utf8(&exe)?,
        args,
    })
}

/// The URL of `plughost serve --http` and its token, with the file the
/// token is in: `--token-file`, or `STATE/http-token` (created as `serve`
/// would create it, so the server started later uses the same one).
pub fn http(cli: &Cli, url: &str, token_file: Option<&Path>) -> Result<(Target, PathBuf), String> {
    let url = if let Ok(addr) = url.parse::<SocketAddr>() {
        format!("http://{addr}/mcp")
    } else if url.starts_with("http://") || url.starts_with("https://") {
        url.to_owned()
    } else {
        return Err(format!(
            "--http takes the URL `plughost serve --http ADDR` serves (http://127.0.0.1:8765/mcp) or that ADDR, not {url:?}"
        ));
    };
    let state = cli.state_dir();
    let token =
        plughost::serve::load_or_create_token(token_file, &state).map_err(|e| e.to_string())?;
    let file = match token_file {
        Some(f) => std::path::absolute(f).unwrap_or_else(|_| f.to_path_buf()),
        None => state.join("http-token"),
    };
    Ok((Target::Http { url, token }, file))
}

/// The `plughost serve --http` command that serves `url` with the token
/// connect wrote, when the URL names a loopback-style `HOST:PORT/mcp`.
pub fn serve_command(cli: &Cli, url: &str, token_file: Option<&Path>) -> Option<String> {
    let addr = url
        .strip_prefix("http://")?
        .strip_suffix("/mcp")?
        .parse::<SocketAddr>()
        .ok()?;
    let mut words = vec!["plughost".to_owned()];
    words.extend(global_args(cli).ok()?.into_iter().map(|a| shell::quote(&a)));
    words.push(format!("serve --http {addr}"));
    if let Some(file) = token_file {
        words.push(format!("--token-file {}", shell::quote(&utf8(file).ok()?)));
    }
    Some(words.join(" "))
}

/// The global options that change what `serve` offers, as arguments: paths
/// absolute, and the folders also when they were not given but differ from
/// the defaults under `$HOME` (a client started from the desktop may not see
/// `XDG_STATE_HOME`).
fn global_args(cli: &Cli) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut folder = |flag: &str, given: bool, path: PathBuf, default: Option<PathBuf>| {
        if given || default.as_ref() != Some(&path) {
            let path = std::path::absolute(&path).unwrap_or(path);
            args.push(flag.to_owned());
            args.push(utf8(&path)?);
        }
        Ok::<_, String>(())
    };
    folder(
        "--plugins-dir",
        cli.plugins_dir.is_some(),
        cli.plugins_dir(),
        home.as_ref().map(|h| h.join(".plugins")),
    )?;
    folder(
        "--state-dir",
        cli.state_dir.is_some(),
        cli.state_dir(),
        home.as_ref().map(|h| h.join(".local/state/plughost")),
    )?;
    if let Some(dir) = &cli.profiles_dir {
        args.push("--profiles-dir".to_owned());
        args.push(utf8(
            &std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
        )?);
    }
    let mut flag = |on: bool, name: &str| {
        if on {
            args.push(name.to_owned());
        }
    };
    flag(cli.inherit_env, "--inherit-env");
    flag(cli.no_sandbox, "--no-sandbox");
    flag(cli.require_sandbox, "--require-sandbox");
    let mut value = |name: &str, v: Option<String>| {
        if let Some(v) = v {
            args.push(name.to_owned());
            args.push(v);
        }
    };
    value("--timeout", cli.timeout.map(|t| t.to_string()));
    value(
        "--concurrency",
        (cli.concurrency != plughost::PluginHostBuilder::DEFAULT_CONCURRENCY)
            .then(|| cli.concurrency.to_string()),
    );
    value(
        "--max-input-bytes",
        cli.max_input_bytes.map(|n| n.to_string()),
    );
    value("--rate-limit", cli.rate_limit.map(|n| n.to_string()));
    value(
        "--session-budget",
        cli.session_budget.map(|n| n.to_string()),
    );
    if let Some(log) = &cli.audit_log {
        args.push("--audit-log".to_owned());
        args.push(utf8(
            &std::path::absolute(log).unwrap_or_else(|_| log.clone()),
        )?);
    }
    if cli.audit_inputs {
        args.push("--audit-inputs".to_owned());
    }
    Ok(args)
}

fn utf8(path: &Path) -> Result<String, String> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        format!(
            "{} is not UTF-8, which a client's configuration file cannot hold: use a path that is",
            path.display()
        )
    })
}
