//! [`PluginHost`]: the library's front door. It owns the current catalog
//! snapshot, the limits, the concurrency gate and the observers, and turns a
//! tool call into a validated request, a run of the executor and a typed outcome.
//!
//! `builder` holds the knobs, `call` the call pipeline, `reload` the catalog
//! swaps driven by the watcher.

mod approve;
mod brokered;
mod builder;
mod call;
mod checks;
mod code_tools;
mod denials;
mod diff;
mod dirs;
mod egress;
mod gateway;
mod launch;
mod mcp_plugins;
mod policy;
mod reload;
mod renewal;
mod reports;
mod revocation;
mod running;
#[cfg(feature = "mcp-server")]
mod sign_in;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock, Weak};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Semaphore, broadcast};
use tokio_util::sync::CancellationToken;

pub use brokered::BrokeredRecord;
pub use builder::{PluginHostBuilder, SignInOpener};
pub use code_tools::CodeToolsError;
pub use denials::DenialRecord;
pub use gateway::Offered;
pub use policy::Policy;
pub use reports::{Doctor, Listing, PluginListing, Problem, ToolListing, Validation};
#[cfg(feature = "mcp-server")]
pub use sign_in::SignInError;

use crate::approval::{ApprovalStore, ApprovalView, Approver};
use crate::error::CallError;
use crate::events::{HostEvent, WorkerStop};
use crate::observe::Bus;
use crate::observe::metrics::{Metrics, ToolStats};
use crate::plugins::catalog::{Catalog, ToolRef};
use crate::plugins::watcher::{Reload, Watcher};
use crate::protocol::Invocation;
use crate::run::executor::Progress;
use crate::run::outcome::ToolOutcome;
use crate::run::worker::Workers;
use policy::PolicyState;

/// How much of the Linux sandbox a host applies to plugin processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// No confinement: permissions are advisory (`--no-sandbox`).
    Off,
    /// Enforce what this kernel supports; warn once about the rest.
    #[default]
    On,
    /// Refuse a call (`not_allowed`) when a wanted restriction cannot be enforced
    /// (`--require-sandbox`).
    Required,
}

/// Per-call options beyond the tool and its input.
#[derive(Default, Clone)]
pub struct CallOptions {
    /// Who asks for the call and in which session: for the policy, the
    /// observers and the plugin's request.
    pub invocation: Invocation,
    /// Cancels the call: its process tree is killed and the call ends with `cancelled`.
    pub cancel: Option<CancellationToken>,
    /// Receives the plugin's progress reports while it runs.
    pub on_progress: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
    /// Asks for approval when the plugin needs it; overrides the host's approver.
    pub approver: Option<Arc<dyn Approver>>,
    /// The client the call comes from: an MCP server run as a plugin may ask
    /// it for a model's completion, the user's input or its roots during the
    /// call (see [`crate::client`]). Without one, such requests are refused.
    pub client: Option<Arc<dyn crate::client::CallClient>>,
}

impl CallOptions {
    /// Options whose only settings are the call's client and its
    /// cancellation.
    pub fn for_client(
        client: Arc<dyn crate::client::CallClient>,
        cancel: CancellationToken,
    ) -> CallOptions {
        CallOptions {
            client: Some(client),
            cancel: Some(cancel),
            ..CallOptions::default()
        }
    }
}

/// Loads plugins, runs tool calls, enforces limits. Dropping the host (or
/// calling [`PluginHost::shutdown`]) cancels every call in flight and kills
/// their process trees.
pub struct PluginHost {
    inner: Arc<Inner>,
}

struct Inner {
    /// This host, for callbacks and tasks that must not keep it alive.
    me: Weak<Inner>,
    config: PluginHostBuilder,
    catalog: RwLock<Arc<Catalog>>,
    permits: Semaphore,
    /// Events for subscribers and observers; calls for observers.
    bus: Arc<Bus>,
    /// Serializes catalog updates (calls only read the snapshot).
    update: Mutex<()>,
    shutdown: CancellationToken,
    /// The calls in flight, which a shutdown waits for.
    running: Arc<running::Running>,
    next_call: AtomicU64,
    /// The persistent plugins' workers.
    workers: Workers,
    metrics: Arc<Metrics>,
    policy_state: PolicyState,
    approvals: ApprovalStore,
    /// One approval question at a time, so two calls never prompt together.
    asking: tokio::sync::Mutex<()>,
    /// One sign-in in the middle of a session at a time, per plugin: calls
    /// that want one together get the first one's.
    #[cfg(feature = "mcp-server")]
    signing_in: Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The "cannot enforce" warning is printed once per host.
    sandbox_warned: std::sync::atomic::AtomicBool,
    /// Whether the task that keeps a timer pending runs (`call.rs`).
    timer_kept: std::sync::atomic::AtomicBool,
    /// Whether the task that stops workers whose grant changed runs
    /// (`revocation.rs`).
    approvals_watched: std::sync::atomic::AtomicBool,
    /// Each plugin version's prepared confinement, by generation.
    confinements: Mutex<std::collections::HashMap<u64, Arc<crate::run::sandbox::Confinement>>>,
    /// Each plugin version's egress proxy (host grants only), by generation.
    outlets: Mutex<std::collections::HashMap<u64, Arc<egress::Outlet>>>,
    /// The certificate authority of brokered secrets, opened on first use.
    authority: Mutex<Option<Arc<crate::run::egress::authority::Authority>>>,
    temp_pool: Arc<dirs::TempPool>,
    /// What the MCP gateway keeps across requests (log level, subscriptions).
    gateway: gateway::Gateway,
}

