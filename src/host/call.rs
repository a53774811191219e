//! The call pipeline, in order: find the tool, check the input, apply the
//! policy, check the approval, prepare the folders and the request, run the
//! plugin (a process per call, or a persistent worker), interpret its answer,
//! and tell the observers.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::dirs::data_dir;
use super::launch::{Launch, Role};
use super::{CallOptions, Inner};
use crate::error::{CallError, RejectedTool};
use crate::observe::phases::{Phases, Start as StartKind, Step};
use crate::observe::trace::CallTrace;
use crate::observe::{CallInfo, CallSummary};
use crate::plugins::catalog::{Catalog, Plugin, ToolRef};
use crate::plugins::manifest::Protocol;
use crate::protocol::{Context, Request, TraceContext};
use crate::run::executor::{self, Finished, Limits, Process, Progress, RunError};
use crate::run::outcome::{ToolOutcome, explain_spawn_error, interpret};
use crate::run::worker::{TmpFolder, WorkerSpec};

/// What one call needs once the checks have passed.
pub(super) struct Prepared<'a> {
    pub(super) plugin: &'a std::sync::Arc<Plugin>,
    pub(super) data: std::path::PathBuf,
    pub(super) request: Vec<u8>,
    pub(super) limits: Limits,
    pub(super) info: &'a CallInfo,
    /// The W3C trace context the plugin continues.
    pub(super) trace: Option<&'a TraceContext>,
}

impl Inner {
    pub(super) async fn call(
        &self,
        catalog: &Catalog,
        tool: &str,
        input: Value,
        options: CallOptions,
    ) -> Result<ToolOutcome, CallError> {
        let mut phases = Phases::new();
        // A tool of an approved server never listed here: listed first.
        let mut unlisted = None;
        let relisted = match catalog.tool(tool) {
            Some(_) => None,
            None => match self.list_server_for(catalog, tool).await {
                Some(Ok(listed)) => Some(listed),
                Some(Err(failed)) => {
                    unlisted = Some(failed);
                    None
                }
                None => None,
            },
        };
        let catalog = relisted.as_deref().unwrap_or(catalog);
        let tool_ref = catalog.tool(tool);
        let mut info = CallInfo {
            call_id: self.next_call.fetch_add(1, Ordering::Relaxed),
            tool: tool.to_owned(),
            plugin: tool_ref
                .map(|t| t.plugin.name().to_owned())
                .unwrap_or_default(),
            invocation: options.invocation.clone(),
            started_at: SystemTime::now(),
            input: if self.config.record_inputs {
                input.clone()
            } else {
                Value::Null
            },
            trace: None,
        };
        let trace = CallTrace::start(
            self.config.tracing.as_ref(),
            &info,
            tool_ref.map(|t| &*t.plugin),
        );
        info.trace = trace.context().cloned();
        self.bus.call_started(&info);
        self.keep_a_timer_pending();
        let result = self
            .run_call(
                catalog,
                tool,
                &input,
                options,
                unlisted,
                &info,
                info.trace.as_ref(),
                &mut phases,
            )
            .await;
        let sandbox = tool_ref.and_then(|t| self.sandbox_level(&t.plugin));
        let mut summary = CallSummary::of(&result, &phases, sandbox);
        if let Some(t) = tool_ref {
            summary.refused = self
                .refused_since(&t.plugin, phases.started)
                .iter()
                .map(ToString::to_string)
                .collect();
            summary.brokered = self.placed_since(&t.plugin, phases.started);
        }
        trace.end(
            &phases,
            &summary,
            result.as_ref().err().map(ToString::to_string),
        );
        self.bus.call_ended(&info, &result, &summary);
        result
    }

