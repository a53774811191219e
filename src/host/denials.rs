//! Naming what the sandbox refused a call (see `run::denials`), and keeping
//! the recent ones per plugin in the state folder, `STATE/denials/NAME.json`,
//! so that `plughost doctor NAME` (another process) can list them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Inner, PluginHost, SandboxMode};
use crate::error::CallError;
use crate::events::HostEvent;
use crate::plugins::catalog::Plugin;
use crate::run::denials;
use crate::run::outcome::ToolOutcome;

/// How many denials are kept per plugin.
const KEPT: usize = 20;

/// A denial as kept: when, in which tool, what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DenialRecord {
    /// Seconds since the Unix epoch.
    pub time: u64,
    pub tool: String,
    /// The denial in words (what was refused, the grant that allows it).
    pub message: String,
    /// The grant that would allow it; `None` when no grant reaches it.
    #[serde(default)]
    pub grant: Option<String>,
}

impl PluginHost {
    /// What the sandbox refused `plugin` recently (newest last), as named in
    /// the errors of its calls: from this host and every other using the
    /// same state folder.
    pub fn recent_denials(&self, plugin: &str) -> Vec<DenialRecord> {
        read(&file(&self.inner.config.state_dir, plugin))
    }
}

impl Inner {
    /// Names what the sandbox refused, when the call's error (or its error
    /// result) reports it: on the error or outcome, as an event, and in the
    /// plugin's recent denials. Connections the egress proxy refused since
    /// `since` (the call's start) are named too; the proxy reported and
    /// recorded them when it refused them.
    pub(super) fn name_denials(
        &self,
        plugin: &Plugin,
        tool: &str,
        since: std::time::Instant,
        result: &mut Result<ToolOutcome, CallError>,
    ) {
        if self.config.sandbox == SandboxMode::Off {
            return;
        }
        let refused = || {
            let mut seen: Vec<crate::error::Denial> = Vec::new();
            for d in self.refused_since(plugin, since) {
                if !seen.iter().any(|s| s.target == d.target) {
                    seen.push(d);
                }
            }
            seen
        };
        let found = |texts: &[&str]| {
            let confinement = self
                .confinements
                .lock()
                .expect("confinements lock")
                .get(&plugin.generation)
                .cloned();
            let home = std::env::var_os("HOME").map(PathBuf::from);
            confinement
                .map(|c| denials::find(texts, &c, home.as_deref()))
                .unwrap_or_default()
        };
        let named = match result {
            Err(CallError::Failed {
                reason,
                stderr_tail,
                denials,
                ..
            }) => {
                *denials = found(&[stderr_tail, reason]);
                let named = denials.clone();
                denials.extend(refused());
                named
            }
            Ok(outcome) if outcome.is_error => {
                outcome.denials = found(&[&outcome.stderr_tail, &outcome.result]);
                let named = outcome.denials.clone();
                outcome.denials.extend(refused());
                named
            }
            _ => return,
        };
        if named.is_empty() {
            return;
        }
        for denial in &named {
            self.bus.publish(HostEvent::SandboxDenied {
                plugin: plugin.name().to_owned(),
                tool: tool.to_owned(),
                denial: denial.clone(),
            });
        }
        let path = file(&self.config.state_dir, plugin.name());
        let records: Vec<DenialRecord> = named
            .iter()
            .map(|d| DenialRecord {
                time: crate::approval::now_secs(),
                tool: tool.to_owned(),
                message: d.to_string(),
                grant: d.grant.clone(),
            })
            .collect();
        let keep = move || append(&path, records);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(keep)),
            Err(_) => keep(),
        }
    }
}

pub(super) fn file(state_dir: &Path, plugin: &str) -> PathBuf {
    state_dir.join("denials").join(format!("{plugin}.json"))
}

/// The records in `path`; none when it is missing or unreadable (they are
/// diagnostics, never trusted for a decision).
fn read(path: &Path) -> Vec<DenialRecord> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Adds `new` to the records in `path`, keeping the last [`KEPT`], written
/// atomically (a temp file renamed over it). Best effort: a state folder that
/// cannot be written loses the record, never the call.
pub(super) fn append(path: &Path, new: Vec<DenialRecord>) {
    let mut records = read(path);
    records.extend(new);
    let skip = records.len().saturating_sub(KEPT);
    let records = &records[skip..];
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let temp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let text = serde_json::to_vec_pretty(records).expect("records serialize");
    if std::fs::write(&temp, text).is_ok() && std::fs::rename(&temp, path).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}
