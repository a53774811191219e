//! The checks a call passes before anything runs, beyond its input: the
//! approval (asked for when an approver is at hand) and the sandbox the plugin
//! will run in.

use std::ffi::OsString;
use std::path::Path;

use std::sync::Arc;
use std::time::Instant;

use super::approve::Asked;
use super::{Inner, SandboxMode};
use crate::approval::{self, ApprovalError, Approver, Tier};
use crate::approval::{Approval, ApproveError};
use crate::error::{CallError, Refusal};
use crate::events::WorkerStop;
use crate::observe::phases::{Phases, Step};
use crate::plugins::catalog::Plugin;
use crate::run::sandbox::{self, SandboxLevel};

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
        phases: &mut Phases,
    ) -> Result<(), CallError> {
        if approval::tier(&plugin.manifest) == Tier::Automatic {
            return Ok(());
        }
        let start = Instant::now();
        let asked = self.ask_approval(plugin, Some(tool), approver).await;
        if let Ok(Asked::Done(answer @ (Approval::Approved | Approval::Declined))) = &asked {
            phases.approval = Some(Step::since(start, *answer == Approval::Approved));
        }
        let asked = match asked {
            Ok(asked) => asked,
            Err(ApproveError::Approvals(e)) => return Err(unreadable(e)),
            Err(e) => {
                return Err(CallError::Failed {
                    tool: tool.to_owned(),
                    reason: e.to_string(),
                    denials: Vec::new(),
                    exit_code: None,
                    stderr_tail: String::new(),
                    cause: Some(std::sync::Arc::new(e)),
                });
            }
        };
        let refusal = match asked {
            Asked::Done(Approval::NotNeeded | Approval::AlreadyApproved | Approval::Approved) => {
                return Ok(());
            }
            Asked::Done(Approval::Declined) => Refusal::Declined {
                plugin: plugin.name().to_owned(),
            },
            Asked::NobodyToAsk(state) => match state.withheld(tool) {
                Some(change) => {
                    // The other tools of the server go on: its workers too.
                    return Err(CallError::NotAllowed {
                        refusal: Refusal::ToolChanged {
                            plugin: plugin.name().to_owned(),
                            tool: tool.to_owned(),
                            change,
                        },
                    });
                }
                None => approval::refusal(&plugin.manifest, &state)
                    .expect("a state that needs approval has a refusal"),
            },
        };
        self.workers
            .kill(plugin.name(), WorkerStop::ApprovalChanged);
        Err(CallError::NotAllowed { refusal })
    }

    /// How much of the sandbox confines `plugin`'s processes: from its
    /// prepared confinement, `None` before one was prepared.
    pub(super) fn sandbox_level(&self, plugin: &Plugin) -> Option<SandboxLevel> {
        if self.config.sandbox == SandboxMode::Off {
            return Some(SandboxLevel::Off);
        }
        let confinements = self.confinements.lock().expect("confinements lock");
        let c = confinements.get(&plugin.generation)?;
        Some(if c.enforcement().not_enforced.is_empty() {
            SandboxLevel::Full
        } else {
            SandboxLevel::Partial
        })
    }

    /// Prepares the child's confinement for one process of `plugin`
    /// according to the host's sandbox mode. The plugin is approved at this
    /// point, so what its manifest asks for is what was granted.
    ///
    /// The folders behind the confinement (the system's, the plugin's own,
    /// `data_dir`, the folder of its temp folders) are opened once per plugin
    /// version and kept until a reload replaces it, or one of them is made
    /// again.
    ///
    /// A plugin with host grants gets its version's egress proxy (started
    /// now if it has none) and `env` gets the variables that point at it;
    /// `NO_PROXY` and any proxy of the host's own are removed.
    pub(super) fn sandbox_for(
        &self,
        plugin: &Plugin,
        data_dir: &Path,
        env: &mut Vec<(OsString, OsString)>,
    ) -> Result<Option<sandbox::Prepared>, CallError> {
        if self.config.sandbox == SandboxMode::Off {
            return Ok(None);
        }
        let failed = |e| super::launch::sandbox_failed(plugin.name(), e);
        let outlet = self.outlet(plugin).map_err(failed)?;
        let trust = outlet.as_ref().and_then(|o| o.trust.as_ref());
        if let Some((_, vars)) = trust {
            env.retain(|(k, _)| !vars.iter().any(|(v, _)| k.as_os_str() == v.as_str()));
            env.extend(vars.iter().map(|(k, v)| (k.into(), v.into())));
        }
        let also_read: Vec<std::path::PathBuf> =
            trust.map(|(f, _)| f.clone()).into_iter().collect();
        if let Some(outlet) = &outlet {
            env.retain(|(k, _)| {
                !crate::run::egress::PROXY_VARIABLES
                    .iter()
                    .any(|v| k.as_os_str() == *v)
            });
            env.extend(
                outlet
                    .proxy
                    .env()
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into())),
            );
        }
        let tmp_root = self.temp_pool.root(&self.config.state_dir, plugin.name());
        let egress = outlet.as_ref().map(|o| &o.sandbox);
        let confinement = self
            .confinement(plugin, data_dir, &tmp_root, env, egress, &also_read)
            .map_err(failed)?;
        self.confine(plugin.name(), &confinement).map(Some)
    }

    /// The cached confinement of this version of `plugin`, prepared again
    /// when a scoped folder it opened was replaced.
    fn confinement(
        &self,
        plugin: &Plugin,
        data_dir: &Path,
        tmp_root: &Path,
        env: &[(OsString, OsString)],
        egress: Option<&sandbox::Egress>,
        also_read: &[std::path::PathBuf],
    ) -> Result<Arc<sandbox::Confinement>, sandbox::SandboxError> {
        let cached = self
            .confinements
            .lock()
            .expect("confinements lock")
            .get(&plugin.generation)
            .cloned();
        if let Some(c) = cached.filter(|c| c.is_current()) {
            return Ok(c);
        }
        let (trust, private) = self.protected_by_host();
        let permissions = plugin.manifest.effective_permissions();
        // A remote server's process is the bridge: its program is what runs.
        let entrypoint = match &plugin.manifest.remote {
            Some(_) => self.config.remote_bridge.as_ref().map(|(p, _)| p.as_path()),
            None => None,
        };
        let fresh = Arc::new(sandbox::Confinement::new(&sandbox::Policy {
            plugin_dir: &plugin.dir,
            data_dir,
            tmp_dir: tmp_root,
            entrypoint: entrypoint.unwrap_or(&plugin.entrypoint),
            permissions: &permissions,
            trust: &trust,
            private: &private,
            env,
            egress,
            also_read,
            namespaces: self.config.namespaces,
        })?);
        self.confinements
            .lock()
            .expect("confinements lock")
            .insert(plugin.generation, fresh.clone());
        Ok(fresh)
    }

    /// What this host keeps from every plugin: its trust (the plugins folder,
    /// its own binary and plughost's configuration), never writable; and its
    /// state folder (with the paths the builder added), never readable either.
    pub(super) fn protected_by_host(&self) -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
        let mut trust = vec![self.config.plugins_dir.clone()];
        trust.extend(std::env::current_exe().ok());
        if let Some(list) = crate::protect::user_list_file()
            && let Some(dir) = list.parent()
        {
            trust.push(dir.to_path_buf());
        }
        let mut private = vec![self.config.state_dir.clone()];
        private.extend(self.config.private.iter().cloned());
        (trust, private)
    }

    /// Forgets the confinement of a plugin version a reload replaced (its
    /// descriptors close once no call holds it).
    pub(super) fn forget_confinement(&self, generation: u64) {
        self.confinements
            .lock()
            .expect("confinements lock")
            .remove(&generation);
    }
}

fn unreadable(e: ApprovalError) -> CallError {
    CallError::NotAllowed {
        refusal: Refusal::ApprovalsUnreadable(e),
    }
}