    #[expect(clippy::too_many_arguments, reason = "one call's whole context")]
    async fn run_call(
        &self,
        catalog: &Catalog,
        tool: &str,
        input: &Value,
        options: CallOptions,
        unlisted: Option<(String, String)>,
        info: &CallInfo,
        trace: Option<&TraceContext>,
        phases: &mut Phases,
    ) -> Result<ToolOutcome, CallError> {
        let since = Instant::now();
        let Some(tool_ref) = catalog.tool(tool) else {
            if let Some((plugin, why)) = unlisted {
                return Err(CallError::Failed {
                    tool: tool.to_owned(),
                    reason: format!(
                        "plugin \"{plugin}\" is an approved MCP server whose tools are not known here yet, and listing them failed: {why}"
                    ),
                    denials: Vec::new(),
                    exit_code: None,
                    stderr_tail: String::new(),
                    cause: None,
                });
            }
            if let Some(plugin) = unlisted_server_for(catalog, tool) {
                return Err(CallError::NotAllowed {
                    refusal: crate::error::Refusal::ServerNotApproved {
                        plugin,
                        tool: tool.to_owned(),
                    },
                });
            }
            return Err(CallError::NotFound {
                tool: tool.to_owned(),
                hint: catalog.nearest_tool(tool).map(str::to_owned),
                rejected: catalog.rejected_tool(tool).map(|r| RejectedTool {
                    plugin: r.folder.clone(),
                    reason: r
                        .errors
                        .first()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                }),
            });
        };
        phases.bytes_in = check_size(tool, input, self.config.limits.max_input)?;
        check_input(tool_ref, input)?;
        let plugin = &tool_ref.plugin;
        self.config
            .policy
            .admit(
                &self.policy_state,
                plugin.name(),
                options.invocation.session_id.as_deref(),
            )
            .map_err(|refusal| CallError::NotAllowed { refusal })?;
        self.ensure_approved(plugin, tool, options.approver.as_deref(), phases)
            .await?;

        let data = data_dir(&self.config.state_dir, plugin).map_err(|e| CallError::Failed {
            tool: tool.to_owned(),
            reason: e.to_string(),
            denials: Vec::new(),
            exit_code: None,
            stderr_tail: String::new(),
            cause: Some(std::sync::Arc::new(e)),
        })?;
        let request = serde_json::to_vec(&Request {
            tool,
            input,
            context: Context {
                plugin_dir: &plugin.dir,
                data_dir: &data,
                invocation: &options.invocation,
                trace,
            },
        })
        .expect("a request serializes");
        let mut limits = self.config.limits;
        limits.timeout = self
            .config
            .timeout_override
            .or(tool_ref.tool().spec.timeout_secs.map(Duration::from_secs))
            .unwrap_or(limits.timeout);
        let call = Prepared {
            plugin,
            data,
            request,
            limits,
            info,
            trace,
        };

        let client = options.client.clone();
        let user_cancel = options.cancel.unwrap_or_default();
        let stop = async {
            tokio::select! {
                _ = user_cancel.cancelled() => {}
                _ = self.shutdown.cancelled() => {}
            }
        };
        let user_progress = options.on_progress.clone();
        let observe_progress = self.bus.wants_progress();
        let on_progress = |p: Progress| {
            if observe_progress {
                self.bus.call_progress(info, &p);
            }
            if let Some(f) = &user_progress {
                f(p);
            }
        };
        let reply = match (plugin.manifest.protocol, plugin.manifest.worker_settings()) {
            (Protocol::Mcp, _) => {
                self.run_on_mcp(&call, tool_ref, input, stop, &on_progress, phases, client)
                    .await
            }
            (_, None) => self.run_per_call(&call, stop, &on_progress, phases).await,
            (_, Some(_)) => self.run_on_worker(&call, stop, &on_progress, phases).await,
        };
        let mut result = finish(tool_ref, reply, &call.limits, &call.data);
        self.name_denials(plugin, tool, since, &mut result);
        result
    }

    /// Waits for `fut` unless `stop` comes first: then the call is
    /// cancelled. Every wait of a call before its plugin runs (a worker's
    /// turn, a call slot) goes through here.
    pub(super) async fn unless_stopped<T>(
        fut: impl std::future::Future<Output = T>,
        stop: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> Result<T, Failure> {
        tokio::select! {
            value = fut => Ok(value),
            _ = stop => Err(Failure::Run(RunError::Cancelled)),
        }
    }

    /// Takes one of the host's call slots for `call`, unless `stop` comes
    /// first; with it, the call is admitted: its plugin runs now.
    pub(super) async fn admit(
        &self,
        call: &Prepared<'_>,
        stop: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
        phases: &mut Phases,
    ) -> Result<tokio::sync::SemaphorePermit<'_>, Failure> {
        let permit = Self::unless_stopped(self.permits.acquire(), stop)
            .await?
            .expect("the semaphore is never closed");
        phases.admitted = Some(Instant::now());
        self.bus.call_admitted(call.info);
        Ok(permit)
    }

