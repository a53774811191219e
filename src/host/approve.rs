//! Approving and revoking plugins: one flow for a call that needs approval,
//! an approval asked for on its own, MCP elicitation and an embedder's own
//! dialog.

use std::sync::Arc;

use super::renewal::Asking;
use super::{Inner, PluginHost, ToolInfo};
use crate::approval::{
    self, Approval, ApprovalError, ApprovalState, ApprovalView, ApproveError, Approver, BoxFuture,
    Tier,
};
use crate::events::{HostEvent, WorkerStop};
use crate::plugins::catalog::Plugin;
use crate::plugins::manifest::Manifest;

/// What the approval flow decided.
pub(super) enum Asked {
    Done(Approval),
    /// Nobody to ask: the state that needs approval.
    NobodyToAsk(ApprovalState),
}

impl PluginHost {
    /// The approval state of a loaded plugin, as listings show it: an MCP
    /// server whose tools differ from the pinned ones is
    /// [`ApprovalState::ToolsChanged`]. `None` when no plugin of that name is
    /// loaded; an error when the approvals file cannot be read (then nothing
    /// that needs approval runs).
    pub fn approval_state(&self, plugin: &str) -> Option<Result<ApprovalState, ApprovalError>> {
        let view = self.view();
        let p = view.catalog().plugin(plugin)?.clone();
        Some(view.state(&p))
    }

    /// Grants a loaded plugin what its manifest asks for now, without asking
    /// anyone (`plughost approve --yes`), and tells observers. An MCP server is
    /// started to list its tools, which are pinned with the grant.
    pub async fn approve(&self, plugin: &str) -> Result<Approval, ApproveError> {
        self.approve_with(plugin, &Yes).await
    }

    /// Asks `approver` whether a loaded plugin may get what its manifest asks
    /// for now, and saves a yes. The same flow a call goes through: one
    /// question at a time, never asked when nothing needs approval.
    pub async fn approve_with(
        &self,
        plugin: &str,
        approver: &dyn Approver,
    ) -> Result<Approval, ApproveError> {
        let mut p = self.loaded(plugin)?;
        // An approved MCP server may run: the question shows, and the
        // approval pins, what it offers now, never a cached list.
        if p.manifest.protocol == crate::plugins::manifest::Protocol::Mcp
            && matches!(
                self.inner.approval_state_of(&p, None).await,
                Ok(ApprovalState::Approved | ApprovalState::ToolsChanged { .. })
            )
        {
            p = self
                .inner
                .list_now(&p, Asking::User)
                .await
                .map_err(|reason| ApproveError::ServerFailed {
                    plugin: plugin.to_owned(),
                    reason,
                })?;
        }
        match self.inner.ask_approval(&p, None, Some(approver)).await? {
            Asked::Done(approval) => Ok(approval),
            Asked::NobodyToAsk(_) => unreachable!("an approver was given"),
        }
    }

    /// Starts an MCP server run as a plugin (or asks the running one) and
    /// lists what it offers now, replacing the cached listing; returns its
    /// tools as offered. Approved or not: before its approval a server may
    /// be started this way only when its grants alone would need no approval
    /// (`approval::may_list_before_approval`: reading files that are neither
    /// secrets nor `/proc` or `/dev`, and no variables), so it runs in a
    /// sandbox that lets it read and nothing else (`plughost add` shows the
    /// tools before asking). For other plugins, the tools of their manifest.
    pub async fn list_server(&self, plugin: &str) -> Result<Vec<ToolInfo>, ApproveError> {
        let mut p = self.loaded(plugin)?;
        if p.manifest.protocol == crate::plugins::manifest::Protocol::Mcp {
            let before_approval = approval::may_list_before_approval(&p.manifest);
            let approved = matches!(
                self.inner.approval_state_of(&p, None).await?,
                ApprovalState::Approved | ApprovalState::ToolsChanged { .. }
            );
            if !before_approval && !approved {
                return Err(ApproveError::NeedsApprovalFirst {
                    plugin: plugin.to_owned(),
                });
            }
            p = self
                .inner
                .list_now(&p, Asking::User)
                .await
                .map_err(|reason| ApproveError::ServerFailed {
                    plugin: plugin.to_owned(),
                    reason,
                })?;
        }
        Ok(p.tools.iter().map(|t| ToolInfo::of(&p, &t.spec)).collect())
    }

    /// Withdraws a plugin's approval; `Ok(false)` when it had none. Its
    /// workers are killed before this returns. A plugin that is neither loaded
    /// nor approved is [`ApproveError::NotFound`].
    pub fn revoke(&self, plugin: &str) -> Result<bool, ApproveError> {
        let revoked = self.inner.approvals.revoke(plugin)?;
        if revoked {
            self.inner.workers.kill(plugin, WorkerStop::ApprovalRevoked);
            self.inner.bus.publish(HostEvent::ApprovalRevoked {
                plugin: plugin.to_owned(),
            });
        } else if self.catalog().plugin(plugin).is_none() {
            return Err(self.not_found(plugin));
        }
        Ok(revoked)
    }

