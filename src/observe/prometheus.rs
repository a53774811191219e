//! Prometheus metrics of hosts and their MCP sessions (feature `prometheus`),
//! kept with the `prometheus-client` crate in the embedder's (or `plughost
//! serve`'s) [`Registry`].
//!
//! Counts and durations come from the observer hooks as calls and events
//! happen; what is a state rather than a count (workers running, starting or
//! backing off, MCP sessions open) is read from the hosts when Prometheus
//! scrapes, so it can never drift from the truth.
//!
//! Every label value comes from the operator's side, never from a client: a
//! tenant name from the tokens file, tool and plugin names from the catalog,
//! kinds and reasons from fixed lists. A call of a tool that does not exist
//! counts under tool and plugin `(unknown)`, whatever name it asked for.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::{CallInfo, CallSummary, Interests, Observer, ObserverResult};
use crate::error::{Access, CallError};
use crate::events::HostEvent;
use crate::run::outcome::ToolOutcome;
use crate::run::worker::WorkerLoad;

/// The label value of a tool or plugin the catalog does not have.
const UNKNOWN: &str = "(unknown)";

/// Call durations, in seconds: from a static binary's half millisecond to
/// the default timeout and past it.
const DURATION_BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 120.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tenant: String,
    tool: String,
    plugin: String,
    /// `ok`, `tool_error` (the plugin's own `is_error`) or `error` (a host error).
    outcome: &'static str,
    /// The host error's kind, or the kind a tool reported for its own error;
    /// empty when there is none.
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    tenant: String,
    tool: String,
    plugin: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    tenant: String,
    plugin: String,
}

/// Why a worker stopped.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StopLabels {
    tenant: String,
    plugin: String,
    reason: &'static str,
}

/// What was refused (`read`, `write` or `connect`), and whose word it is:
/// `recorded` (the sandbox's, seen by plughost) or `reported_by_plugin`
/// (a permission error in the plugin's own output).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DenialLabels {
    tenant: String,
    plugin: String,
    access: &'static str,
    evidence: &'static str,
}

/// `granted` or `declined`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AnswerLabels {
    tenant: String,
    plugin: String,
    answer: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabels {
    tenant: String,
    plugin: String,
    /// `running` (idle or busy), `busy` (serving a call) or `starting`.
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabels {
    tenant: String,
}

/// The metrics of every host and HTTP front that report to one registry.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let state = tempfile::tempdir()?;
/// use prometheus_client::registry::Registry;
/// let mut registry = Registry::default();
/// let metrics = plughost::observe::Prometheus::new(&mut registry);
/// let host = plughost::PluginHost::builder()
///     .plugins_dir("plugins-examples")
///     .state_dir(state.path())
///     .prometheus(&metrics, "default")
///     .build()?;
/// // A family shows once it has a value: a call counts, even of a tool
/// // that does not exist (its name is not a label).
/// let rt = tokio::runtime::Runtime::new()?;
/// let _ = rt.block_on(host.call("made_up", serde_json::json!({}), Default::default()));
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry)?;
/// assert!(text.contains(r#"plughost_calls_total{tenant="default",tool="(unknown)""#));
/// assert!(text.contains(r#"plughost_calls_waiting{tenant="default",plugin="(unknown)"} 0"#));
/// assert!(!text.contains("made_up"));
/// # drop(host); Ok(()) }
/// ```
#[derive(Debug)]
pub struct Prometheus {
    calls: Family<CallLabels, Counter>,
    durations: Family<DurationLabels, Histogram>,
    waits: Family<PluginLabels, Histogram>,
    waiting: Family<PluginLabels, Gauge>,
    in_flight: Family<PluginLabels, Gauge>,
    worker_starts: Family<PluginLabels, Counter>,
    worker_stops: Family<StopLabels, Counter>,
    denials: Family<DenialLabels, Counter>,
    questions: Family<PluginLabels, Counter>,
    answers: Family<AnswerLabels, Counter>,
    probes: Arc<Probes>,
}

/// What is read from the hosts and fronts at each scrape.
#[derive(Default)]
struct Probes {
    hosts: Mutex<Vec<(String, Weak<dyn WorkerLoads>)>>,
    sessions: Mutex<Vec<(String, SessionCount)>>,
}

/// Counts a front's open MCP sessions; `None` once the front is gone.
type SessionCount = Box<dyn Fn() -> Option<usize> + Send + Sync>;

impl std::fmt::Debug for Probes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Probes")
    }
}

/// A host's workers as they are now, one entry per plugin that has any.
pub(crate) trait WorkerLoads: Send + Sync {
    fn worker_loads(&self) -> Vec<WorkerLoad>;
}

