//! `plughost add https://…/mcp`: a remote MCP server as a plugin. Its folder
//! holds only a manifest naming the URL; plughost's bridge reaches the
//! server, granted its host and port alone, once the user approves.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use super::folder::{ordered, staged};
use super::{AddArgs, MANIFEST_FILE, approve};
use crate::scaffold;
use crate::terminal::{esay, say};
use plughost::SignInError;
use plughost::remote::oauth::OAuthError;

/// Adds the server at `url` as the plugin `--name` (by default `named`,
/// the registry's name for it, or else named after the URL's host), and
/// has it approved and listed.
pub(super) fn add(
    cli: &crate::Cli,
    args: &AddArgs,
    plugins: &Path,
    url: &str,
    named: Option<&str>,
) -> Result<ExitCode, String> {
    if !args.server_args.is_empty() || !args.command.is_empty() {
        return Err("a remote server takes no arguments: plughost add URL [--name NAME]".into());
    }
    // The URL's host is granted; an address it resolves to that is
    // private needs its own grant (network:10.0.0.5:443).
    if let Some(g) = args.grants.iter().find(|g| !g.starts_with("network:")) {
        return Err(format!(
            "a remote server's bridge reads and writes no files: drop --grant {g} (network:HOST grants only)"
        ));
    }
    if !args.secrets.is_empty() {
        return Err("a remote server's bridge holds no secrets: drop --secret".into());
    }
    super::check_grants(&args.grants)?;
    let parsed = url::Url::parse(url).map_err(|e| format!("\"{url}\" is not a URL: {e}"))?;
    let name = match args.name.as_deref().or(named) {
        Some(n) => n.to_owned(),
        None => name_of(&parsed).ok_or_else(|| {
            format!("cannot name a plugin after \"{url}\": give one with --name NAME")
        })?,
    };
    let dir = plugins.join(&name);
    if dir.exists() {
        return Err(format!(
            "{} exists already: remove it, or give another --name",
            dir.display()
        ));
    }
    let manifest = ordered(&[
        ("name", json!(name)),
        ("version", json!("1.0.0")),
        (
            "description",
            json!(format!("The remote MCP server at {url}.")),
        ),
        ("protocol", json!("mcp")),
        ("remote", json!(url)),
        ("permissions", json!(args.grants)),
    ]);
    let stage = plugins.join(format!(".{name}.adding"));
    staged(&stage, |stage| {
        scaffold::write(&stage.join(MANIFEST_FILE), &manifest, false)?;
        std::fs::rename(stage, &dir)
            .map_err(|e| format!("cannot move the plugin into {}: {e}", dir.display()))
    })?;
    say!(
        "added {name}: the remote MCP server at {url}, in {}",
        dir.display()
    );
    // A server that wants a sign-in gets it now, before its tools can be
    // listed and pinned; one that answers without a sign-in, or cannot be
    // reached (which approval then reports), is left as it is.
    let host = cli.host()?;
    match crate::login::sign_in(&host, &name, &args.sign_in)? {
        Ok(()) => say!("signed in to {name}"),
        Err(SignInError::OAuth {
            source: OAuthError::NotNeeded(_) | OAuthError::Unreachable(_),
            ..
        }) => {}
        Err(e) => {
            esay!("plughost: {e}");
            say!(
                "\nthe plugin stays in {}: sign in with {}, then approve it with {}",
                dir.display(),
                cli.command_line(&format!("login {name}")),
                cli.command_line(&format!("approve {name}"))
            );
            return Ok(ExitCode::from(1));
        }
    }
    drop(host);
    approve::approve_new(cli, &name, &dir, args.yes, None)
}

/// A plugin name from a URL's host: its most telling label
/// (`mcp.linear.app` gives `linear`, `127.0.0.1` gives `remote-127-0-0-1`).
fn name_of(url: &url::Url) -> Option<String> {
    let host = url.host_str()?;
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9') => c,
                _ => '-',
            })
            .collect::<String>()
            .trim_matches('-')
            .to_owned()
    };
    let name = match url.host() {
        Some(url::Host::Domain(_)) => {
            let labels: Vec<&str> = host.split('.').collect();
            let generic = ["mcp", "api", "www", "app", "server"];
            let wanted = labels
                .iter()
                .take(labels.len().saturating_sub(1).max(1))
                .find(|l| !generic.contains(l))
                .or(labels.first())?;
            clean(wanted)
        }
        _ => format!("remote-{}", clean(host)),
    };
    (!name.is_empty()).then(|| name.chars().take(64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_is_named_after_its_server_s_host() {
        let name = |u: &str| name_of(&url::Url::parse(u).unwrap());
        assert_eq!(
            name("https://mcp.linear.app/mcp").as_deref(),
            Some("linear")
        );
        assert_eq!(
            name("https://api.githubcopilot.com/mcp/").as_deref(),
            Some("githubcopilot")
        );
        assert_eq!(
            name("http://localhost:3000/mcp").as_deref(),
            Some("localhost")
        );
        assert_eq!(
            name("http://127.0.0.1:9/mcp").as_deref(),
            Some("remote-127-0-0-1")
        );
        assert_eq!(name("http://[::1]:9/mcp").as_deref(), Some("remote-1"));
    }
}
