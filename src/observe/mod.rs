//! Lifecycle hooks: an [`Observer`] trait whose methods all default to doing
//! nothing, and the dispatcher that calls only the observers interested in an
//! event. An observer that returns an error or panics is reported on stderr and
//! never breaks a call or a reload.

pub mod audit;
pub mod metrics;
pub mod policy;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::error::{CallError, ErrorKind};
use crate::plugins::events::HostEvent;
use crate::protocol::Invocation;
use crate::run::executor::Progress;
use crate::run::outcome::ToolOutcome;

/// What an observer method returns; an `Err` is logged and otherwise ignored.
pub type ObserverResult = Result<(), String>;

/// Which events an observer wants; the host skips it for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interests {
    pub plugins: bool,
    pub approvals: bool,
    pub calls: bool,
    pub progress: bool,
}

impl Interests {
    pub const ALL: Interests = Interests {
        plugins: true,
        approvals: true,
        calls: true,
        progress: true,
    };
    pub const CALLS: Interests = Interests {
        plugins: false,
        approvals: false,
        calls: true,
        progress: false,
    };
}

/// A call as observers see it.
#[derive(Debug, Clone)]
pub struct CallInfo {
    pub call_id: u64,
    pub tool: String,
    pub plugin: String,
    pub invocation: Invocation,
    pub started_at: SystemTime,
    /// The call's input (an audit log records it only when asked to).
    pub input: Value,
}

/// How a call ended, for observers.
#[derive(Debug, Clone)]
pub struct CallSummary {
    pub duration: Duration,
    /// Bytes of the result text returned to the caller.
    pub bytes_out: usize,
    /// The plugin's exit code, when it exited on its own.
    pub exit_code: Option<i32>,
    /// `None` on success (including the plugin's own `is_error`).
    pub error_kind: Option<ErrorKind>,
    pub is_error: bool,
}

impl CallSummary {
    /// `ok`, `tool_error` (the plugin's own `is_error`), or the host error's kind.
    pub fn outcome(&self) -> &'static str {
        match (self.error_kind, self.is_error) {
            (Some(kind), _) => kind.as_str(),
            (None, true) => "tool_error",
            (None, false) => "ok",
        }
    }
}

/// Hooks into the host's life. Every method has a default that does nothing.
#[allow(unused_variables)]
pub trait Observer: Send + Sync {
    /// The events this observer wants.
    fn interests(&self) -> Interests {
        Interests::ALL
    }
    fn plugin_loaded(&self, plugin: &str, version: &str) -> ObserverResult {
        Ok(())
    }
    fn plugin_rejected(&self, folder: &str, errors: &[String]) -> ObserverResult {
        Ok(())
    }
    fn plugin_removed(&self, plugin: &str) -> ObserverResult {
        Ok(())
    }
    fn approval_granted(&self, plugin: &str) -> ObserverResult {
        Ok(())
    }
    fn approval_revoked(&self, plugin: &str) -> ObserverResult {
        Ok(())
    }
    fn call_started(&self, call: &CallInfo) -> ObserverResult {
        Ok(())
    }
    fn call_progress(&self, call: &CallInfo, progress: &Progress) -> ObserverResult {
        Ok(())
    }
    fn call_finished(
        &self,
        call: &CallInfo,
        outcome: &ToolOutcome,
        summary: &CallSummary,
    ) -> ObserverResult {
        Ok(())
    }
    fn call_failed(
        &self,
        call: &CallInfo,
        error: &CallError,
        summary: &CallSummary,
    ) -> ObserverResult {
        Ok(())
    }
}

/// The host's observers, grouped by interest so an event costs nothing for
/// observers that do not want it.
#[derive(Clone, Default)]
pub(crate) struct Observers {
    plugins: Vec<Arc<dyn Observer>>,
    approvals: Vec<Arc<dyn Observer>>,
    calls: Vec<Arc<dyn Observer>>,
    progress: Vec<Arc<dyn Observer>>,
}

impl Observers {
    pub fn add(&mut self, o: Arc<dyn Observer>) {
        let i = o.interests();
        for (wanted, list) in [
            (i.plugins, &mut self.plugins),
            (i.approvals, &mut self.approvals),
            (i.calls, &mut self.calls),
            (i.progress, &mut self.progress),
        ] {
            if wanted {
                list.push(o.clone());
            }
        }
    }

    pub fn wants_progress(&self) -> bool {
        !self.progress.is_empty()
    }

    pub fn host_event(&self, e: &HostEvent) {
        for o in &self.plugins {
            guarded("plugin event", || match e {
                HostEvent::PluginAdded {
                    plugin, version, ..
                } => o.plugin_loaded(plugin, version),
                HostEvent::PluginUpdated {
                    plugin,
                    new_version,
                    ..
                } => o.plugin_loaded(plugin, new_version),
                HostEvent::PluginRemoved { plugin } => o.plugin_removed(plugin),
                HostEvent::PluginRejected { folder, errors } => o.plugin_rejected(folder, errors),
                HostEvent::ToolCollision { .. } | HostEvent::Notice { .. } => Ok(()),
            });
        }
    }

    pub fn approval(&self, plugin: &str, granted: bool) {
        for o in &self.approvals {
            guarded("approval", || {
                if granted {
                    o.approval_granted(plugin)
                } else {
                    o.approval_revoked(plugin)
                }
            });
        }
    }

    pub fn call_started(&self, call: &CallInfo) {
        for o in &self.calls {
            guarded("call_started", || o.call_started(call));
        }
    }

    pub fn call_progress(&self, call: &CallInfo, p: &Progress) {
        for o in &self.progress {
            guarded("call_progress", || o.call_progress(call, p));
        }
    }

    pub fn call_ended(
        &self,
        call: &CallInfo,
        result: &Result<ToolOutcome, CallError>,
        duration: Duration,
    ) {
        let summary = CallSummary {
            duration,
            bytes_out: result.as_ref().map_or(0, |o| o.result.len()),
            exit_code: match result {
                Ok(o) => Some(o.exit_code),
                Err(e) => e.exit_code(),
            },
            error_kind: result.as_ref().err().map(CallError::kind),
            is_error: result.as_ref().is_ok_and(|o| o.is_error),
        };
        for o in &self.calls {
            guarded("call_finished", || match result {
                Ok(outcome) => o.call_finished(call, outcome, &summary),
                Err(e) => o.call_failed(call, e, &summary),
            });
        }
    }
}

/// Runs one observer method; reports its error or panic and carries on.
fn guarded(what: &str, f: impl FnOnce() -> ObserverResult) {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("plughost: an observer failed on {what}: {e}"),
        Err(_) => eprintln!("plughost: an observer panicked on {what}; the call goes on"),
    }
}
