//! A built-in observer that counts calls and adds up their durations per tool.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

use crate::error::CallError;
use crate::events::HostEvent;
use crate::observe::{CallInfo, CallSummary, Interests, Observer, ObserverResult};
use crate::run::outcome::ToolOutcome;

/// Counters of one tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolStats {
    /// Calls, however they ended.
    pub calls: u64,
    /// Calls the plugin answered without `is_error`.
    pub ok: u64,
    /// Calls the plugin answered with `is_error`.
    pub tool_errors: u64,
    /// Host errors by kind (`timeout`, `failed`, …).
    pub host_errors: BTreeMap<String, u64>,
    /// The calls' durations added up, in milliseconds.
    pub total_ms: f64,
    /// The longest call, in milliseconds.
    pub max_ms: f64,
}

impl ToolStats {
    /// Counts one call.
    pub fn add(&mut self, outcome: &str, duration: Duration) {
        let ms = duration.as_secs_f64() * 1e3;
        self.calls += 1;
        self.total_ms += ms;
        self.max_ms = self.max_ms.max(ms);
        match outcome {
            "ok" => self.ok += 1,
            "tool_error" => self.tool_errors += 1,
            kind => *self.host_errors.entry(kind.to_owned()).or_default() += 1,
        }
    }
}

/// Worker counters of one persistent plugin.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WorkerStats {
    /// Workers started, restarts included.
    pub started: u64,
    /// Workers stopped, by reason (`idle for 300s`, `the call timed out`, …).
    pub stopped: BTreeMap<String, u64>,
}

/// Per-tool call counters and per-plugin worker counters, readable at any time.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    tools: Mutex<BTreeMap<String, ToolStats>>,
    workers: Mutex<BTreeMap<String, WorkerStats>>,
}

impl Metrics {
    /// The call counters so far, by tool name.
    pub(crate) fn snapshot(&self) -> BTreeMap<String, ToolStats> {
        self.tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The worker counters so far, by plugin name.
    pub(crate) fn workers(&self) -> BTreeMap<String, WorkerStats> {
        self.workers.lock().map(|t| t.clone()).unwrap_or_default()
    }

    fn add(&self, tool: &str, summary: &CallSummary) -> ObserverResult {
        let mut tools = self
            .tools
            .lock()
            .map_err(|_| "metrics lock poisoned".to_owned())?;
        tools
            .entry(tool.to_owned())
            .or_default()
            .add(summary.outcome(), summary.duration);
        Ok(())
    }
}

impl Observer for Metrics {
    fn interests(&self) -> Interests {
        Interests {
            events: true,
            calls: true,
            progress: false,
        }
    }

    fn event(&self, event: &HostEvent) -> ObserverResult {
        let mut workers = self
            .workers
            .lock()
            .map_err(|_| "metrics lock poisoned".to_owned())?;
        match event {
            HostEvent::WorkerStarted { plugin, .. } => {
                workers.entry(plugin.clone()).or_default().started += 1;
            }
            HostEvent::WorkerStopped { plugin, reason, .. } => {
                *workers
                    .entry(plugin.clone())
                    .or_default()
                    .stopped
                    .entry(reason.to_string())
                    .or_default() += 1;
            }
            _ => {}
        }
        Ok(())
    }

    fn call_ended(
        &self,
        call: &CallInfo,
        _: &Result<ToolOutcome, CallError>,
        summary: &CallSummary,
    ) -> ObserverResult {
        self.add(&call.tool, summary)
    }
}