    /// The per-call protocol: a process for this call alone.
    async fn run_per_call(
        &self,
        call: &Prepared<'_>,
        stop: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
        phases: &mut Phases,
    ) -> Result<Finished, Failure> {
        tokio::pin!(stop);
        let _permit = self.admit(call, &mut stop, phases).await?;
        let tmp = self
            .temp_pool
            .take(&self.config.state_dir, call.plugin.name())
            .map_err(|e| {
                Failure::Run(RunError::Spawn(std::io::Error::new(
                    e.kind(),
                    format!("cannot prepare the call's temp folder: {e}"),
                )))
            })?;
        let role = Role::Call {
            plugin: call.plugin,
            data: &call.data,
            trace: call.trace,
        };
        let launch = self.launch(role, tmp.path()).map_err(Failure::Refused)?;
        let start = Instant::now();
        let spawned = Process::spawn(launch.spawn()).await;
        phases.start = Some((StartKind::Process, Step::since(start, spawned.is_ok())));
        let process = spawned.map_err(|e| Failure::Run(RunError::Spawn(e)))?;
        executor::run_spawned(
            process,
            start,
            &call.request,
            &call.limits,
            stop,
            on_progress,
        )
        .await
        .map_err(Failure::Run)
    }

    /// A persistent plugin: the request goes to one of its workers, started
    /// (and confined) when none is idle.
    async fn run_on_worker(
        &self,
        call: &Prepared<'_>,
        stop: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
        phases: &mut Phases,
    ) -> Result<Finished, Failure> {
        tokio::pin!(stop);
        let pool = self.pool_for(call.plugin).await;
        // A turn on a worker first, then a slot: calls queued behind a busy
        // worker do not hold slots that other plugins could use.
        let mut lease = Self::unless_stopped(pool.lease(), &mut stop).await?;
        let _permit = self.admit(call, &mut stop, phases).await?;
        if !lease.has_worker() {
            let spec = self
                .worker_spec(call.plugin, &call.data, true)
                .map_err(|e| match e {
                    Ok(io) => Failure::Run(RunError::Spawn(io)),
                    Err(refused) => Failure::Refused(refused),
                })?;
            let start = Instant::now();
            let started = lease.start(spec).await;
            phases.start = Some((StartKind::Worker, Step::since(start, started.is_ok())));
            started.map_err(Failure::Run)?;
        }
        phases.worker = lease.pid();
        let mut line = Vec::with_capacity(call.request.len() + 1);
        line.extend_from_slice(&call.request);
        line.push(b'\n');
        lease
            .call(&line, &call.limits, stop, on_progress)
            .await
            .map_err(Failure::Run)
    }

    /// The environment, sandbox and temp folder of a new worker;
    /// `PLUGHOST_PERSISTENT=1` for the line protocol.
    pub(super) fn worker_spec(
        &self,
        plugin: &Plugin,
        data: &Path,
        lines: bool,
    ) -> Result<WorkerSpec, Result<std::io::Error, CallError>> {
        let tmp = self
            .temp_pool
            .fresh(&self.config.state_dir, plugin.name())
            .map_err(|e| {
                Ok(std::io::Error::new(
                    e.kind(),
                    format!("cannot prepare the worker's temp folder: {e}"),
                ))
            })?;
        let tmp = TmpFolder::new(tmp);
        let role = Role::Worker {
            plugin,
            data,
            lines,
        };
        let Launch {
            program,
            args,
            cwd,
            env,
            sandbox,
        } = self.launch(role, tmp.path()).map_err(Err)?;
        Ok(WorkerSpec {
            program,
            args,
            cwd,
            env,
            sandbox,
            tmp,
        })
    }
}

impl Inner {
    /// Keeps one timer pending in the caller's runtime while the host lives.
    ///
    /// Every call sets a deadline, and the runtime wakes its driver thread
    /// (a system call and a cross-CPU wake-up) whenever a new timer is due
    /// before every other: with no other timer, on each call. A timer always
    /// due within a second makes a call's deadline (usually 30 s) a later
    /// one, which needs no wake-up. It costs one wake-up a second.
    fn keep_a_timer_pending(&self) {
        if self.timer_kept.swap(true, Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let stop = self.shutdown.clone();
        runtime.spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                    _ = stop.cancelled() => break,
                }
            }
        });
    }
}

/// Why a run produced no answer: refused before starting, or the run failed.
pub(super) enum Failure {
    Refused(CallError),
    Run(RunError),
}

