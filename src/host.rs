//! [`PluginHost`]: the library's front door. It owns the current catalog
//! snapshot, the limits and the concurrency gate, and turns a tool call into a
//! validated request, a run of the executor and a typed outcome.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Semaphore, broadcast};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, Plugin, ToolRef};
use crate::env::plugin_env;
use crate::error::CallError;
use crate::events::{HostEvent, diff};
use crate::executor::{self, Finished, Job, Limits, Progress, RunError};
use crate::outcome::{ToolOutcome, interpret};
use crate::protocol::{Context, Invocation, Request};
use crate::watcher::{Reload, Watcher};

/// Default number of calls that run at once.
pub const DEFAULT_CONCURRENCY: usize = 16;

/// Builds a [`PluginHost`].
#[derive(Debug, Clone)]
#[must_use]
pub struct PluginHostBuilder {
    plugins_dir: PathBuf,
    state_dir: PathBuf,
    limits: Limits,
    timeout_override: Option<Duration>,
    concurrency: usize,
    inherit_env: bool,
    reap_orphans: bool,
}

impl PluginHostBuilder {
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

    /// Make this process the reaper of orphaned plugin grandchildren (process-wide;
    /// see [`executor::become_subreaper`]). On by default.
    pub fn reap_orphans(mut self, yes: bool) -> Self {
        self.reap_orphans = yes;
        self
    }

    /// Loads the plugins folder and returns the host. A missing plugins folder
    /// gives an empty catalog; an unreadable one is an error.
    pub fn build(self) -> std::io::Result<PluginHost> {
        if self.reap_orphans {
            // Best effort: without it, killed grandchildren are reaped by init.
            let _ = executor::become_subreaper();
        }
        let catalog = load_catalog(&self.plugins_dir)?;
        Ok(PluginHost {
            inner: Arc::new(Inner {
                catalog: RwLock::new(Arc::new(catalog)),
                permits: Semaphore::new(self.concurrency),
                events: broadcast::channel(1024).0,
                update: Mutex::new(()),
                shutdown: CancellationToken::new(),
                next_call: AtomicU64::new(0),
                config: self,
            }),
        })
    }
}

fn load_catalog(dir: &Path) -> std::io::Result<Catalog> {
    match crate::loader::scan(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Catalog::default()),
        other => other,
    }
}

/// Per-call options beyond the tool and its input.
#[derive(Default, Clone)]
pub struct CallOptions {
    pub invocation: Invocation,
    /// Cancels the call: its process tree is killed and the call ends with `cancelled`.
    pub cancel: Option<CancellationToken>,
    /// Receives the plugin's progress reports while it runs.
    pub on_progress: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
}

/// Loads plugins, runs tool calls, enforces limits. Dropping the host (or
/// calling [`PluginHost::shutdown`]) cancels every call in flight and kills
/// their process trees.
pub struct PluginHost {
    inner: Arc<Inner>,
}

struct Inner {
    config: PluginHostBuilder,
    catalog: RwLock<Arc<Catalog>>,
    permits: Semaphore,
    /// Catalog changes, for `events()` subscribers.
    events: broadcast::Sender<HostEvent>,
    /// Serializes catalog updates (calls only read the snapshot).
    update: Mutex<()>,
    shutdown: CancellationToken,
    next_call: AtomicU64,
}

impl Drop for PluginHost {
    fn drop(&mut self) {
        self.inner.shutdown.cancel();
    }
}

impl PluginHost {
    /// A builder with the defaults: `~/.plugins`, the XDG state folder, 30 s,
    /// 1 MB stdout, 64 KB stderr, 16 calls at once.
    pub fn builder() -> PluginHostBuilder {
        PluginHostBuilder {
            plugins_dir: crate::paths::default_plugins_dir(),
            state_dir: crate::paths::default_state_dir(),
            limits: Limits::default(),
            timeout_override: None,
            concurrency: DEFAULT_CONCURRENCY,
            inherit_env: false,
            reap_orphans: true,
        }
    }

