//! The call pipeline: find the tool, check the input, apply the policy, wait
//! for a slot, prepare the folders and the request, run the plugin, interpret
//! its answer, and tell the observers.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::dirs::CallDirs;
use super::{CallOptions, Inner};
use crate::approval::{ApprovalState, Approver};
use crate::error::CallError;
use crate::host::SandboxMode;
use crate::observe::CallInfo;
use crate::plugins::catalog::{Catalog, Plugin, ToolRef};
use crate::protocol::{Context, Request};
use crate::run::env::plugin_env;
use crate::run::executor::{self, Finished, Limits, Progress, RunError, Spawn};
use crate::run::outcome::{ToolOutcome, explain_spawn_error, interpret};
use crate::run::sandbox;

impl Inner {
    pub(super) async fn call(
        &self,
        catalog: &Catalog,
        tool: &str,
        input: Value,
        options: CallOptions,
    ) -> Result<ToolOutcome, CallError> {
        let start = Instant::now();
        let info = CallInfo {
            call_id: self.next_call.fetch_add(1, Ordering::Relaxed),
            tool: tool.to_owned(),
            plugin: catalog
                .tool(tool)
                .map(|t| t.plugin.name().to_owned())
                .unwrap_or_default(),
            invocation: options.invocation.clone(),
            started_at: SystemTime::now(),
            input: if self.config.record_inputs {
                input.clone()
            } else {
                Value::Null
            },
        };
        self.observers.call_started(&info);
        let result = self.run_call(catalog, tool, &input, options, &info).await;
        self.observers.call_ended(&info, &result, start.elapsed());
        result
    }

