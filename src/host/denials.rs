//! Naming what a call was refused (see `run::denials`), and keeping the
//! recent ones per plugin in the state folder, `STATE/denials/NAME.json`, so
//! that `plughost doctor NAME` (another process) can list them.
//!
//! Two kinds are kept apart, each with its [`Evidence`]: refusals plughost
//! recorded as they happened (the egress proxy's, `host::egress`), which
//! are the sandbox's, and permission errors the plugin's own stderr or
//! error result reports on targets its grants do not reach, which are the
//! plugin's words and are kept and shown as such. Each kind keeps its own
//! last [`KEPT`], so a plugin that writes reports in a loop cannot push the
//! recorded refusals out.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Inner, PluginHost, SandboxMode};
use crate::error::{CallError, Denial, Evidence};
use crate::events::HostEvent;
use crate::plugins::catalog::Plugin;
use crate::run::denials;
use crate::run::outcome::ToolOutcome;

/// How many denials of each [`Evidence`] are kept per plugin.
const KEPT: usize = 20;

/// A denial as kept: when, in which tool, what, and whose word it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DenialRecord {
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// The tool whose call it was; empty for the egress proxy's refusals,
    /// which belong to the plugin, not to one call.
    pub tool: String,
    /// The denial in words (what was refused, the grant that allows it).
    /// For a plugin's report, its target is the plugin's text: escape it
    /// before a terminal shows it.
    pub message: String,
    /// The grant that would allow it; `None` when no grant reaches it.
    #[serde(default)]
    pub grant: Option<String>,
    /// Whether plughost recorded the refusal or the plugin reported it.
    /// Records that do not say (written before it was kept) count as the
    /// plugin's reports.
    #[serde(default)]
    pub evidence: Evidence,
}

impl DenialRecord {
    /// `denial`, kept now, for `tool` (empty for none).
    pub(super) fn of(tool: &str, denial: &Denial) -> DenialRecord {
        DenialRecord {
            time: crate::approval::now_secs(),
            tool: tool.to_owned(),
            message: denial.to_string(),
            grant: denial.grant.clone(),
            evidence: denial.evidence,
        }
    }
}

impl PluginHost {
    /// What `plugin` was refused recently, or reported it was (newest
    /// last; see [`DenialRecord::evidence`]), as named in the errors of its
    /// calls: from this host and every other using the same state folder.
    pub fn recent_denials(&self, plugin: &str) -> Vec<DenialRecord> {
        read(&file(&self.inner.config.state_dir, plugin))
    }
}

impl Inner {
    /// Names what the call was refused: the permission errors its error
    /// (or its error result) reports on targets its grants do not reach, as
    /// the plugin's reports, on the error or outcome, as an event, and in
    /// the plugin's recent denials; and the connections the egress proxy
    /// refused since `since` (the call's start), as the sandbox's, on the
    /// error or outcome (the proxy published and kept them when it refused
    /// them).
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
            let mut seen: Vec<Denial> = Vec::new();
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
            Ok(outcome) => {
                // A server may report a refused connection as an ordinary
                // result ("fetch failed"): what the proxy refused during the
                // call is named all the same (recorded already).
                outcome.denials = refused();
                return;
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
        let records: Vec<DenialRecord> = named.iter().map(|d| DenialRecord::of(tool, d)).collect();
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

/// Adds `new` to the records in `path`, keeping the last [`KEPT`] of each
/// [`Evidence`], written atomically (a temp file renamed over it). Best
/// effort: a state folder that cannot be written loses the record, never
/// the call.
pub(super) fn append(path: &Path, new: Vec<DenialRecord>) {
    let mut records = read(path);
    records.extend(new);
    let records = &last_of_each(records);
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

/// The last [`KEPT`] records of each [`Evidence`], in their order.
fn last_of_each(records: Vec<DenialRecord>) -> Vec<DenialRecord> {
    let mut recorded = 0;
    let mut reported = 0;
    let mut keep = vec![false; records.len()];
    for (i, r) in records.iter().enumerate().rev() {
        let count = if r.evidence == Evidence::Recorded {
            &mut recorded
        } else {
            &mut reported
        };
        *count += 1;
        keep[i] = *count <= KEPT;
    }
    records
        .into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_do_not_push_recorded_refusals_out() {
        let record = |tool: &str, evidence| DenialRecord {
            time: 0,
            tool: tool.to_owned(),
            message: String::new(),
            grant: None,
            evidence,
        };
        let mut records = vec![record("", Evidence::Recorded)];
        records.extend((0..3 * KEPT).map(|_| record("t", Evidence::ReportedByPlugin)));
        let kept = last_of_each(records);
        assert_eq!(kept.len(), KEPT + 1);
        assert_eq!(kept[0].evidence, Evidence::Recorded);
    }

    #[test]
    fn a_record_that_does_not_say_is_the_plugins_report() {
        let r: DenialRecord =
            serde_json::from_str(r#"{"time": 1, "tool": "t", "message": "m"}"#).unwrap();
        assert_eq!(r.evidence, Evidence::ReportedByPlugin);
    }
}
