//! Installing a package runs the package's own code: npm's install scripts,
//! a source distribution's build. So the installer runs in plughost's
//! sandbox, as a plugin of a throwaway host made for it:
//!
//! - it writes only the staging folder (and a home of its own, for the
//!   installer's cache and configuration, in the throwaway state folder);
//! - it reaches the network only through the egress proxy, and only the
//!   package registry's hosts (`network:HOST:PORT`);
//! - it reads what every plugin reads (the system folders, its
//!   interpreter's install folder when that is elsewhere) and nothing of
//!   the user's home: not `~/.ssh`, not plughost's state (secrets,
//!   approvals), not the user's `~/.npmrc` (the registry it names is passed
//!   on);
//! - it has the call limits of a plugin: a timeout (15 minutes), output
//!   caps, its whole process tree killed at the end.
//!
//! A refusal is reported with what was refused (the sandbox's and the
//! proxy's records) and the end of the installer's log. With `--no-sandbox`
//! the installer runs unconfined, as the user asked.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use plughost::{PluginHost, SandboxMode};
use serde_json::json;

use crate::shell;

/// The variables that name the certificate authorities to trust.
const CA_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "npm_config_cafile",
];

/// The prefixes of the installers' own settings.
const INSTALLER_PREFIXES: &[&str] = &["PIP_", "UV_", "npm_config_", "NPM_CONFIG_"];

/// How long an install may take.
const TIMEOUT_SECS: u64 = 900;
const PLUGIN: &str = "installer";

/// Where and how an installer runs.
#[derive(Debug, Clone)]
pub struct Confine {
    /// `Off` runs the installer as a plain process.
    pub sandbox: SandboxMode,
    /// plughost's own state folder, which the installer never reads.
    pub state_dir: PathBuf,
    /// `HOST:PORT` of the registry (and where it sends downloads).
    pub hosts: Vec<String>,
    /// Folders outside the system ones the installer must read (its
    /// interpreter's install).
    pub reads: Vec<PathBuf>,
}

/// Runs `cmd` (an installer writing into `stage`) confined; `what` names the
/// package in messages.
pub fn run(cmd: Command, stage: &Path, what: &str, confine: &Confine) -> Result<(), String> {
    run_in(cmd, stage, stage, what, confine)
}

/// [`run`] in the folder `cwd` (in `stage`).
pub fn run_in(
    mut cmd: Command,
    stage: &Path,
    cwd: &Path,
    what: &str,
    confine: &Confine,
) -> Result<(), String> {
    if confine.sandbox == SandboxMode::Off {
        cmd.current_dir(cwd);
        return super::install::run(cmd, what);
    }
    // Private (0700), removed when dropped.
    let work = tempfile::Builder::new()
        .prefix("plughost-install-")
        .tempdir()
        .map_err(|e| format!("cannot make a folder for the installer's sandbox: {e}"))?;
    let plugin_dir = work.path().join("plugins").join(PLUGIN);
    std::fs::create_dir_all(&plugin_dir)
        .map_err(|e| format!("cannot prepare the installer's sandbox: {e}"))?;
    let mut permissions = vec![format!("filesystem:write:{}", stage.display())];
    permissions.extend(confine.hosts.iter().map(|h| format!("network:{h}")));
    permissions.extend(
        confine
            .reads
            .iter()
            .map(|r| format!("filesystem:read:{}", r.display())),
    );
    let manifest = json!({
        "name": PLUGIN,
        "version": "1.0.0",
        "description": format!("Installs {what} into the staging folder."),
        "entrypoint": "install.sh",
        "permissions": permissions,
        "tools": [{
            "name": "install",
            "description": "Runs the installer.",
            "input_schema": {"type": "object"},
            "timeout_secs": TIMEOUT_SECS,
        }],
    });
    let write = |name: &str, text: String| {
        std::fs::write(plugin_dir.join(name), text)
            .map_err(|e| format!("cannot prepare the installer's sandbox: {e}"))
    };
    write("plugin.json", manifest.to_string())?;
    write("install.sh", script(&cmd, cwd))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            plugin_dir.join("install.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .map_err(|e| format!("cannot prepare the installer's sandbox: {e}"))?;
    }
    let state = work.path().join("state");
    let host = PluginHost::builder()
        .plugins_dir(work.path().join("plugins"))
        .state_dir(&state)
        .sandbox(confine.sandbox)
        .private_path(&confine.state_dir)
        .build()
        .map_err(|e| format!("cannot start the installer's sandbox: {e}"))?;
    let runtime = super::super::runtime();
    let outcome = runtime.block_on(async {
        host.approve(PLUGIN).await.map_err(|e| e.to_string())?;
        let called = host.call("install", json!({}), Default::default()).await;
        host.stop_workers().await;
        Ok::<_, String>(called)
    })?;
    let log = std::fs::read_to_string(state.join("data").join(PLUGIN).join("install.log"))
        .unwrap_or_default();
    let refused: Vec<String> = host
        .recent_denials(PLUGIN)
        .into_iter()
        .map(|d| d.message)
        .collect();
    match outcome {
        Ok(o) if !o.is_error => Ok(()),
        Ok(o) => Err(failed(what, &o.result.to_string(), &refused, &log)),
        Err(e) => Err(failed(what, &e.to_string(), &refused, &log)),
    }
}

