//! The environment a plugin sees.
//!
//! API keys and tokens in the user's environment must not leak into every
//! plugin, so a plugin gets a small allowlist, the variables its manifest's
//! `env` names, and plughost's own variables. `--inherit-env` passes the whole
//! environment instead.

use std::ffi::OsString;
use std::path::Path;

use crate::plugins::catalog::Plugin;
use crate::plugins::manifest::EnvVarName;

pub(crate) use crate::variables::ALLOWLIST;

/// Builds the environment of one call.
pub(crate) fn plugin_env(
    plugin: &Plugin,
    data_dir: &Path,
    tmp_dir: &Path,
    inherit: bool,
) -> Vec<(OsString, OsString)> {
    let mut env = base_env(inherit, &plugin.manifest.env);
    env.push(("PLUGHOST_PLUGIN_DIR".into(), plugin.dir.clone().into()));
    env.push(("PLUGHOST_DATA_DIR".into(), data_dir.into()));
    env.push(("TMPDIR".into(), tmp_dir.into()));
    // Caches in the plugin's own folder: `~/.cache` is outside every grant
    // but `filesystem:write:~`, and a server that keeps a browser profile
    // or downloads there would fail. A value of the host's (declared in the
    // manifest, or passed with `--inherit-env`) is kept.
    if !env.iter().any(|(k, _)| k == CACHE_HOME) {
        env.push((CACHE_HOME.into(), data_dir.join(".cache").into()));
    }
    env
}

/// Where programs following the XDG base directories keep caches.
const CACHE_HOME: &str = "XDG_CACHE_HOME";

/// The host's variables a plugin process gets: the allowlist and the
/// `declared` ones (everything with `inherit`), without `TMPDIR` and
/// plughost's own, which the caller sets, and without the host's own trace
/// context (`TRACEPARENT`, `TRACESTATE`): a call's is set per call.
pub(crate) fn base_env(inherit: bool, declared: &[EnvVarName]) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            inherit
                || k.to_str().is_some_and(|k| {
                    ALLOWLIST.contains(&k)
                        || k.starts_with("LC_")
                        || declared.iter().any(|d| d.0 == k)
                })
        })
        .collect();
    const SET_PER_CALL: [&str; 5] = [
        "TMPDIR",
        "PLUGHOST_PLUGIN_DIR",
        "PLUGHOST_DATA_DIR",
        "TRACEPARENT",
        "TRACESTATE",
    ];
    env.retain(|(k, _)| !SET_PER_CALL.iter().any(|s| k == s));
    env
}