    async fn run_call(
        &self,
        catalog: &Catalog,
        tool: &str,
        input: &Value,
        options: CallOptions,
        info: &CallInfo,
    ) -> Result<ToolOutcome, CallError> {
        let Some(tool_ref) = catalog.tool(tool) else {
            return Err(CallError::NotFound {
                tool: tool.to_owned(),
                hint: catalog.nearest_tool(tool).map(str::to_owned),
            });
        };
        check_input(tool_ref, input)?;
        let plugin = &tool_ref.plugin;
        self.config
            .policy
            .admit(
                &self.policy_state,
                plugin.name(),
                options.invocation.session_id.as_deref(),
            )
            .map_err(|message| CallError::NotAllowed { message })?;

        self.ensure_approved(plugin, options.approver.as_deref())
            .await?;

        let user_cancel = options.cancel.unwrap_or_default();
        let cancelled = || CallError::Cancelled {
            tool: tool.to_owned(),
        };
        let _permit = tokio::select! {
            p = self.permits.acquire() => p.expect("the semaphore is never closed"),
            _ = user_cancel.cancelled() => return Err(cancelled()),
            _ = self.shutdown.cancelled() => return Err(cancelled()),
        };

        let dirs =
            CallDirs::acquire(&self.config.state_dir, plugin, &self.temp_pool).map_err(|e| {
                CallError::Failed {
                    tool: tool.to_owned(),
                    reason: format!("cannot prepare the plugin's data folder: {e}"),
                    exit_code: None,
                    stderr_tail: String::new(),
                }
            })?;
        let env = plugin_env(plugin, &dirs.data, &dirs.tmp, self.config.inherit_env);
        let request = serde_json::to_vec(&Request {
            tool,
            input,
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
        let sandbox = match self.sandbox_for(plugin, &dirs, &env) {
            Ok(s) => s,
            Err(e) => {
                dirs.release(&self.temp_pool);
                return Err(e);
            }
        };
        let spawn = Spawn {
            program: &plugin.entrypoint,
            args: &[],
            cwd: &plugin.dir,
            env: &env,
            sandbox,
        };
        let user_progress = options.on_progress.clone();
        let observe_progress = self.observers.wants_progress();
        let on_progress = |p: Progress| {
            if observe_progress {
                self.observers.call_progress(info, &p);
            }
            if let Some(f) = &user_progress {
                f(p);
            }
        };
        let stop = async {
            tokio::select! {
                _ = user_cancel.cancelled() => {}
                _ = self.shutdown.cancelled() => {}
            }
        };
        let result = executor::run_once(spawn, &request, &limits, stop, &on_progress).await;
        let outcome = finish(tool_ref, result, limits, &dirs.data);
        dirs.release(&self.temp_pool);
        outcome
    }
}

impl Inner {
    /// Lets the call through when the plugin is approved (or needs no approval);
    /// otherwise asks the approver, one question at a time, and persists a yes.
    async fn ensure_approved(
        &self,
        plugin: &Plugin,
        approver: Option<&dyn Approver>,
    ) -> Result<(), CallError> {
        let manifest = &plugin.manifest;
        let refuse = |message: String| CallError::NotAllowed { message };
        let current = || {
            self.approvals
                .state(manifest)
                .map_err(|e| refuse(e.to_string()))
        };
        let state = current()?;
        if state.allows_call() {
            return Ok(());
        }
        let Some(approver) = approver.or(self.config.approver.as_deref()) else {
            return Err(refuse(self.not_approved_message(manifest, &state)));
        };
        let _one_question = self.asking.lock().await;
        // Another call may have been approved while this one waited.
        let state = current()?;
        if state.allows_call() {
            return Ok(());
        }
        if !approver.approve(manifest, &state).await {
            return Err(refuse(format!(
                "the user declined; {}",
                self.not_approved_message(manifest, &state)
            )));
        }
        self.approvals
            .grant(manifest)
            .map_err(|e| refuse(e.to_string()))?;
        self.observers.approval(plugin.name(), true);
        Ok(())
    }

    /// Prepares the child's confinement for this call according to the host's
    /// sandbox mode. The plugin is approved at this point, so what its manifest
    /// asks for is what was granted.
    fn sandbox_for(
        &self,
        plugin: &Plugin,
        dirs: &CallDirs,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Result<Option<sandbox::Prepared>, CallError> {
        if self.config.sandbox == SandboxMode::Off {
            return Ok(None);
        }
        let refuse = |message: String| CallError::NotAllowed { message };
        let prepared = sandbox::prepare(&sandbox::Policy {
            plugin_dir: &plugin.dir,
            data_dir: &dirs.data,
            tmp_dir: &dirs.tmp,
            entrypoint: &plugin.entrypoint,
            permissions: &plugin.manifest.permissions,
            env,
        })
        .map_err(|e| {
            refuse(format!(
                "plugin \"{}\": the sandbox could not be prepared: {e}",
                plugin.name()
            ))
        })?;
        let missing = &prepared.enforcement().not_enforced;
        if !missing.is_empty() {
            if self.config.sandbox == SandboxMode::Required {
                return Err(refuse(format!(
                    "plugin \"{}\": the sandbox is required but this kernel cannot enforce: {}; run without --require-sandbox to accept that",
                    plugin.name(),
                    missing.join("; ")
                )));
            }
            if !self.sandbox_warned.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "plughost: warning: this kernel cannot enforce every permission: {}",
                    missing.join("; ")
                );
            }
        }
        Ok(Some(prepared))
    }

    fn not_approved_message(
        &self,
        manifest: &crate::plugins::manifest::Manifest,
        state: &ApprovalState,
    ) -> String {
        let command = self.approve_command(&manifest.name);
        crate::approval::not_allowed_message_with(manifest, state, &command).unwrap_or_default()
    }

    /// `plughost approve NAME`, naming this host's folders when they are not the
    /// defaults, so the command copied from a message approves the right plugin.
    pub(super) fn approve_command(&self, plugin: &str) -> String {
        let (plugins, state) = (
            crate::paths::default_plugins_dir(),
            crate::paths::default_state_dir(),
        );
        let plugins =
            (self.config.plugins_dir != plugins).then_some(self.config.plugins_dir.as_path());
        let state = (self.config.state_dir != state).then_some(self.config.state_dir.as_path());
        crate::approval::approve_command_in(plugin, plugins, state)
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
            reason: explain_spawn_error(&tool_ref.plugin, &e),
            exit_code: None,
            stderr_tail: String::new(),
        }),
    }
}