/// One sentence, what the sandbox refused, and the end of the log.
fn failed(what: &str, why: &str, refused: &[String], log: &str) -> String {
    let mut text = format!("installing {what} in the sandbox failed: {why}");
    if !refused.is_empty() {
        text.push_str("\n  it tried what the sandbox refused:");
        for r in refused.iter().rev().take(8).rev() {
            text.push_str(&format!("\n    {}", crate::terminal::line(r)));
        }
    }
    // What its code was refused, wherever in the log: the sentence that
    // names what the install tried.
    let mut seen = Vec::new();
    for l in log.lines().map(str::trim) {
        let refused = [
            "EACCES",
            "EPERM",
            "Permission denied",
            "Operation not permitted",
        ]
        .iter()
        .any(|k| l.contains(k));
        if refused && !seen.contains(&l) && seen.len() < 10 {
            seen.push(l);
        }
    }
    if !seen.is_empty() {
        text.push_str("\n  what its code was refused:");
        for l in &seen {
            text.push_str(&format!("\n    {}", crate::terminal::line(l)));
        }
    }
    // npm's pointer to its own log names a folder that is gone by now.
    let tail: Vec<&str> = log
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("A complete log of this run"))
        .collect();
    if !tail.is_empty() {
        text.push_str("\n  the installer said:");
        for l in &tail[tail.len().saturating_sub(12)..] {
            text.push_str(&format!("\n    {}", crate::terminal::line(l)));
        }
    }
    text
}

/// The installer plugin's script: a home of its own, `cmd`'s environment
/// changes, `cmd` in `cwd` with its output in the log; the plugin's answer
/// on stdout.
fn script(cmd: &Command, cwd: &Path) -> String {
    let word = |s: &OsStr| shell::quote(&String::from_utf8_lossy(s.as_bytes()));
    let mut env = String::new();
    // The certificate authorities the user's tools trust (a company's own,
    // a registry mirror's): not secrets, and without them no download is
    // trusted.
    // And the installers' own settings (a registry or index, a mirror, a
    // timeout), which the user set for them.
    for (k, v) in std::env::vars_os() {
        let Some(name) = k.to_str() else { continue };
        let passed =
            CA_VARIABLES.contains(&name) || INSTALLER_PREFIXES.iter().any(|p| name.starts_with(p));
        if passed && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            env.push_str(&format!("export {name}={}\n", word(&v)));
        }
    }
    let passed = std::mem::take(&mut env);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => env.push_str(&format!("export {}={}\n", word(k), word(v))),
            None => env.push_str(&format!("unset {}\n", word(k))),
        }
    }
    let mut line = word(cmd.get_program());
    for a in cmd.get_args() {
        line.push(' ');
        line.push_str(&word(a));
    }
    format!(
        r#"#!/bin/sh
# Made by plughost add: runs the package's installer in the sandbox.
cat >/dev/null
{passed}# A home of its own: the installer's cache and configuration stay in the
# sandbox's data folder, and the user's are never read.
export HOME="$PLUGHOST_DATA_DIR"
export XDG_CACHE_HOME="$HOME/.cache" XDG_CONFIG_HOME="$HOME/.config"
export npm_config_cache="$HOME/.npm" npm_config_update_notifier=false
export PIP_CACHE_DIR="$HOME/.cache/pip" UV_CACHE_DIR="$HOME/.cache/uv"
{env}cd {stage} || exit 1
if {line} >"$HOME/install.log" 2>&1; then
  echo '{{"result":"installed"}}'
else
  echo '{{"result":"the installer failed; its log says why","is_error":true}}'
fi
"#,
        stage = shell::quote(&cwd.to_string_lossy()),
    )
}

/// `HOST:PORT` of a registry URL (`https://registry.npmjs.org/`).
pub fn host_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    if authority.is_empty() {
        return None;
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()) && !authority.ends_with(']'));
    Some(match (has_port, scheme) {
        (true, _) => authority.to_owned(),
        (false, "http") => format!("{authority}:80"),
        (false, _) => format!("{authority}:443"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_url_names_a_host_grant() {
        assert_eq!(
            host_of("https://registry.npmjs.org/").unwrap(),
            "registry.npmjs.org:443"
        );
        assert_eq!(host_of("http://127.0.0.1:4873").unwrap(), "127.0.0.1:4873");
        assert_eq!(
            host_of("https://u:p@npm.example.com/path").unwrap(),
            "npm.example.com:443"
        );
        assert_eq!(host_of("http://npm.local/").unwrap(), "npm.local:80");
        assert!(host_of("registry.npmjs.org").is_none());
    }

    #[test]
    fn the_script_runs_the_command_quoted_with_its_environment() {
        let mut cmd = Command::new("/usr/bin/npm");
        cmd.args(["install", "it's"])
            .env("A", "x y")
            .env_remove("B");
        let s = script(&cmd, Path::new("/tmp/st age"));
        assert!(
            s.contains("export A='x y'\nunset B\ncd '/tmp/st age' || exit 1\n"),
            "{s}"
        );
        assert!(s.contains(r"if /usr/bin/npm install 'it'\''s' >"), "{s}");
    }
}