impl Prometheus {
    /// Registers plughost's metrics, named `plughost_…`, in `registry`.
    pub fn new(registry: &mut Registry) -> Arc<Prometheus> {
        let histogram = || Histogram::new(DURATION_BUCKETS);
        let metrics = Prometheus {
            calls: Family::default(),
            durations: Family::new_with_constructor(histogram),
            waits: Family::new_with_constructor(histogram),
            waiting: Family::default(),
            in_flight: Family::default(),
            worker_starts: Family::default(),
            worker_stops: Family::default(),
            denials: Family::default(),
            questions: Family::default(),
            answers: Family::default(),
            probes: Arc::default(),
        };
        let r = registry.sub_registry_with_prefix("plughost");
        r.register(
            "calls",
            "Tool calls that ended, by outcome (ok, tool_error, error) and kind",
            metrics.calls.clone(),
        );
        r.register(
            "call_duration_seconds",
            "How long tool calls took, from the request to the answer",
            metrics.durations.clone(),
        );
        r.register(
            "call_wait_seconds",
            "How long tool calls waited before their plugin ran: checks, approval, the queue for a call slot or a worker",
            metrics.waits.clone(),
        );
        r.register(
            "calls_waiting",
            "Tool calls started whose plugin does not run yet",
            metrics.waiting.clone(),
        );
        r.register(
            "calls_in_flight",
            "Tool calls whose plugin runs now",
            metrics.in_flight.clone(),
        );
        r.register(
            "worker_starts",
            "Persistent workers and MCP servers started",
            metrics.worker_starts.clone(),
        );
        r.register(
            "worker_stops",
            "Persistent workers and MCP servers stopped, by reason",
            metrics.worker_stops.clone(),
        );
        r.register(
            "sandbox_denials",
            "Connections the egress proxy refused plugins (evidence=\"recorded\"), and permission errors a failed call's own output reported on paths or hosts its grants do not reach (evidence=\"reported_by_plugin\")",
            metrics.denials.clone(),
        );
        r.register(
            "approval_questions",
            "Approval questions asked before a plugin could run",
            metrics.questions.clone(),
        );
        r.register(
            "approval_answers",
            "Approvals granted and declined",
            metrics.answers.clone(),
        );
        r.register_collector(Box::new(Scraped(metrics.probes.clone())));
        Arc::new(metrics)
    }

    /// The observer that counts the calls and events of `tenant`'s host.
    pub(crate) fn observer(self: &Arc<Self>, tenant: &str) -> Arc<dyn Observer> {
        Arc::new(TenantObserver {
            metrics: self.clone(),
            tenant: tenant.to_owned(),
        })
    }

    /// Reads `tenant`'s workers from `host` at each scrape, while it lives.
    pub(crate) fn watch_workers(&self, tenant: &str, host: Weak<dyn WorkerLoads>) {
        if let Ok(mut hosts) = self.probes.hosts.lock() {
            hosts.push((tenant.to_owned(), host));
        }
    }

    /// Reads `tenant`'s open MCP sessions with `count` at each scrape,
    /// until it answers `None`.
    #[cfg_attr(
        not(feature = "mcp-server"),
        expect(dead_code, reason = "the MCP front end counts its sessions")
    )]
    pub(crate) fn watch_sessions(
        &self,
        tenant: &str,
        count: impl Fn() -> Option<usize> + Send + Sync + 'static,
    ) {
        if let Ok(mut sessions) = self.probes.sessions.lock() {
            sessions.push((tenant.to_owned(), Box::new(count)));
        }
    }
}

/// Counts one tenant's calls and events.
struct TenantObserver {
    metrics: Arc<Prometheus>,
    tenant: String,
}

impl TenantObserver {
    fn plugin(&self, call: &CallInfo) -> PluginLabels {
        self.named(if call.plugin.is_empty() {
            UNKNOWN
        } else {
            &call.plugin
        })
    }

    fn named(&self, plugin: &str) -> PluginLabels {
        PluginLabels {
            tenant: self.tenant.clone(),
            plugin: plugin.to_owned(),
        }
    }

