//! [`PluginHostBuilder`]: every knob of a host, with the documented defaults.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::policy::{Policy, PolicyState};
use super::{Inner, PluginHost, SandboxMode};
use crate::approval::{ApprovalStore, Approver};
use crate::error::BuildError;
use crate::observe::audit::AuditLog;
use crate::observe::metrics::Metrics;
use crate::observe::trace::Tracing;
use crate::observe::{Bus, Observer};
use crate::plugins::catalog::Catalog;
use crate::run::executor::{self, Limits};
use crate::run::worker::Workers;

/// Shows the user where to approve a new sign-in: given the plugin's name
/// and the URL (see [`PluginHostBuilder::sign_in_opener`]).
pub type SignInOpener = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Builds a [`PluginHost`].
#[derive(Clone)]
#[must_use]
pub struct PluginHostBuilder {
    pub(super) plugins_dir: PathBuf,
    pub(super) state_dir: PathBuf,
    pub(super) limits: Limits,
    pub(super) timeout_override: Option<Duration>,
    pub(super) concurrency: usize,
    pub(super) inherit_env: bool,
    reap_orphans: bool,
    observers: Vec<Arc<dyn Observer>>,
    audit_log: Option<(PathBuf, bool)>,
    pub(super) record_inputs: bool,
    pub(super) policy: Policy,
    pub(super) approver: Option<Arc<dyn Approver>>,
    pub(super) sandbox: SandboxMode,
    /// Whether the sandbox may use user namespaces.
    pub(super) namespaces: bool,
    /// Paths no plugin reads or writes beside the state folder (a token file).
    pub(super) private: Vec<PathBuf>,
    /// An approvals file kept outside the state folder, and whether this
    /// host may change it.
    approvals_file: Option<(PathBuf, bool)>,
    /// Makes a span of every call (feature `otel`).
    pub(super) tracing: Option<Tracing>,
    /// The program a remote server's process runs, and its arguments before
    /// the server's URL.
    pub(super) remote_bridge: Option<(PathBuf, Vec<std::ffi::OsString>)>,
    /// Shows the user the URL of a sign-in a remote server asks for in the
    /// middle of a session.
    pub(super) sign_in_opener: Option<SignInOpener>,
    /// Where the host's Prometheus metrics go, and under which tenant.
    #[cfg(feature = "prometheus")]
    prometheus: Vec<(Arc<crate::observe::Prometheus>, String)>,
}

impl Default for PluginHostBuilder {
    fn default() -> Self {
        PluginHostBuilder {
            plugins_dir: crate::paths::default_plugins_dir(),
            state_dir: crate::paths::default_state_dir(),
            limits: Limits::default(),
            timeout_override: None,
            concurrency: Self::DEFAULT_CONCURRENCY,
            inherit_env: false,
            reap_orphans: false,
            observers: Vec::new(),
            audit_log: None,
            record_inputs: false,
            policy: Policy::default(),
            approver: None,
            sandbox: SandboxMode::default(),
            namespaces: crate::run::sandbox::namespaces_by_default(),
            private: Vec::new(),
            approvals_file: None,
            tracing: None,
            remote_bridge: None,
            sign_in_opener: None,
            #[cfg(feature = "prometheus")]
            prometheus: Vec::new(),
        }
    }
}

impl PluginHostBuilder {
    /// How many calls run at once unless [`Self::concurrency`] says otherwise.
    pub const DEFAULT_CONCURRENCY: usize = 16;