    pub(super) fn loaded(&self, plugin: &str) -> Result<Arc<Plugin>, ApproveError> {
        let catalog = self.catalog();
        if let Some(p) = catalog.plugin(plugin) {
            return Ok(p.clone());
        }
        Err(match catalog.rejected_folder(plugin) {
            Some(r) => ApproveError::Rejected {
                plugin: plugin.to_owned(),
                reason: r.to_string(),
            },
            None => self.not_found(plugin),
        })
    }

    fn not_found(&self, plugin: &str) -> ApproveError {
        let catalog = self.catalog();
        ApproveError::NotFound {
            plugin: plugin.to_owned(),
            dir: self.plugins_dir().to_owned(),
            nearest: crate::plugins::catalog::nearest(plugin, catalog.folders()).map(str::to_owned),
        }
    }
}

/// The approver of `approve --yes`.
struct Yes;

impl Approver for Yes {
    fn approve<'a>(&'a self, _: &'a Manifest, _: &'a ApprovalState) -> BoxFuture<'a, bool> {
        Box::pin(async { true })
    }
}

impl Inner {
    /// The approval flow: nothing to do when the plugin needs no approval or
    /// has it (for a call of `tool`, an MCP server's other changed tools do
    /// not matter); otherwise asks `approver` (one question at a time, the
    /// file read again after waiting for the turn) and saves a yes. File I/O
    /// runs off the runtime's threads.
    pub(super) async fn ask_approval(
        &self,
        plugin: &Arc<Plugin>,
        tool: Option<&str>,
        approver: Option<&dyn Approver>,
    ) -> Result<Asked, ApproveError> {
        if approval::tier(&plugin.manifest) == Tier::Automatic {
            return Ok(Asked::Done(Approval::NotNeeded));
        }
        // A call checks only its own tool's pin; the question shows them all.
        let state = self.approval_state_of(plugin, tool).await?;
        if !state.wants_approval(tool) {
            return Ok(Asked::Done(Approval::AlreadyApproved));
        }
        let state = self.approval_state_of(plugin, None).await?;
        let Some(approver) = approver.or(self.config.approver.as_deref()) else {
            return Ok(Asked::NobodyToAsk(state));
        };
        // Nobody is asked what could not be saved.
        if let Some(refused) = self.approvals.read_only() {
            return Err(refused.into());
        }
        let _one_question = self.asking.lock().await;
        // Another question may have approved it while this one waited.
        let state = self.approval_state_of(plugin, None).await?;
        if !state.wants_approval(tool) {
            return Ok(Asked::Done(Approval::AlreadyApproved));
        }
        self.bus.publish(HostEvent::ApprovalAsked {
            plugin: plugin.name().to_owned(),
        });
        if !approver.approve(&plugin.manifest, &state).await {
            self.bus.publish(HostEvent::ApprovalDeclined {
                plugin: plugin.name().to_owned(),
            });
            return Ok(Asked::Done(Approval::Declined));
        }
        self.grant(plugin, &state).await?;
        Ok(Asked::Done(Approval::Approved))
    }

    /// Saves what the user approved. For an MCP server, its tools are pinned
    /// as the user saw them: the tools listed when the server's changes were
    /// shown, or, on a first approval, the tools it lists when it is started
    /// now (a server is never started before its first approval).
    async fn grant(&self, plugin: &Arc<Plugin>, seen: &ApprovalState) -> Result<(), ApproveError> {
        let (store, granted) = (self.approvals.clone(), plugin.clone());
        blocking(move || store.grant(&granted.manifest)).await?;
        if plugin.manifest.protocol == crate::plugins::manifest::Protocol::Mcp {
            self.pin_tools(plugin, seen).await?;
        }
        self.bus.publish(HostEvent::ApprovalGranted {
            plugin: plugin.name().to_owned(),
        });
        Ok(())
    }

    /// The plugin's approval state, from the approval view of now; an MCP
    /// server's is measured against the tools it offers now (only `tool`'s
    /// pin, when given).
    pub(super) async fn approval_state_of(
        &self,
        plugin: &Arc<Plugin>,
        tool: Option<&str>,
    ) -> Result<ApprovalState, ApprovalError> {
        self.current_view().await.state_for(plugin, tool)
    }

    /// The approval view of the current catalog and approvals. The file is
    /// read on a blocking thread, unless the one last read is unchanged (one
    /// `lstat`, cheap enough for the calling thread).
    pub(super) async fn current_view(&self) -> ApprovalView {
        let approvals = match self.approvals.unchanged() {
            Some(approvals) => Ok(approvals),
            None => {
                let store = self.approvals.clone();
                blocking(move || store.current()).await
            }
        };
        ApprovalView::new(self.ranked(&approvals), approvals)
    }
}

/// Runs `f` on a blocking thread, so file I/O and locks stay off the
/// runtime's workers.
pub(super) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f)
        .await
        .expect("an approvals task does not panic")
}
