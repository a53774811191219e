//! The checks a call passes before anything runs, beyond its input: the
//! approval (asked for when an approver is at hand) and the sandbox the plugin
//! will run in.

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::Ordering;

use std::sync::Arc;

use super::approve::{Approval, ApproveError, Asked};
use super::{Inner, SandboxMode};
use crate::approval::{self, ApprovalError, Approver, Tier};
use crate::error::{CallError, Refusal};
use crate::plugins::catalog::Plugin;
use crate::plugins::events::HostEvent;
use crate::run::sandbox;

impl Inner {
    /// Lets the call through when the plugin is approved (or needs no
    /// approval); otherwise asks the approver through the approval flow. A
    /// worker started under an approval that no longer holds never serves
    /// another call.
    pub(super) async fn ensure_approved(
        &self,
        plugin: &Arc<Plugin>,
        tool: &str,
        approver: Option<&dyn Approver>,
    ) -> Result<(), CallError> {
        if approval::tier(&plugin.manifest) == Tier::Automatic {
            return Ok(());
        }
        let asked = match self.ask_approval(plugin, Some(tool), approver).await {
            Ok(asked) => asked,
            Err(ApproveError::Approvals(e)) => return Err(unreadable(e)),
            Err(e) => {
                return Err(CallError::Failed {
                    tool: tool.to_owned(),
                    reason: e.to_string(),
                    exit_code: None,
                    stderr_tail: String::new(),
                });
            }
        };
        let command = || self.approve_command(plugin.name());
        let refusal = match asked {
            Asked::Done(Approval::NotNeeded | Approval::AlreadyApproved | Approval::Approved) => {
                return Ok(());
            }
            Asked::Done(Approval::Declined) => Refusal::Declined {
                plugin: plugin.name().to_owned(),
                command: command(),
            },
            Asked::NobodyToAsk(state) => match state.withheld(tool) {
                Some(change) => {
                    // The other tools of the server go on: its workers too.
                    return Err(CallError::NotAllowed {
                        refusal: Refusal::ToolChanged {
                            plugin: plugin.name().to_owned(),
                            tool: tool.to_owned(),
                            change,
                            command: command(),
                        },
                    });
                }
                None => approval::refusal(&plugin.manifest, &state, &command())
                    .expect("a state that needs approval has a refusal"),
            },
        };
        self.workers.kill(plugin.name(), "its approval changed");
        Err(CallError::NotAllowed { refusal })
    }

    /// Prepares the child's confinement for this call according to the host's
    /// sandbox mode. The plugin is approved at this point, so what its manifest
    /// asks for is what was granted.
    pub(super) fn sandbox_for(
        &self,
        plugin: &Plugin,
        data_dir: &Path,
        tmp_dir: &Path,
        env: &[(OsString, OsString)],
    ) -> Result<Option<sandbox::Prepared>, CallError> {
        if self.config.sandbox == SandboxMode::Off {
            return Ok(None);
        }
        let refuse = |refusal| CallError::NotAllowed { refusal };
        let prepared = sandbox::prepare(&sandbox::Policy {
            plugin_dir: &plugin.dir,
            data_dir,
            tmp_dir,
            entrypoint: &plugin.entrypoint,
            permissions: &plugin.manifest.permissions,
            env,
        })
        .map_err(|e| {
            refuse(Refusal::SandboxFailed {
                plugin: plugin.name().to_owned(),
                reason: e.to_string(),
            })
        })?;
        let missing = &prepared.enforcement().not_enforced;
        if !missing.is_empty() {
            if self.config.sandbox == SandboxMode::Required {
                return Err(refuse(Refusal::SandboxUnavailable {
                    plugin: plugin.name().to_owned(),
                    missing: missing.clone(),
                }));
            }
            if !self.sandbox_warned.swap(true, Ordering::Relaxed) {
                self.bus.publish(HostEvent::Notice {
                    message: format!(
                        "warning: this kernel cannot enforce every permission: {}",
                        missing.join("; ")
                    ),
                });
            }
        }
        Ok(Some(prepared))
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

fn unreadable(e: ApprovalError) -> CallError {
    CallError::NotAllowed {
        refusal: Refusal::ApprovalsUnreadable {
            path: e.path().to_owned(),
            message: e.to_string(),
        },
    }
}
