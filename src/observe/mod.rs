//! Lifecycle hooks: an [`Observer`] trait whose methods all default to doing
//! nothing, and the `Bus` that delivers every [`HostEvent`] to subscribers
//! and observers, and every call to the observers interested in calls.
//!
//! An observer that returns an error or panics never breaks a call or a
//! reload: the failure becomes a [`HostEvent::Notice`] for the host's event
//! subscribers (not for observers, so a failing observer cannot feed itself).

pub(crate) mod audit;
pub(crate) mod metrics;
#[cfg(feature = "otel")]
mod otel;
pub(crate) mod phases;
#[cfg(feature = "prometheus")]
pub(crate) mod prometheus;
pub(crate) mod trace;

pub use audit::AuditRecord;
pub use metrics::{ToolStats, WorkerStats};
#[cfg(feature = "prometheus")]
pub use prometheus::Prometheus;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::error::{CallError, ErrorKind};
use crate::events::{HostEvent, Notice};
use crate::protocol::{Invocation, ToolErrorKind};
use crate::run::executor::Progress;
use crate::run::outcome::ToolOutcome;
use crate::run::sandbox::SandboxLevel;
use phases::Phases;

/// What an observer method returns; an `Err` is reported as a notice
/// ([`Notice::ObserverFailed`]). `Err("why".into())` makes one from words.
pub type ObserverResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Which events an observer wants; the host skips it for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interests {
    /// [`Observer::event`]: plugins, approvals, workers, notices.
    pub events: bool,
    /// [`Observer::call_started`], [`Observer::call_admitted`],
    /// [`Observer::call_ended`].
    pub calls: bool,
    /// [`Observer::call_progress`].
    pub progress: bool,
}

impl Interests {
    /// Events, calls and progress: what an observer gets unless it says otherwise.
    pub const ALL: Interests = Interests {
        events: true,
        calls: true,
        progress: true,
    };
    /// Calls alone: no events, no progress.
    pub const CALLS: Interests = Interests {
        events: false,
        calls: true,
        progress: false,
    };
}

/// A call as observers see it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallInfo {
    /// The call's number in this host: 0 for the first, then one more each call.
    pub call_id: u64,
    /// The tool asked for, offered or not.
    pub tool: String,
    /// The plugin of the tool; empty when no plugin offers it.
    pub plugin: String,
    /// Who asked for the call, as the caller said.
    pub invocation: Invocation,
    /// When the call started, by the system clock.
    pub started_at: SystemTime,
    /// The call's input (an audit log records it only when asked to).
    pub input: Value,
    /// The W3C trace context the plugin continues: plughost's span of the
    /// call when the host traces, else the caller's context.
    pub trace: Option<crate::protocol::TraceContext>,
}

/// How a call ended, for observers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallSummary {
    /// The whole call, from its start to its end: checks, waits and run.
    pub duration: Duration,
    /// Bytes of the result text returned to the caller.
    pub bytes_out: usize,
    /// The plugin's exit code, when it exited on its own.
    pub exit_code: Option<i32>,
    /// `None` on success (including the plugin's own `is_error`).
    pub error_kind: Option<ErrorKind>,
    /// The plugin's own `is_error`; false on a host error.
    pub is_error: bool,
    /// The pid of the persistent worker that served the call, if one did.
    pub worker: Option<u32>,
    /// The kind the plugin reported for its own failure (`is_error`).
    pub tool_error: Option<ToolErrorKind>,
    /// What the egress proxy refused the plugin while the call ran (a
    /// plugin with host grants), in words: the host and the grant that
    /// would allow it.
    pub refused: Vec<String>,
    /// What the egress proxy did with the plugin's brokered secrets while
    /// the call ran, in words: the secret, the host, and whether its value
    /// was placed (never the value).
    pub brokered: Vec<String>,
    /// Bytes of the call's input (compact JSON); 0 when it was refused
    /// before its input was read.
    pub bytes_in: usize,
    /// How long the call waited before its plugin ran: the checks, an
    /// approval question, and the queue for a call slot or a worker. The
    /// whole call when it never ran.
    pub wait: Duration,
    /// How long the plugin ran the call (from its slot to the answer);
    /// `None` when it never ran.
    pub run: Option<Duration>,
    /// How much of the sandbox confined the plugin; `None` when it never ran.
    pub sandbox: Option<SandboxLevel>,
}