    fn ended(&self, call: &CallInfo, summary: &CallSummary) -> ObserverResult {
        let m = &self.metrics;
        let plugin = self.plugin(call);
        if summary.run.is_some() {
            m.in_flight.get_or_create(&plugin).dec();
        } else {
            m.waiting.get_or_create(&plugin).dec();
        }
        let tool = if call.plugin.is_empty() {
            UNKNOWN.to_owned()
        } else {
            call.tool.clone()
        };
        let (outcome, kind) = match (summary.error_kind, summary.tool_error) {
            (Some(kind), _) => ("error", kind.as_str()),
            (None, Some(kind)) => ("tool_error", kind.as_str()),
            (None, None) if summary.is_error => ("tool_error", ""),
            (None, None) => ("ok", ""),
        };
        m.calls
            .get_or_create(&CallLabels {
                tenant: self.tenant.clone(),
                tool: tool.clone(),
                plugin: plugin.plugin.clone(),
                outcome,
                kind,
            })
            .inc();
        m.durations
            .get_or_create(&DurationLabels {
                tenant: self.tenant.clone(),
                tool,
                plugin: plugin.plugin.clone(),
                outcome,
            })
            .observe(seconds(summary.duration));
        m.waits
            .get_or_create(&plugin)
            .observe(seconds(summary.wait));
        Ok(())
    }
}

impl Observer for TenantObserver {
    fn interests(&self) -> Interests {
        Interests {
            events: true,
            calls: true,
            progress: false,
        }
    }

    fn event(&self, event: &HostEvent) -> ObserverResult {
        let m = &self.metrics;
        let (tenant, labels) = (&self.tenant, |plugin: &str| self.named(plugin));
        match event {
            HostEvent::WorkerStarted { plugin, .. } => {
                m.worker_starts.get_or_create(&labels(plugin)).inc();
            }
            HostEvent::WorkerStopped { plugin, reason, .. } => {
                m.worker_stops
                    .get_or_create(&StopLabels {
                        tenant: tenant.clone(),
                        plugin: plugin.clone(),
                        reason: reason.kind(),
                    })
                    .inc();
            }
            // What a failed call reported it was refused, and what the
            // egress proxy refused a plugin with host grants (`connect`),
            // each labelled with whose word it is.
            HostEvent::SandboxDenied { plugin, denial, .. }
            | HostEvent::HostRefused { plugin, denial } => {
                let access = match denial.access {
                    Access::Read => "read",
                    Access::Write => "write",
                    Access::Connect => "connect",
                };
                m.denials
                    .get_or_create(&DenialLabels {
                        tenant: tenant.clone(),
                        plugin: plugin.clone(),
                        access,
                        evidence: denial.evidence.as_str(),
                    })
                    .inc();
            }
            HostEvent::ApprovalAsked { plugin } => {
                m.questions.get_or_create(&labels(plugin)).inc();
            }
            HostEvent::ApprovalGranted { plugin } | HostEvent::ApprovalDeclined { plugin } => {
                let answer = match event {
                    HostEvent::ApprovalGranted { .. } => "granted",
                    _ => "declined",
                };
                m.answers
                    .get_or_create(&AnswerLabels {
                        tenant: tenant.clone(),
                        plugin: plugin.clone(),
                        answer,
                    })
                    .inc();
            }
            _ => {}
        }
        Ok(())
    }

    fn call_started(&self, call: &CallInfo) -> ObserverResult {
        self.metrics.waiting.get_or_create(&self.plugin(call)).inc();
        Ok(())
    }

    fn call_admitted(&self, call: &CallInfo) -> ObserverResult {
        let plugin = self.plugin(call);
        self.metrics.waiting.get_or_create(&plugin).dec();
        self.metrics.in_flight.get_or_create(&plugin).inc();
        Ok(())
    }

    fn call_ended(
        &self,
        call: &CallInfo,
        _: &Result<ToolOutcome, CallError>,
        summary: &CallSummary,
    ) -> ObserverResult {
        self.ended(call, summary)
    }
}

/// The metrics read at each scrape (registered in the `plughost`
/// sub-registry, which prefixes their names).
#[derive(Debug)]
struct Scraped(Arc<Probes>);