    pub fn plugins_dir(&self) -> &Path {
        &self.inner.config.plugins_dir
    }

    pub fn state_dir(&self) -> &Path {
        &self.inner.config.state_dir
    }

    /// The current snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog.read().expect("catalog lock").clone()
    }

    /// Swaps in a new snapshot; calls in flight keep the one they started with.
    pub fn set_catalog(&self, catalog: Catalog) -> Arc<Catalog> {
        self.inner.set_catalog(catalog)
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
    /// events behind loses the oldest (see `broadcast::error::RecvError::Lagged`).
    pub fn events(&self) -> broadcast::Receiver<HostEvent> {
        self.inner.events.subscribe()
    }

    /// Watches the plugins folder and applies changes as they happen, until the
    /// returned [`Watcher`] or the host is dropped. Creates a missing plugins folder.
    pub fn watch(&self) -> std::io::Result<Watcher> {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        Watcher::start(&self.inner.config.plugins_dir, move |reload| {
            match weak.upgrade() {
                Some(inner) => {
                    inner.apply(reload);
                    true
                }
                None => false,
            }
        })
    }

    /// Every callable tool, sorted by name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.catalog()
            .tools()
            .map(|(_, t)| ToolInfo::new(t))
            .collect()
    }

    /// Cancels every call in flight.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
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
        async move { inner.call(&catalog, &tool, input, options).await }
    }
}

impl Inner {
    fn set_catalog(&self, catalog: Catalog) -> Arc<Catalog> {
        let catalog = Arc::new(catalog);
        *self.catalog.write().expect("catalog lock") = catalog.clone();
        catalog
    }

    /// Applies one reload and publishes its events.
    fn apply(&self, reload: Reload) -> Vec<HostEvent> {
        let _one_at_a_time = self.update.lock().expect("update lock");
        let root = &self.config.plugins_dir;
        let old = self.catalog.read().expect("catalog lock").clone();
        let folders = match reload {
            Reload::Notice(message) => {
                let event = HostEvent::Notice { message };
                let _ = self.events.send(event.clone());
                return vec![event];
            }
            Reload::Folders(folders) => folders,
            Reload::All => {
                let mut all: Vec<String> = old.folders().map(str::to_owned).collect();
                all.extend(crate::loader::plugin_folders(root).unwrap_or_default());
                all.sort();
                all.dedup();
                all
            }
        };
        let changes = folders.iter().map(|f| {
            let result = crate::loader::is_plugin_folder(root, f)
                .then(|| crate::loader::load_folder(&root.join(f)));
            (f.clone(), result)
        });
        let new = self.set_catalog(old.with_folders(changes.collect::<Vec<_>>()));
        let events = diff(&old, &new, &folders);
        for e in &events {
            let _ = self.events.send(e.clone());
        }
        events
    }