    /// The folder plugin folders are loaded from.
    pub fn plugins_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugins_dir = dir.into();
        self
    }

    /// The folder for plugin data, temp folders and approvals.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = dir.into();
        self
    }

    /// Default limits; a tool's `timeout_secs` still applies unless [`Self::timeout`] is set.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// A host-wide timeout that overrides every tool's `timeout_secs`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_override = Some(timeout);
        self
    }

    /// How many calls run at once; further calls wait in arrival order.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Pass the host's whole environment to plugins instead of the allowlist.
    pub fn inherit_env(mut self, yes: bool) -> Self {
        self.inherit_env = yes;
        self
    }

    /// Make this process the reaper of orphaned plugin grandchildren, so that
    /// killed grandchildren do not stay zombies under an init that does not reap
    /// (as in many containers). It is `PR_SET_CHILD_SUBREAPER`, a setting of the
    /// whole process, so off by default in the library; the `plughost` command
    /// turns it on. Linux only: elsewhere init reaps them.
    pub fn reap_orphans(mut self, yes: bool) -> Self {
        self.reap_orphans = yes;
        self
    }

    /// Adds an observer of plugin, approval and call events.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Appends one JSON line per call to `path`; with `with_inputs`, the call's input too.
    pub fn audit_log(mut self, path: impl Into<PathBuf>, with_inputs: bool) -> Self {
        self.audit_log = Some((path.into(), with_inputs));
        self.record_inputs |= with_inputs;
        self
    }

    /// Rate limits and session budgets, enforced before a plugin is spawned.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Who is asked when a call needs approval (default: nobody, so such a
    /// call fails with `not_allowed` and the command that approves).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The program that stands for a remote MCP server (a plugin whose
    /// manifest names a `remote` URL): it is started as `program ARGS… URL`,
    /// confined as that plugin, and bridges JSON-RPC lines on its stdin and
    /// stdout to the server's streamable HTTP ([`crate::remote::bridge`] is
    /// its body, which the `plughost` binary runs). Without one, calls to
    /// remote servers fail and say so.
    pub fn remote_bridge(
        mut self,
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<std::ffi::OsString>>,
    ) -> Self {
        self.remote_bridge = Some((program.into(), args.into_iter().map(Into::into).collect()));
        self
    }

    /// Lets a call sign in again to a remote server that asks in the middle
    /// of a session: one that refuses its sign-in (`401`: revoked, expired
    /// past refreshing, or moved to another authorization server) or wants
    /// more scopes (`403 insufficient_scope`, step-up). `open` is given the
    /// plugin's name and the URL to approve in (the library never opens or
    /// prints it), and the call waits for the sign-in, then asks once more.
    /// Without one, such a call fails and says to sign in again.
    ///
    /// Only for a host whose user is at this machine: whoever approves at
    /// the URL is who the server's tokens are for.
    pub fn sign_in_opener(mut self, open: impl Fn(&str, &str) + Send + Sync + 'static) -> Self {
        self.sign_in_opener = Some(Arc::new(open));
        self
    }

    /// Whether plugin processes are confined to their permissions (default: on).
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }

    /// Whether the sandbox may use user namespaces where they work (default:
    /// yes, unless `PLUGHOST_NO_NAMESPACES` is set). Without them, a plugin
    /// with `network:HOST` grants is held to the egress proxy's port by
    /// Landlock alone, and the project files that run later (`.git/hooks`,
    /// MCP configurations) under a write grant are not kept read-only.
    pub fn namespaces(mut self, yes: bool) -> Self {
        self.namespaces = yes;
        self
    }

    /// Reads approvals (grants and tool pins) from `file` instead of the
    /// state folder's `approvals.json`: one approval state that many hosts
    /// share (a fleet of replicas reading a file the operator keeps, or
    /// mounts). `writable` false: this host never changes it (an approval
    /// asked of it fails with [`ApprovalError::ReadOnly`](crate::approval::ApprovalError::ReadOnly)),
    /// and follows the file's changes within a second or two, withdrawing a
    /// revoked plugin's workers. Unlike the state folder's file, it must
    /// exist (a missing one approves nothing) and is read through symbolic
    /// links (a Kubernetes ConfigMap is one). No plugin may read or write
    /// it, nor the folder that holds it (its lock file, and the link a
    /// plugin could otherwise replace): keep it in a folder of its own.
    pub fn approvals_file(mut self, file: impl Into<PathBuf>, writable: bool) -> Self {
        let file = file.into();
        self.private.push(file.clone());
        if let Some(folder) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.private.push(folder.to_owned());
        }
        self.approvals_file = Some((file, writable));
        self
    }

    /// A path no plugin may read or write, whatever it is granted, like the
    /// state folder (which always is): a bearer token file kept elsewhere.
    pub fn private_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.private.push(path.into());
        self
    }

    /// Makes an OpenTelemetry span of every call with the tracer of
    /// `provider` (your own SDK setup: its sampler, processors and exporter
    /// apply). The span is the child of the caller's trace context
    /// ([`crate::protocol::Invocation::trace`], an MCP request's `_meta.traceparent`),
    /// and the plugin continues the trace from it: `TRACEPARENT` and
    /// `TRACESTATE` in a process's environment, `traceparent` and
    /// `tracestate` in a request's `context`, and in an MCP server's
    /// `_meta`. Without a provider no span is made, and the plugin continues
    /// the caller's context as it came.
    ///
    /// The span, `execute_tool TOOL`, carries the tool, its plugin, version
    /// and protocol, the call's source, outcome and error kind, the sandbox
    /// level, bytes in and out, and the wait and run times; its children are
    /// the start of a process, worker or MCP server for the call
    /// (`plughost.spawn`, `plughost.worker.start`) and the approval question
    /// (`plughost.approval`).
    #[cfg(feature = "otel")]
    pub fn tracer_provider<P>(mut self, provider: &P) -> Self
    where
        P: opentelemetry::trace::TracerProvider,
        P::Tracer: Send + Sync + 'static,
        <P::Tracer as opentelemetry::trace::Tracer>::Span: Send + Sync + 'static,
    {
        self.tracing = Some(Tracing::new(provider));
        self
    }

    /// Counts this host's calls, workers, approvals and sandbox denials in
    /// `metrics` (see [`crate::observe::Prometheus`]), labelled with `tenant`.
    #[cfg(feature = "prometheus")]
    pub fn prometheus(mut self, metrics: &Arc<crate::observe::Prometheus>, tenant: &str) -> Self {
        self.prometheus.push((metrics.clone(), tenant.to_owned()));
        self
    }

    /// Loads the plugins folder and returns the host. A missing plugins folder
    /// gives an empty catalog; an unreadable one, or an audit log that cannot
    /// be opened, is an error.
    pub fn build(mut self) -> Result<PluginHost, BuildError> {
        // Plugins get absolute paths in their request, whatever the caller passed.
        let absolute = |path: &Path| {
            std::path::absolute(path).map_err(|source| BuildError::Path {
                path: path.to_owned(),
                source,
            })
        };
        self.state_dir = absolute(&self.state_dir)?;
        self.plugins_dir = absolute(&self.plugins_dir)?;
        if self.reap_orphans {
            // Best effort: without it, killed grandchildren are reaped by init.
            let _ = executor::become_subreaper();
        }
        let catalog = load_catalog(&self.plugins_dir, &self.state_dir).map_err(|source| {
            BuildError::PluginsDir {
                path: self.plugins_dir.clone(),
                source,
            }
        })?;
        let metrics = Arc::new(Metrics::default());
        let mut observers: Vec<Arc<dyn Observer>> = vec![metrics.clone()];
        if let Some((path, with_inputs)) = &self.audit_log {
            let log =
                AuditLog::open(path, *with_inputs).map_err(|source| BuildError::AuditLog {
                    path: path.clone(),
                    source,
                })?;
            observers.push(Arc::new(log));
        }
        #[cfg(feature = "prometheus")]
        for (metrics, tenant) in &self.prometheus {
            observers.push(metrics.observer(tenant));
        }
        observers.extend(self.observers.iter().cloned());
        let bus = Arc::new(Bus::new(&observers));
        // Observers hear of the plugins found at start like of later ones.
        for event in super::diff::diff(
            &Catalog::default(),
            &catalog,
            &catalog.folders().map(str::to_owned).collect::<Vec<_>>(),
        ) {
            bus.publish(event);
        }
        #[cfg(feature = "prometheus")]
        let prometheus = self.prometheus.clone();
        let host = PluginHost {
            inner: Arc::new_cyclic(|me| Inner {
                me: me.clone(),
                catalog: RwLock::new(Arc::new(catalog)),
                permits: Semaphore::new(self.concurrency),
                workers: Workers::new({
                    let bus = bus.clone();
                    Arc::new(move |event| bus.publish(event))
                }),
                bus,
                update: Mutex::new(()),
                shutdown: CancellationToken::new(),
                running: Default::default(),
                next_call: AtomicU64::new(0),
                metrics,
                policy_state: PolicyState::default(),
                approvals: match &self.approvals_file {
                    Some((file, writable)) => ApprovalStore::named(file, *writable),
                    None => ApprovalStore::new(&self.state_dir),
                },
                asking: tokio::sync::Mutex::new(()),
                #[cfg(feature = "mcp-server")]
                signing_in: Default::default(),
                sandbox_warned: Default::default(),
                timer_kept: Default::default(),
                approvals_watched: Default::default(),
                confinements: Default::default(),
                outlets: Default::default(),
                authority: Default::default(),
                temp_pool: Default::default(),
                gateway: Default::default(),
                config: self,
            }),
        };
        #[cfg(feature = "prometheus")]
        for (metrics, tenant) in prometheus {
            let loads: std::sync::Weak<dyn crate::observe::prometheus::WorkerLoads> =
                Arc::downgrade(&host.inner) as _;
            metrics.watch_workers(&tenant, loads);
        }
        Ok(host)
    }
}

/// Loads the plugins folder; an MCP server's tools come from its cached listing.
pub(super) fn load_catalog(dir: &Path, state_dir: &Path) -> std::io::Result<Catalog> {
    let catalog = match crate::plugins::loader::scan(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Catalog::default(),
        other => other?,
    };
    Ok(crate::plugins::mcp_plugin::with_cached_listings(
        catalog, state_dir,
    ))
}