impl Collector for Scraped {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let workers = Family::<WorkerLabels, Gauge>::default();
        let backoff = Family::<PluginLabels, Gauge>::default();
        let sessions = Family::<TenantLabels, Gauge>::default();
        if let Ok(mut hosts) = self.0.hosts.lock() {
            hosts.retain(|(tenant, host)| {
                let Some(host) = host.upgrade() else {
                    return false;
                };
                for load in host.worker_loads() {
                    let labels = |state| WorkerLabels {
                        tenant: tenant.clone(),
                        plugin: load.plugin.clone(),
                        state,
                    };
                    workers
                        .get_or_create(&labels("running"))
                        .set(load.running as i64);
                    workers.get_or_create(&labels("busy")).set(load.busy as i64);
                    workers
                        .get_or_create(&labels("starting"))
                        .set(load.starting as i64);
                    backoff
                        .get_or_create(&PluginLabels {
                            tenant: tenant.clone(),
                            plugin: load.plugin.clone(),
                        })
                        .set(i64::from(load.backing_off));
                }
                true
            });
        }
        if let Ok(mut fronts) = self.0.sessions.lock() {
            fronts.retain(|(tenant, count)| match count() {
                Some(n) => {
                    sessions
                        .get_or_create(&TenantLabels {
                            tenant: tenant.clone(),
                        })
                        .inc_by(n as i64);
                    true
                }
                None => false,
            });
        }
        for (name, help, family) in [
            (
                "workers",
                "Persistent workers and MCP servers, by state (running, busy, starting)",
                &workers as &dyn EncodeMetric,
            ),
            (
                "worker_backoff",
                "1 while a plugin's workers keep dying at start-up and its next start waits",
                &backoff,
            ),
            ("mcp_sessions", "MCP sessions open over HTTP", &sessions),
        ] {
            let metric = encoder.encode_descriptor(name, help, None, family.metric_type())?;
            family.encode(metric)?;
        }
        Ok(())
    }
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::phases::Phases;
    use crate::protocol::Invocation;

    fn call(tool: &str, plugin: &str) -> CallInfo {
        CallInfo {
            call_id: 0,
            tool: tool.to_owned(),
            plugin: plugin.to_owned(),
            invocation: Invocation::default(),
            started_at: std::time::SystemTime::now(),
            input: serde_json::Value::Null,
            trace: None,
        }
    }

    fn text(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    }

    #[test]
    fn gauges_return_to_zero_and_unknown_tools_get_no_label() {
        let mut registry = Registry::default();
        let metrics = Prometheus::new(&mut registry);
        let observer = metrics.observer("t");
        // Refused before it ran: waiting, then nothing.
        let refused = call("made_up_by_a_client", "");
        observer.call_started(&refused).unwrap();
        let err = CallError::NotFound {
            tool: refused.tool.clone(),
            hint: None,
            rejected: None,
        };
        let ended = Err(err);
        let summary = CallSummary::of(&ended, &Phases::new(), None);
        observer.call_ended(&refused, &ended, &summary).unwrap();
        // Ran: waiting, in flight, then nothing.
        let ran = call("echo", "echoer");
        let mut phases = Phases::new();
        observer.call_started(&ran).unwrap();
        assert!(
            text(&registry).contains(r#"plughost_calls_waiting{tenant="t",plugin="echoer"} 1"#)
        );
        phases.admitted = Some(std::time::Instant::now());
        observer.call_admitted(&ran).unwrap();
        let t = text(&registry);
        assert!(
            t.contains(r#"plughost_calls_waiting{tenant="t",plugin="echoer"} 0"#),
            "{t}"
        );
        assert!(
            t.contains(r#"plughost_calls_in_flight{tenant="t",plugin="echoer"} 1"#),
            "{t}"
        );
        let err = CallError::Cancelled {
            tool: "echo".into(),
        };
        let ended = Err(err);
        let summary = CallSummary::of(&ended, &phases, None);
        observer.call_ended(&ran, &ended, &summary).unwrap();
        let t = text(&registry);
        assert!(
            t.contains(r#"plughost_calls_in_flight{tenant="t",plugin="echoer"} 0"#),
            "{t}"
        );
        assert!(
            t.contains(r#"plughost_calls_waiting{tenant="t",plugin="(unknown)"} 0"#),
            "{t}"
        );
        assert!(
            t.contains(r#"plughost_calls_total{tenant="t",tool="(unknown)",plugin="(unknown)",outcome="error",kind="not_found"} 1"#),
            "{t}"
        );
        assert!(
            t.contains(r#"plughost_calls_total{tenant="t",tool="echo",plugin="echoer",outcome="error",kind="cancelled"} 1"#),
            "{t}"
        );
        assert!(!t.contains("made_up"), "{t}");
    }

    #[test]
    fn egress_refusals_count_as_connect_denials() {
        let mut registry = Registry::default();
        let metrics = Prometheus::new(&mut registry);
        let observer = metrics.observer("t");
        let refused = HostEvent::HostRefused {
            plugin: "fetcher".into(),
            denial: crate::error::Denial::connect(
                "example.org:443".into(),
                "network:example.org".into(),
                None,
            ),
        };
        observer.event(&refused).unwrap();
        observer.event(&refused).unwrap();
        let t = text(&registry);
        assert!(
            t.contains(
                r#"plughost_sandbox_denials_total{tenant="t",plugin="fetcher",access="connect",evidence="recorded"} 2"#
            ),
            "{t}"
        );
        assert!(!t.contains("example.org"), "{t}");
    }
}