/// The MCP server that may offer `tool` once approved: one whose tools are
/// not known yet (never listed), whose `tool_prefix` starts the name, or one
/// without a prefix when no prefix matches.
pub(super) fn unlisted_server_for(catalog: &Catalog, tool: &str) -> Option<String> {
    let unlisted = || {
        catalog
            .plugins()
            .filter(|p| p.manifest.protocol == Protocol::Mcp && p.listing.is_none())
    };
    let by_prefix = unlisted().find(|p| {
        p.manifest
            .tool_prefix
            .as_deref()
            .is_some_and(|prefix| tool.starts_with(prefix))
    });
    by_prefix
        .or_else(|| unlisted().find(|p| p.manifest.tool_prefix.is_none()))
        .map(|p| p.name().to_owned())
}

/// Refuses an input larger than `limit` bytes of compact JSON, before its
/// schema is even checked; returns its size.
fn check_size(tool: &str, input: &Value, limit: usize) -> Result<usize, CallError> {
    /// Counts bytes, stopping past the limit so a huge input costs little.
    struct Count {
        n: usize,
        limit: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.n += buf.len();
            if self.n > self.limit {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { n: 0, limit };
    match serde_json::to_writer(&mut count, input) {
        Ok(()) => Ok(count.n),
        Err(_) => Err(CallError::InvalidArgs {
            tool: tool.to_owned(),
            violations: vec![format!(
                "the input is larger than the limit of {limit} bytes (of compact JSON); send less, or raise the host's input limit"
            )],
        }),
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
    reply: Result<Finished, Failure>,
    limits: &Limits,
    data_dir: &Path,
) -> Result<ToolOutcome, CallError> {
    match reply {
        Ok(finished) => interpret(tool_ref, finished, data_dir),
        Err(failure) => Err(failure_error(
            &tool_ref.tool().spec.name,
            &tool_ref.plugin,
            failure,
            limits,
        )),
    }
}

/// The error of a run that produced no answer, for the tool (or resource,
/// prompt…) `what` of `plugin`.
pub(super) fn failure_error(
    what: &str,
    plugin: &Plugin,
    failure: Failure,
    limits: &Limits,
) -> CallError {
    let tool = what.to_owned();
    let failed = |reason: String, exit_code, stderr_tail| CallError::Failed {
        tool: tool.clone(),
        reason,
        denials: Vec::new(),
        exit_code,
        stderr_tail,
        cause: None,
    };
    match failure {
        Failure::Refused(e) => e,
        Failure::Run(RunError::Timeout { stderr }) => CallError::Timeout {
            tool,
            after: limits.timeout,
            stderr_tail: stderr,
        },
        Failure::Run(RunError::Cancelled) => CallError::Cancelled { tool },
        Failure::Run(RunError::OutputTooLarge) => CallError::OutputTooLarge {
            tool,
            limit: limits.max_stdout,
        },
        Failure::Run(RunError::Spawn(e)) => CallError::Failed {
            tool: tool.clone(),
            reason: explain_spawn_error(plugin, &e),
            denials: Vec::new(),
            exit_code: None,
            stderr_tail: String::new(),
            cause: Some(std::sync::Arc::new(e)),
        },
        Failure::Run(RunError::Died {
            detail,
            exit_code,
            stderr,
        }) => failed(detail, exit_code, stderr),
        Failure::Run(RunError::Backoff(message)) => failed(message, None, String::new()),
        // JSON-RPC's "invalid params": the server refused the input.
        Failure::Run(RunError::ServerError {
            code: -32602,
            message,
            ..
        }) => CallError::InvalidArgs {
            tool,
            violations: vec![format!("the MCP server refused the input: {message}")],
        },
        // 2026-07-28's "missing required client capability": the server
        // needs what the caller did not declare.
        Failure::Run(RunError::ServerError {
            code: -32021,
            message,
            data,
        }) => CallError::Failed {
            tool,
            reason: format!(
                "the MCP server needs a client capability the caller of this tool did not declare ({message}); call it from an MCP client that supports it"
            ),
            denials: Vec::new(),
            exit_code: None,
            stderr_tail: String::new(),
            cause: Some(std::sync::Arc::new(crate::client::MissingCapability {
                message,
                data,
            })),
        },
        Failure::Run(RunError::ServerError { code, message, .. }) => failed(
            format!("the MCP server answered with error {code}: {message}"),
            None,
            String::new(),
        ),
    }
}
