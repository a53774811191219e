//! What the egress proxy did with a plugin's brokered secrets: each
//! placement is news as it happens (`HostEvent::SecretPlaced`: which secret,
//! on a request to which host, or why not), and the recent ones are kept per
//! plugin in `STATE/brokered/NAME.json` for `plughost doctor NAME`. Never
//! the value.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::PluginHost;
use crate::events::HostEvent;
use crate::observe::Bus;
use crate::run::egress::broker::{OnPlaced, Placed, Placement};

/// How many records are kept per plugin.
const KEPT: usize = 20;
/// The same placement (secret, host, outcome) is kept once in this long: a
/// plugin calling an API in a loop is one record, not a write per request.
const KEEP_EVERY: Duration = Duration::from_secs(10);

/// A brokered request as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BrokeredRecord {
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// The secret.
    pub secret: String,
    /// The host the request went to (`host:port`).
    pub target: String,
    /// Whether the value was placed on it.
    pub placed: bool,
    /// What was done, in words.
    pub outcome: String,
}

impl PluginHost {
    /// The brokered requests of `plugin` kept lately, oldest first (another
    /// process's too: they are kept in the state folder).
    pub fn recent_brokered(&self, plugin: &str) -> Vec<BrokeredRecord> {
        read(&file(&self.inner.config.state_dir, plugin))
    }
}

/// Where the records of `plugin` are kept.
pub(super) fn file(state_dir: &Path, plugin: &str) -> PathBuf {
    state_dir.join("brokered").join(format!("{plugin}.json"))
}

/// What a proxy does with a placement: an event each time, and a record
/// once per [`KEEP_EVERY`] for the same secret, host and outcome.
pub(super) fn placer(plugin: String, bus: Arc<Bus>, records: PathBuf) -> OnPlaced {
    let recent: Mutex<HashMap<(String, String, &'static str), Instant>> = Mutex::default();
    Arc::new(move |p: &Placement| {
        bus.publish(HostEvent::SecretPlaced {
            plugin: plugin.clone(),
            secret: p.secret.clone(),
            target: p.target.clone(),
            placed: p.outcome == Placed::Value,
            outcome: p.outcome.describe().to_owned(),
        });
        {
            let mut recent = recent.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            recent.retain(|_, at| now.duration_since(*at) < KEEP_EVERY);
            let key = (p.secret.clone(), p.target.clone(), p.outcome.describe());
            if recent.insert(key, now).is_some() {
                return;
            }
        }
        let record = BrokeredRecord {
            time: crate::approval::now_secs(),
            secret: p.secret.clone(),
            target: p.target.clone(),
            placed: p.outcome == Placed::Value,
            outcome: p.outcome.describe().to_owned(),
        };
        let path = records.clone();
        let keep = move || append(&path, record);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(keep)),
            Err(_) => keep(),
        }
    })
}

/// The records in `path`; none when it is missing or unreadable (they are
/// diagnostics, never trusted for a decision).
fn read(path: &Path) -> Vec<BrokeredRecord> {
    crate::state_file::read(path, 1 << 20)
        .ok()
        .flatten()
        .and_then(|(b, _)| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Adds `record`, keeping the last [`KEPT`].
fn append(path: &Path, record: BrokeredRecord) {
    let mut records = read(path);
    records.push(record);
    let skip = records.len().saturating_sub(KEPT);
    let records: Vec<_> = records.into_iter().skip(skip).collect();
    let Some(dir) = path.parent() else { return };
    if crate::state_file::make_dir(dir).is_err() {
        return;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = format!("{name}.{}.tmp", std::process::id());
    let text = serde_json::to_vec_pretty(&records).expect("records serialize");
    let _ = crate::state_file::write_atomically(dir, path, &temp, &text);
}