#[cfg(feature = "prometheus")]
impl crate::observe::prometheus::WorkerLoads for Inner {
    fn worker_loads(&self) -> Vec<crate::run::worker::WorkerLoad> {
        self.workers.loads()
    }
}

impl Drop for PluginHost {
    fn drop(&mut self) {
        self.inner.shutdown.cancel();
        self.inner.workers.kill_all(WorkerStop::HostShutDown);
    }
}

impl PluginHost {
    /// A builder with the defaults: `~/.plugins`, the XDG state folder, 30 s,
    /// 1 MB stdout, 64 KB stderr, 16 calls at once.
    pub fn builder() -> PluginHostBuilder {
        PluginHostBuilder::default()
    }

    /// The folder plugin folders are loaded from, made absolute.
    pub fn plugins_dir(&self) -> &Path {
        &self.inner.config.plugins_dir
    }

    /// The folder for plugin data, temp folders and approvals, made absolute.
    pub fn state_dir(&self) -> &Path {
        &self.inner.config.state_dir
    }

    /// How much of the sandbox this host applies.
    pub fn sandbox_mode(&self) -> SandboxMode {
        self.inner.config.sandbox
    }

    /// How many calls run at once (the builder's `concurrency`).
    pub fn concurrency(&self) -> usize {
        self.inner.config.concurrency
    }