    async fn call(
        &self,
        catalog: &Catalog,
        tool_name: &str,
        input: Value,
        options: CallOptions,
    ) -> Result<ToolOutcome, CallError> {
        let Some(tool_ref) = catalog.tool(tool_name) else {
            return Err(CallError::NotFound {
                tool: tool_name.to_owned(),
                hint: catalog.nearest_tool(tool_name).map(str::to_owned),
            });
        };
        check_input(tool_ref, &input)?;
        let plugin = &tool_ref.plugin;

        let user_cancel = options.cancel.unwrap_or_default();
        let cancelled = || CallError::Cancelled {
            tool: tool_name.to_owned(),
        };
        let _permit = tokio::select! {
            p = self.permits.acquire() => p.expect("the semaphore is never closed"),
            _ = user_cancel.cancelled() => return Err(cancelled()),
            _ = self.shutdown.cancelled() => return Err(cancelled()),
        };

        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let dirs = CallDirs::create(&self.config.state_dir, plugin, call_id).map_err(|e| {
            CallError::Failed {
                tool: tool_name.to_owned(),
                reason: format!("cannot prepare the plugin's data folder: {e}"),
                stderr_tail: String::new(),
            }
        })?;
        let env = plugin_env(plugin, &dirs.data, &dirs.tmp, self.config.inherit_env);
        let request = serde_json::to_vec(&Request {
            tool: tool_name,
            input: &input,
            context: Context {
                plugin_dir: &plugin.dir,
                data_dir: &dirs.data,
                invocation: &options.invocation,
            },
        })
        .expect("a request serializes");

        let mut limits = self.config.limits;
        limits.timeout = self
            .config
            .timeout_override
            .or(tool_ref.tool().spec.timeout_secs.map(Duration::from_secs))
            .unwrap_or(limits.timeout);
        let job = Job {
            program: &plugin.entrypoint,
            cwd: &plugin.dir,
            env: &env,
            stdin: &request,
            limits,
        };
        let no_progress = |_: Progress| {};
        let on_progress: &(dyn Fn(Progress) + Send + Sync) = match &options.on_progress {
            Some(f) => f.as_ref(),
            None => &no_progress,
        };
        let stop = async {
            tokio::select! {
                _ = user_cancel.cancelled() => {}
                _ = self.shutdown.cancelled() => {}
            }
        };
        let result = executor::run(job, stop, on_progress).await;
        dirs.remove();
        finish(tool_ref, result, limits, &dirs.data)
    }
}

/// The per-call folders: the plugin's persistent data folder and a private temp folder.
struct CallDirs {
    data: PathBuf,
    tmp: PathBuf,
}

impl CallDirs {
    fn create(state_dir: &Path, plugin: &Plugin, call_id: u64) -> std::io::Result<CallDirs> {
        let data = state_dir.join("data").join(plugin.name());
        std::fs::create_dir_all(&data)?;
        let tmp = state_dir.join("tmp").join(format!(
            "{}-{}-{call_id}",
            plugin.name(),
            std::process::id()
        ));
        std::fs::create_dir_all(&tmp)?;
        Ok(CallDirs {
            data: data.canonicalize()?,
            tmp,
        })
    }

    fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

fn check_input(tool_ref: &ToolRef, input: &Value) -> Result<(), CallError> {
    let violations: Vec<String> = tool_ref
        .tool()
        .input
        .iter_errors(input)
        .map(|e| {
            let at = e.instance_path().as_str();
            format!("{}: {}", if at.is_empty() { "/" } else { at }, e.masked())
        })
        .collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(CallError::InvalidArgs {
            tool: tool_ref.tool().spec.name.clone(),
            violations,
        })
    }
}

fn finish(
    tool_ref: &ToolRef,
    result: Result<Finished, RunError>,
    limits: Limits,
    data_dir: &Path,
) -> Result<ToolOutcome, CallError> {
    let tool = tool_ref.tool().spec.name.clone();
    match result {
        Ok(finished) => interpret(tool_ref, finished, data_dir),
        Err(RunError::Timeout { stderr }) => Err(CallError::Timeout {
            tool,
            after: limits.timeout,
            stderr_tail: stderr,
        }),
        Err(RunError::Cancelled) => Err(CallError::Cancelled { tool }),
        Err(RunError::OutputTooLarge) => Err(CallError::OutputTooLarge {
            tool,
            limit: limits.max_stdout,
        }),
        Err(RunError::Spawn(e)) => Err(CallError::Failed {
            tool,
            reason: crate::outcome::explain_spawn_error(&tool_ref.plugin, &e),
            stderr_tail: String::new(),
        }),
    }
}

/// A callable tool as front ends show it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub plugin: String,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl ToolInfo {
    pub fn new(t: &ToolRef) -> ToolInfo {
        let spec = &t.tool().spec;
        ToolInfo {
            name: spec.name.clone(),
            description: spec.description.clone(),
            plugin: t.plugin.name().to_owned(),
            input_schema: Value::Object(spec.input_schema.clone()),
            output_schema: spec.output_schema.clone().map(Value::Object),
        }
    }
}