impl CallSummary {
    pub(crate) fn of(
        result: &Result<ToolOutcome, CallError>,
        phases: &Phases,
        sandbox: Option<SandboxLevel>,
    ) -> CallSummary {
        let ended = std::time::Instant::now();
        CallSummary {
            duration: ended.duration_since(phases.started),
            bytes_in: phases.bytes_in,
            wait: phases.wait(ended),
            run: phases.run(ended),
            sandbox: phases.admitted.and(sandbox),
            bytes_out: result.as_ref().map_or(0, |o| o.result.len()),
            exit_code: match result {
                Ok(o) => o.exit_code,
                Err(e) => e.exit_code(),
            },
            error_kind: result.as_ref().err().map(CallError::kind),
            is_error: result.as_ref().is_ok_and(|o| o.is_error),
            worker: phases.worker,
            tool_error: result
                .as_ref()
                .ok()
                .and_then(|o| o.error.as_ref())
                .map(|e| e.kind),
            refused: Vec::new(),
            brokered: Vec::new(),
        }
    }

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
#[allow(
    unused_variables,
    reason = "the default methods name their arguments for the implementors' docs"
)]
pub trait Observer: Send + Sync {
    /// The events this observer wants.
    fn interests(&self) -> Interests {
        Interests::ALL
    }
    /// Anything that is not a call: plugins loaded, updated, removed or
    /// rejected, collisions, approvals, workers started and stopped, notices.
    /// The same events as [`crate::PluginHost::events`].
    fn event(&self, event: &HostEvent) -> ObserverResult {
        Ok(())
    }
    /// A call began, before its checks: a call of a tool that does not
    /// exist starts too.
    fn call_started(&self, call: &CallInfo) -> ObserverResult {
        Ok(())
    }
    /// The call passed its checks and got its call slot (and its worker's
    /// turn): its plugin runs now. Not every call gets here: one refused,
    /// or cancelled while it waited, goes from started to failed.
    fn call_admitted(&self, call: &CallInfo) -> ObserverResult {
        Ok(())
    }
    /// The plugin reported progress while it ran the call.
    fn call_progress(&self, call: &CallInfo, progress: &Progress) -> ObserverResult {
        Ok(())
    }
    /// The call ended, however it ended: `ended` is the plugin's answer
    /// (its own `is_error` included) or the host's error (refused, timed
    /// out, cancelled…); `summary` has the call's figures either way.
    fn call_ended(
        &self,
        call: &CallInfo,
        ended: &Result<ToolOutcome, CallError>,
        summary: &CallSummary,
    ) -> ObserverResult {
        Ok(())
    }
}

/// Where the host's news goes: event subscribers, and the observers grouped
/// by interest so an event costs nothing for observers that do not want it.
pub(crate) struct Bus {
    events: broadcast::Sender<HostEvent>,
    on_events: Vec<Arc<dyn Observer>>,
    on_calls: Vec<Arc<dyn Observer>>,
    on_progress: Vec<Arc<dyn Observer>>,
}

impl Bus {
    pub(crate) fn new(observers: &[Arc<dyn Observer>]) -> Bus {
        let mut bus = Bus {
            events: broadcast::channel(1024).0,
            on_events: Vec::new(),
            on_calls: Vec::new(),
            on_progress: Vec::new(),
        };
        for o in observers {
            let i = o.interests();
            for (wanted, list) in [
                (i.events, &mut bus.on_events),
                (i.calls, &mut bus.on_calls),
                (i.progress, &mut bus.on_progress),
            ] {
                if wanted {
                    list.push(o.clone());
                }
            }
        }
        bus
    }

    /// A new subscriber to events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<HostEvent> {
        self.events.subscribe()
    }

    pub(crate) fn wants_progress(&self) -> bool {
        !self.on_progress.is_empty()
    }

    /// Sends `event` to the observers and the subscribers.
    pub(crate) fn publish(&self, event: HostEvent) {
        for o in &self.on_events {
            self.guarded("an event", || o.event(&event));
        }
        // No subscriber is fine: events are news, not state.
        let _ = self.events.send(event);
    }

    /// A notice for subscribers only (see the module docs).
    fn notice(&self, notice: Notice) {
        let _ = self.events.send(HostEvent::Notice(notice));
    }

    pub(crate) fn call_started(&self, call: &CallInfo) {
        for o in &self.on_calls {
            self.guarded("call_started", || o.call_started(call));
        }
    }

    pub(crate) fn call_admitted(&self, call: &CallInfo) {
        for o in &self.on_calls {
            self.guarded("call_admitted", || o.call_admitted(call));
        }
    }

    pub(crate) fn call_progress(&self, call: &CallInfo, p: &Progress) {
        for o in &self.on_progress {
            self.guarded("call_progress", || o.call_progress(call, p));
        }
    }

    pub(crate) fn call_ended(
        &self,
        call: &CallInfo,
        result: &Result<ToolOutcome, CallError>,
        summary: &CallSummary,
    ) {
        for o in &self.on_calls {
            self.guarded("call_ended", || o.call_ended(call, result, summary));
        }
    }

    /// Runs one observer method; turns its error or panic into a notice.
    fn guarded(&self, what: &str, f: impl FnOnce() -> ObserverResult) {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.notice(Notice::ObserverFailed {
                hook: what.to_owned(),
                error: Some(e.to_string()),
            }),
            Err(_) => self.notice(Notice::ObserverFailed {
                hook: what.to_owned(),
                error: None,
            }),
        }
    }
}