    /// The current snapshot, ranked by the approvals of now (see
    /// `reload.rs`).
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.inner.ranked(&self.inner.approvals.current())
    }

    /// Re-reads the whole plugins folder and publishes what changed.
    pub fn reload(&self) -> Vec<HostEvent> {
        self.inner.apply(Reload::All)
    }

    /// Re-reads these plugin folders (by name) and publishes what changed.
    pub fn reload_folders(&self, folders: Vec<String>) -> Vec<HostEvent> {
        self.inner.apply(Reload::Folders(folders))
    }

    /// Catalog changes from now on: added, updated, removed, rejected plugins,
    /// collisions and watcher notices. A receiver that falls more than 1,024
    /// events behind loses the oldest (`RecvError::Lagged`).
    pub fn events(&self) -> broadcast::Receiver<HostEvent> {
        self.inner.bus.subscribe()
    }

    /// Lists, now, every approved MCP server whose tools this host does not
    /// know, so that they are offered before anyone calls one: a fleet's
    /// replica reads approvals written from another state folder, which has
    /// the listing cache this one lacks (a cache that could not be read
    /// leaves the same gap). A call of such a server's tool lists it anyway;
    /// this is for the lists clients see first. Returns each server that
    /// could not be listed, with why.
    pub async fn list_approved_servers(&self) -> Vec<(String, String)> {
        self.inner.list_approved_servers().await
    }

    /// Watches the plugins folder and applies changes as they happen, until the
    /// returned [`Watcher`] or the host is dropped. Creates a missing plugins folder.
    pub fn watch(&self) -> std::io::Result<Watcher> {
        self.watch_with(false)
    }

    /// [`Self::watch`], polling the folder instead of using the platform's
    /// change notification when `polling` is set (network file systems).
    pub fn watch_with(&self, polling: bool) -> std::io::Result<Watcher> {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        Watcher::start(
            &self.inner.config.plugins_dir,
            polling,
            move |reload| match weak.upgrade() {
                Some(inner) => {
                    inner.apply(reload);
                    true
                }
                None => false,
            },
        )
    }

    /// Every tool offered to a model, sorted by name: a tool whose plugin
    /// still needs approval is listed (a call asks for it), an MCP server's
    /// tool that changed since the user approved it is not, and neither is
    /// anything that needs approval while the approvals file cannot be read
    /// ([`Self::listing`] says why).
    ///
    /// Reads the approvals file when it changed since the last read (a small
    /// file, capped at 4 MiB); otherwise one `lstat`.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.view()
            .offered()
            .map(|(_, t)| ToolInfo::new(t))
            .collect()
    }

    /// The approval view of the current catalog and approvals (see
    /// `approval::view`): what every listing and call reads.
    pub(crate) fn view(&self) -> ApprovalView {
        let approvals = self.inner.approvals.current();
        ApprovalView::new(self.inner.ranked(&approvals), approvals)
    }

    /// Call counters and durations per tool since the host was built.
    pub fn metrics(&self) -> BTreeMap<String, ToolStats> {
        self.inner.metrics.snapshot()
    }

    /// Workers started and stopped (by reason) per persistent plugin since
    /// the host was built.
    pub fn worker_metrics(&self) -> BTreeMap<String, crate::observe::metrics::WorkerStats> {
        self.inner.metrics.workers()
    }

    /// Cancels every call in flight and stops every worker.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.workers.kill_all(WorkerStop::HostShutDown);
    }

    /// [`shutdown`](Self::shutdown), then waits (at most `within`) until
    /// every call in flight has ended, its processes killed and reaped: a
    /// program that exits right after would otherwise leave them behind.
    /// Whether they all ended in time.
    pub async fn shutdown_and_wait(&self, within: std::time::Duration) -> bool {
        self.shutdown();
        tokio::time::timeout(within, self.inner.running.until_idle())
            .await
            .is_ok()
    }

    /// Waits (at most `within`) until no call is in flight, cancelling
    /// none: a server that drains lets the calls it took finish. Whether
    /// they all ended in time.
    pub async fn until_idle(&self, within: std::time::Duration) -> bool {
        tokio::time::timeout(within, self.inner.running.until_idle())
            .await
            .is_ok()
    }

    /// Stops the idle workers of persistent plugins and waits until they are
    /// gone: stdin closed, a short grace, then the group kill. Busy workers
    /// stop after their call. The next call starts a fresh worker.
    pub async fn stop_workers(&self) {
        self.inner.workers.stop_all(WorkerStop::AskedToStop).await;
    }

    /// The running workers of persistent plugins, by plugin.
    pub fn workers(
        &self,
    ) -> std::collections::HashMap<String, Vec<crate::run::worker::WorkerInfo>> {
        self.inner.workers.running()
    }

    /// What each persistent plugin's workers (and each MCP server) are
    /// doing now: running, busy, being started, backing off. The
    /// Prometheus exporter's gauges are these.
    pub fn worker_loads(&self) -> Vec<crate::run::worker::WorkerLoad> {
        self.inner.workers.loads()
    }

    /// Calls `tool` with `input`. The future owns what it needs (`'static`), so it
    /// can be spawned; it is still cancelled when the host is dropped.
    pub fn call(
        &self,
        tool: &str,
        input: Value,
        invocation: Invocation,
    ) -> impl Future<Output = Result<ToolOutcome, CallError>> + Send + 'static {
        self.call_with(
            tool,
            input,
            CallOptions {
                invocation,
                ..CallOptions::default()
            },
        )
    }

    /// [`Self::call`] with cancellation and progress.
    pub fn call_with(
        &self,
        tool: &str,
        input: Value,
        options: CallOptions,
    ) -> impl Future<Output = Result<ToolOutcome, CallError>> + Send + 'static {
        let inner = self.inner.clone();
        let catalog = self.catalog();
        let tool = tool.to_owned();
        async move {
            let _running = inner.running.enter();
            inner.call(&catalog, &tool, input, options).await
        }
    }
}

/// A callable tool as front ends show it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The tool's name, unique among the tools offered.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The plugin that offers it.
    pub plugin: String,
    /// The JSON Schema its input must match (an object).
    pub input_schema: Value,
    /// The JSON Schema of its `structured` result, when it declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl ToolInfo {
    pub(crate) fn new(t: &ToolRef) -> ToolInfo {
        ToolInfo::of(&t.plugin, &t.tool().spec)
    }

    pub(crate) fn of(
        plugin: &crate::plugins::catalog::Plugin,
        spec: &crate::plugins::manifest::ToolSpec,
    ) -> ToolInfo {
        ToolInfo {
            name: spec.name.clone(),
            description: spec.description.clone(),
            plugin: plugin.name().to_owned(),
            input_schema: Value::Object(spec.input_schema.clone()),
            output_schema: spec.output_schema.clone().map(Value::Object),
        }
    }
}
