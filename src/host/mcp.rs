//! MCP servers run as plugins, on the host's side: a call goes to one of the
//! server's workers; every tool list the server gives updates the catalog and
//! the cache in the state folder; approving the server pins its tools.

use std::sync::Arc;

use serde_json::Value;

use super::Inner;
use super::approve::blocking;
use super::call::{Failure, Prepared};
use super::diff::diff;
use crate::approval::ApproveError;
use crate::approval::{ApprovalState, ApprovalView, pins};
use crate::error::{CallError, Refusal};
use crate::events::{HostEvent, Notice};
use crate::plugins::catalog::{Plugin, ToolRef};
use crate::plugins::mcp_tools::{self, ListedTool};
use crate::run::executor::{Finished, Progress, RunError};
use crate::run::mcp::OnTools;

impl Inner {
    /// A call of an MCP server's tool: a turn on one of its workers (started,
    /// confined and listed when none is idle), then `tools/call`.
    pub(super) async fn run_on_mcp(
        &self,
        call: &Prepared<'_>,
        tool_ref: &ToolRef,
        input: &Value,
        stop: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
        worker: &mut Option<u32>,
    ) -> Result<Finished, Failure> {
        tokio::pin!(stop);
        let pool = self.pool_for(call.plugin).await;
        let mut lease = tokio::select! {
            lease = pool.lease() => lease,
            _ = &mut stop => return Err(Failure::Run(RunError::Cancelled)),
        };
        let _permit = tokio::select! {
            p = self.permits.acquire() => p.expect("the semaphore is never closed"),
            _ = &mut stop => return Err(Failure::Run(RunError::Cancelled)),
        };
        if !lease.has_worker() {
            let spec = self
                .worker_spec(call.plugin, &call.data, false)
                .map_err(|e| match e {
                    Ok(io) => Failure::Run(RunError::Spawn(io)),
                    Err(refused) => Failure::Refused(refused),
                })?;
            let listed = lease
                .start_mcp(spec, &call.limits, self.on_tools(call.plugin))
                .await
                .map_err(Failure::Run)?;
            self.apply_listing(call.plugin, &listed);
            // The server just listed its tools: this one may differ now.
            self.check_listed(call.plugin, &tool_ref.tool().spec.name)
                .await
                .map_err(Failure::Refused)?;
        }
        *worker = lease.pid();
        let tool = tool_ref.tool();
        let remote = tool.remote_name.as_deref().unwrap_or(&tool.spec.name);
        let arguments = input.as_object().cloned().unwrap_or_default();
        lease
            .call_mcp(remote, arguments, &call.limits, stop, on_progress)
            .await
            .map_err(Failure::Run)
    }

    /// Refuses a tool whose freshly listed definition is not the approved one.
    async fn check_listed(&self, plugin: &Plugin, tool: &str) -> Result<(), CallError> {
        let catalog = self.catalog.read().expect("catalog lock").clone();
        let Some(current) = catalog.plugin(plugin.name()).cloned() else {
            return Ok(());
        };
        if !current.tools.iter().any(|t| t.spec.name == tool) {
            return Err(CallError::Failed {
                tool: tool.to_owned(),
                reason: format!(
                    "the MCP server of plugin \"{}\" no longer offers this tool",
                    plugin.name()
                ),
                denials: Vec::new(),
                exit_code: None,
                stderr_tail: String::new(),
                cause: None,
            });
        }
        let state = self
            .approval_state_of(&current, Some(tool))
            .await
            .map_err(|e| CallError::NotAllowed {
                refusal: Refusal::ApprovalsUnreadable(e),
            })?;
        match state.withheld(tool) {
            None => Ok(()),
            Some(change) => Err(CallError::NotAllowed {
                refusal: Refusal::ToolChanged {
                    plugin: plugin.name().to_owned(),
                    tool: tool.to_owned(),
                    change,
                },
            }),
        }
    }

    /// What a worker calls with each later tool list of its server.
    fn on_tools(&self, plugin: &Arc<Plugin>) -> OnTools {
        let (me, plugin) = (self.me.clone(), plugin.clone());
        Arc::new(move |listed: Vec<ListedTool>| {
            if let Some(inner) = me.upgrade() {
                inner.apply_listing(&plugin, &listed);
            }
        })
    }

