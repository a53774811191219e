//! The JSON-lines audit log (`--audit-log FILE`): one line per call with time,
//! tool, plugin, caller, outcome kind and duration. Inputs are recorded only
//! when asked for, since they may hold personal data.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CallError;
use crate::observe::{CallInfo, CallSummary, Interests, Observer, ObserverResult};
use crate::run::outcome::ToolOutcome;

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC time the call started.
    pub time: String,
    /// The tool asked for.
    pub tool: String,
    /// The plugin of the tool; empty when no plugin offers it.
    pub plugin: String,
    /// The front end the call came through (`cli`, `mcp`, `library`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The session the call belongs to, when the caller named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The caller's id of the call, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// `ok`, `tool_error` (the plugin's own is_error), or a host error kind.
    pub outcome: String,
    /// The whole call, in milliseconds (to the microsecond).
    pub duration_ms: f64,
    /// The pid of the persistent worker that served the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<u32>,
    /// With outcome `tool_error`: the kind the plugin reported, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// What the egress proxy refused the plugin during the call: the host
    /// and the grant that would allow it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// What the egress proxy did with the plugin's brokered secrets during
    /// the call: the secret, the host, and whether the value was placed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub brokered: Vec<String>,
    /// The trace the call belongs to (32 hex digits), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The call's input, when the log records inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

/// Appends one [`AuditRecord`] per call to a file. Each line is written with a
/// single `write` on a file opened for appending, so concurrent plughost
/// processes sharing a log do not interleave lines.
pub(crate) struct AuditLog {
    file: Mutex<File>,
    log_inputs: bool,
}

impl AuditLog {
    pub(crate) fn open(path: &Path, log_inputs: bool) -> std::io::Result<AuditLog> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog {
            file: Mutex::new(file),
            log_inputs,
        })
    }

    fn record(&self, call: &CallInfo, summary: &CallSummary) -> ObserverResult {
        let record = AuditRecord {
            time: rfc3339(call.started_at),
            tool: call.tool.clone(),
            plugin: call.plugin.clone(),
            source: call
                .invocation
                .source
                .map(|s| format!("{s:?}").to_lowercase()),
            session_id: call.invocation.session_id.clone(),
            request_id: call.invocation.request_id.clone(),
            outcome: summary.outcome().to_owned(),
            duration_ms: (summary.duration.as_secs_f64() * 1e6).round() / 1e3,
            worker: summary.worker,
            error_kind: summary.tool_error.map(|k| k.as_str().to_owned()),
            refused: summary.refused.clone(),
            brokered: summary.brokered.clone(),
            trace_id: call.trace.as_ref().map(|t| t.trace_id().to_owned()),
            input: self.log_inputs.then(|| call.input.clone()),
        };
        let mut line = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
        line.push(b'\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| "audit log lock poisoned".to_owned())?;
        file.write_all(&line)
            .map_err(|e| format!("cannot write the audit log: {e}").into())
    }
}

impl Observer for AuditLog {
    fn interests(&self) -> Interests {
        Interests::CALLS
    }

    fn call_ended(
        &self,
        call: &CallInfo,
        _: &Result<ToolOutcome, CallError>,
        summary: &CallSummary,
    ) -> ObserverResult {
        self.record(call, summary)
    }
}

impl AuditRecord {
    /// A time as the log writes it: `2026-11-21T23:42:06.123Z` (UTC).
    pub fn time_of(t: SystemTime) -> String {
        rfc3339(t)
    }
}

/// `2026-11-21T23:42:06.123Z` for a system time.
fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn formats_utc_times() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_304_526_250);
        assert_eq!(rfc3339(t), "2026-11-21T23:42:06.250Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(&rfc3339(leap)[..10], "2000-02-29");
    }
}
