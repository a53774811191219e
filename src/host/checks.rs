//! The checks a call passes before anything runs, beyond its input: the
//! approval (asked for when an approver is at hand) and the sandbox the plugin
//! will run in.

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::{Inner, SandboxMode};
use crate::approval::{ApprovalState, Approver};
use crate::error::CallError;
use crate::plugins::catalog::Plugin;
use crate::plugins::events::HostEvent;
use crate::plugins::manifest::Manifest;
use crate::run::sandbox;

impl Inner {
    /// Lets the call through when the plugin is approved (or needs no approval);
    /// otherwise asks the approver, one question at a time, and persists a yes.
    pub(super) async fn ensure_approved(
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
        // Whatever happens next, a worker started under the old approval must
        // not serve another call.
        self.workers.kill(plugin.name(), "its approval changed");
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
        self.bus.publish(HostEvent::ApprovalGranted {
            plugin: plugin.name().to_owned(),
        });
        Ok(())
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
        let refuse = |message: String| CallError::NotAllowed { message };
        let prepared = sandbox::prepare(&sandbox::Policy {
            plugin_dir: &plugin.dir,
            data_dir,
            tmp_dir,
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

    fn not_approved_message(&self, manifest: &Manifest, state: &ApprovalState) -> String {
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