    /// Takes a server's tool list: into the cache, then into the catalog if
    /// the plugin was not reloaded meanwhile, with events for what changed
    /// and for each tool withheld until approved again.
    pub(super) fn apply_listing(&self, plugin: &Plugin, listed: &[ListedTool]) {
        let path = mcp_tools::cache_path(&self.config.state_dir, plugin.name());
        if let Err(e) = mcp_tools::write_cache(&path, listed) {
            self.bus
                .publish(HostEvent::Notice(Notice::ToolCacheUnwritable {
                    plugin: plugin.name().to_owned(),
                    path,
                    error: e.to_string(),
                }));
        }
        let _one_at_a_time = self.update.lock().expect("update lock");
        let old = self.catalog.read().expect("catalog lock").clone();
        let Some(current) = old.plugin(plugin.name()) else {
            return;
        };
        if current.generation != plugin.generation {
            return;
        }
        let (tools, notes) = mcp_tools::tools_of(current, listed);
        let updated = Arc::new(current.with_tools(tools, notes));
        let name = plugin.name().to_owned();
        let new = self.set_catalog(old.with_folders([(name.clone(), Some(Ok(updated.clone())))]));
        for event in diff(&old, &new, std::slice::from_ref(&name)) {
            self.bus.publish(event);
        }
        let view = ApprovalView::new(new, self.approvals.current());
        if let Ok(ApprovalState::ToolsChanged { tools }) = view.state(&updated) {
            for w in tools {
                self.bus.publish(HostEvent::ToolWithheld {
                    plugin: name.clone(),
                    tool: w.tool,
                    change: w.change,
                });
            }
        }
    }

    /// Pins an approved MCP server's tools. `seen` is the state the user
    /// approved: when it showed changed tools, the list it showed (`plugin`'s,
    /// listed by the server just before the question) is pinned; otherwise
    /// the server is started now and what it lists is pinned.
    pub(super) async fn pin_tools(
        &self,
        plugin: &Arc<Plugin>,
        seen: &ApprovalState,
    ) -> Result<(), ApproveError> {
        let plugin = match seen {
            ApprovalState::ToolsChanged { .. } => plugin.clone(),
            _ => self
                .list_now(plugin)
                .await
                .map_err(|reason| ApproveError::ServerFailed {
                    plugin: plugin.name().to_owned(),
                    reason,
                })?,
        };
        let pins = pins::pin_all(plugin.tools.iter().map(|t| &t.spec));
        let (store, name) = (self.approvals.clone(), plugin.name().to_owned());
        blocking(move || store.set_tools(&name, pins)).await?;
        Ok(())
    }

    /// What the server of `plugin` offers now: an idle server is asked for
    /// its tools again, else one is started (and lists them). Never the cache.
    /// Returns the plugin as it is listed now.
    pub(super) async fn list_now(&self, plugin: &Arc<Plugin>) -> Result<Arc<Plugin>, String> {
        let data = super::dirs::data_dir(&self.config.state_dir, plugin)
            .map_err(|e| format!("cannot prepare its data folder: {e}"))?;
        let pool = self.pool_for(plugin).await;
        let mut lease = pool.lease().await;
        let mut limits = self.config.limits;
        limits.timeout = self.config.timeout_override.unwrap_or(limits.timeout);
        let listed = if lease.has_worker() {
            lease.list_mcp(limits.timeout).await?
        } else {
            let spec = self
                .worker_spec(plugin, &data, false)
                .map_err(|e| match e {
                    Ok(io) => io.to_string(),
                    Err(refused) => refused.to_string(),
                })?;
            lease
                .start_mcp(spec, &limits, self.on_tools(plugin))
                .await
                .map_err(|e| start_failure(&e))?
        };
        self.apply_listing(plugin, &listed);
        lease.give_back();
        let catalog = self.catalog.read().expect("catalog lock").clone();
        Ok(catalog.plugin(plugin.name()).unwrap_or(plugin).clone())
    }
}

/// A start failure in one sentence (the stderr tail included).
fn start_failure(e: &RunError) -> String {
    match e {
        RunError::Spawn(e) => format!("it could not start: {e}"),
        RunError::Died { detail, stderr, .. } => match crate::error::last_chars(stderr.trim(), 500)
        {
            "" => detail.clone(),
            tail => format!("{detail}; stderr ends with: {tail}"),
        },
        RunError::Backoff(message) => message.clone(),
        other => format!("{other:?}"),
    }
}
