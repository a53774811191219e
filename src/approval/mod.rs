//! Approvals: which plugins may run, and what the user agreed to.
//!
//! A plugin is in one of two tiers, decided in `decide.rs` alone. With no
//! permissions, or only `filesystem:read` (unless it names a secret or a
//! kernel interface, `/proc` or `/dev`), and no `env` variables, it runs
//! without asking ([`ApprovalState::Automatic`]). Anything else (any other permission, or any
//! `env` variable, which may carry a secret) needs the user's approval, given in
//! a prompt (`prompt.rs`) on a terminal, by `plughost approve NAME`, or through MCP
//! elicitation. What was granted is kept in an `ApprovalStore`; a plugin whose
//! manifest later asks for a permission or variable it was not granted needs
//! approval again ([`ApprovalState::NeedsReapproval`]); one that asks for fewer
//! stays approved.
//!
//! The host runs one approval flow for calls, `plughost approve`, MCP
//! elicitation and embedders (`host/approve.rs`): read the state, ask an
//! [`Approver`] one question at a time, save a yes with `ApprovalStore::grant`.

mod approver;
mod brokered;
mod decide;
pub(crate) mod pins;
pub(crate) mod prompt;
mod refusal;
pub(crate) mod store;
#[cfg(test)]
mod tests;
pub(crate) mod view;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::plugins::manifest::ToolChange;
use crate::plugins::manifest::{EnvVarName, Manifest, Permission, Protocol, ToolSpec};

pub use crate::error::Requirement;
pub use approver::{Approver, BoxFuture, TerminalApprover};
pub(crate) use brokered::{SecretGrant, bindings};
pub(crate) use decide::may_list_before_approval;
pub(crate) use decide::{Standing, Tier, protected_note, tier};
pub(crate) use refusal::refusal;
pub use store::ApprovalError;
pub(crate) use store::ApprovalStore;
pub(crate) use view::{ApprovalView, Offer};

/// How an approval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// The plugin asks for nothing that needs approval.
    NotNeeded,
    /// Everything it asks for was granted before.
    AlreadyApproved,
    /// Granted now, and saved.
    Approved,
    /// The approver said no; nothing was saved.
    Declined,
}

/// Why a plugin could not be approved or revoked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApproveError {
    /// No plugin of that name is loaded (and, for a revoke, none was approved).
    #[error(
        "no plugin named \"{plugin}\" in {}{}",
        dir.display(),
        nearest.as_ref().map(|n| format!("; did you mean \"{n}\"?")).unwrap_or_default()
    )]
    NotFound {
        /// The name asked for.
        plugin: String,
        /// The plugins folder looked in.
        dir: PathBuf,
        /// A plugin folder whose name is close enough to be what was meant.
        nearest: Option<String>,
    },
    /// The plugin's folder is rejected; `reason` lists its problems.
    #[error("plugin \"{plugin}\" is rejected; fix it first:\n{reason}")]
    Rejected {
        /// The plugin (its folder's name).
        plugin: String,
        /// Its problems, a line each.
        reason: String,
    },
    /// The approvals file cannot be read or written.
    #[error(transparent)]
    Approvals(#[from] ApprovalError),
    /// An MCP server was approved but could not be started to list its
    /// tools; they are listed (and approved) by the next `approve`.
    #[error(
        "plugin \"{plugin}\" is approved, but its MCP server could not list its tools: {reason}"
    )]
    ServerFailed {
        /// The MCP server's plugin.
        plugin: String,
        /// Why it could not list its tools.
        reason: String,
    },
    /// An MCP server that is not approved was to be started to list what it
    /// offers, but its manifest asks for more than reading files that need
    /// no approval (a secret, `/proc` or `/dev` needs it): it starts only once
    /// that is approved.
    #[error(
        "plugin \"{plugin}\" asks for more than reading files that need no approval; its server starts only once that is approved"
    )]
    NeedsApprovalFirst {
        /// The MCP server's plugin.
        plugin: String,
    },
}

impl ApproveError {
    /// What the user can do about it: check a rejected plugin's folder.
    pub fn remedy(&self) -> Option<crate::Remedy> {
        match self {
            ApproveError::Rejected { plugin, .. } => Some(crate::Remedy::Validate {
                plugin: plugin.clone(),
            }),
            _ => None,
        }
    }
}

/// The extra warning shown when a plugin asks for both `shell:exec` and `network`.
pub(crate) const SHELL_NETWORK_WARNING: &str = "WARNING: shell:exec together with network lets this plugin run any program and send what it finds to other machines.";

/// Whether the manifest asks for both `shell:exec` and `network`, which earns
/// the [`SHELL_NETWORK_WARNING`].
pub(crate) fn shell_and_network(manifest: &Manifest) -> bool {
    manifest.permissions.contains(&Permission::ShellExec)
        && manifest.permissions.contains(&Permission::Network)
}

/// What the user granted one plugin, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Grant {
    /// The permissions granted.
    pub permissions: BTreeSet<Permission>,
    /// The names of the environment variables the plugin may receive.
    #[serde(default)]
    pub env: BTreeSet<EnvVarName>,
    /// The plugin's version when it was approved (for information only).
    pub plugin_version: String,
    /// When it was approved, in seconds since the Unix epoch.
    pub granted_at: u64,
    /// The brokered secrets granted, each with the hosts its value may be
    /// placed on requests to (as the manifest writes them, sorted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, SecretGrant>,
    /// An MCP server's tools as they were approved (see [`pins`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<pins::Pins>,
    /// An MCP server's prompts as they were approved: their text reaches the
    /// model as a tool's description does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<pins::Pins>,
}

impl Grant {
    /// A grant of exactly what `manifest` asks for now.
    pub(crate) fn of(manifest: &Manifest, granted_at: u64) -> Grant {
        Grant {
            permissions: manifest.granted().into_iter().collect(),
            env: manifest.env.iter().cloned().collect(),
            secrets: bindings(manifest),
            plugin_version: manifest.version.clone(),
            granted_at,
            tools: None,
            prompts: None,
        }
    }
}

impl Grant {
    /// What a running process of the plugin depends on (its permissions and
    /// variables, not its pins or time), as a key: a worker started under
    /// another key no longer matches the grant and is stopped.
    pub(crate) fn key(&self) -> String {
        let permissions: Vec<String> = self.permissions.iter().map(ToString::to_string).collect();
        let env: Vec<&str> = self.env.iter().map(|e| e.0.as_str()).collect();
        let secrets: Vec<String> = self
            .secrets
            .iter()
            .map(|(name, binding)| format!("{name}@{binding}"))
            .collect();
        format!(
            "{}|{}|{}",
            permissions.join(","),
            env.join(","),
            secrets.join(",")
        )
    }
}

/// Every stored approval, keyed by plugin name. Read with [`ApprovalStore::load`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Approvals {
    pub(crate) plugins: BTreeMap<String, Grant>,
}

impl Approvals {
    /// The grant of this plugin, if it was ever approved (and not revoked).
    pub(crate) fn get(&self, plugin: &str) -> Option<&Grant> {
        self.plugins.get(plugin)
    }

    /// Where `manifest` stands against these approvals (pins aside: the
    /// view measures those against the tools a server lists).
    #[cfg(test)]
    pub(crate) fn state(&self, manifest: &Manifest) -> ApprovalState {
        state(manifest, self.get(&manifest.name))
    }
}

/// Where a plugin stands.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalState {
    /// Tier 1: runs without approval.
    Automatic,
    /// The user granted everything the manifest asks for now.
    Approved,
    /// Never approved (or revoked): every permission and variable needs approval.
    NeedsApproval,
    /// Approved before, but the manifest now asks for more: these were not granted.
    NeedsReapproval {
        /// The permissions asked for and not granted.
        new_permissions: Vec<Permission>,
        /// The variables asked for and not granted.
        new_env: Vec<EnvVarName>,
        /// The brokered secrets whose binding (the secret, or its hosts) was
        /// not granted.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        new_secrets: Vec<String>,
    },
    /// An MCP server, approved, now offers tools that differ from the
    /// approved ones: those are withheld until approved again; the others run.
    ToolsChanged {
        /// The tools (and prompts) withheld, and why.
        tools: Vec<WithheldTool>,
    },
}

/// A tool (or prompt) withheld until the user approves again, and why.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub struct WithheldTool {
    /// The tool's name (or the prompt's, when `kind` is `prompt`).
    pub tool: String,
    /// Whether it is a tool or a prompt.
    pub kind: Pinned,
    /// How it differs from the approved one (or that it is new).
    pub change: ToolChange,
    /// Its description now, for the user to review.
    pub description: String,
}

/// What is pinned with an MCP server's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Pinned {
    /// An MCP server's tool.
    Tool,
    /// An MCP server's prompt, whose text reaches the model as a tool's
    /// description does.
    Prompt,
}

impl ApprovalState {
    /// Whether the plugin may run without asking (an MCP server whose tools
    /// changed may: only the changed tools wait for approval).
    pub fn allows_call(&self) -> bool {
        matches!(
            self,
            ApprovalState::Automatic | ApprovalState::Approved | ApprovalState::ToolsChanged { .. }
        )
    }

    /// Why `tool` is withheld, if it is.
    pub fn withheld(&self, tool: &str) -> Option<ToolChange> {
        self.withheld_as(tool, Pinned::Tool)
    }

    /// Why the prompt `prompt` is withheld, if it is.
    pub fn withheld_prompt(&self, prompt: &str) -> Option<ToolChange> {
        self.withheld_as(prompt, Pinned::Prompt)
    }

    fn withheld_as(&self, name: &str, kind: Pinned) -> Option<ToolChange> {
        match self {
            ApprovalState::ToolsChanged { tools } => tools
                .iter()
                .find(|t| t.tool == name && t.kind == kind)
                .map(|t| t.change),
            _ => None,
        }
    }

    /// Whether approving now would grant something (a call of `tool`, when
    /// given, needs only that tool).
    pub(crate) fn wants_approval(&self, tool: Option<&str>) -> bool {
        match self {
            ApprovalState::Automatic | ApprovalState::Approved => false,
            ApprovalState::ToolsChanged { .. } => tool.is_none_or(|t| self.withheld(t).is_some()),
            ApprovalState::NeedsApproval | ApprovalState::NeedsReapproval { .. } => true,
        }
    }

    /// A short label for listings: `automatic`, `approved`, `needs approval`,
    /// `needs re-approval: new permissions network, env API_TOKEN`.
    pub fn label(&self) -> String {
        match self {
            ApprovalState::Automatic => "automatic".to_owned(),
            ApprovalState::Approved => "approved".to_owned(),
            ApprovalState::NeedsApproval => "needs approval".to_owned(),
            ApprovalState::NeedsReapproval {
                new_permissions,
                new_env,
                new_secrets,
            } => {
                let mut all = item_list(new_permissions, new_env);
                all.extend(new_secrets.iter().map(|s| format!("secret {s}")));
                format!("needs re-approval: new permissions {}", all.join(", "))
            }
            ApprovalState::ToolsChanged { tools } => format!(
                "approved; withheld until approved again: {}",
                tools
                    .iter()
                    .map(|t| format!("{} ({})", t.tool, t.change.short()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Where `manifest` stands given its stored grant (`None`: never approved).
///
/// A tier-1 manifest is [`ApprovalState::Automatic`] whatever was stored. Every
/// permission counts when comparing with the grant, `filesystem:read` included:
/// a plugin approved for `network` that now also wants to read every file asks again.
/// [`state`] for an MCP server offering `tools` now: the tools that differ
/// from the approved ones make it [`ApprovalState::ToolsChanged`].
/// Prompts (`prompts`, as `pins::prompt_spec` makes them) are measured
/// the same way against the prompt pins; a grant from before prompts were
/// pinned withholds them all.
pub(crate) fn state_with_tools<'a>(
    manifest: &Manifest,
    grant: Option<&Grant>,
    tools: impl IntoIterator<Item = &'a ToolSpec>,
    prompts: impl IntoIterator<Item = ToolSpec>,
) -> ApprovalState {
    let plain = state(manifest, grant);
    let (ApprovalState::Approved, Some(grant), Some(pins)) =
        (&plain, grant, grant.and_then(|g| g.tools.as_ref()))
    else {
        return plain;
    };
    let no_prompts = pins::Pins::new();
    let prompt_pins = grant.prompts.as_ref().unwrap_or(&no_prompts);
    let withheld: Vec<WithheldTool> = tools
        .into_iter()
        .filter_map(|spec| {
            pins::change(pins, spec).map(|change| WithheldTool {
                tool: spec.name.clone(),
                kind: Pinned::Tool,
                change,
                description: spec.description.clone(),
            })
        })
        .chain(prompts.into_iter().filter_map(|spec| {
            pins::change(prompt_pins, &spec).map(|change| WithheldTool {
                tool: spec.name.clone(),
                kind: Pinned::Prompt,
                change,
                description: spec.description.clone(),
            })
        }))
        .collect();
    if withheld.is_empty() {
        plain
    } else {
        ApprovalState::ToolsChanged { tools: withheld }
    }
}

pub(crate) fn state(manifest: &Manifest, grant: Option<&Grant>) -> ApprovalState {
    if tier(manifest) == Tier::Automatic {
        return ApprovalState::Automatic;
    }
    let Some(grant) = grant else {
        return ApprovalState::NeedsApproval;
    };
    // An MCP server's approval is complete once its tools were listed and pinned.
    if manifest.protocol == Protocol::Mcp && grant.tools.is_none() {
        return ApprovalState::NeedsApproval;
    }
    // `network` reaches every host, so a plugin that narrows it to some
    // hosts asks for nothing new.
    let covered = |p: &Permission| {
        grant.permissions.contains(p)
            || (p.host_grant().is_some() && grant.permissions.contains(&Permission::Network))
    };
    let mut new_permissions: Vec<Permission> = manifest
        .granted()
        .into_iter()
        .filter(|p| !covered(p))
        .collect();
    new_permissions.sort();
    new_permissions.dedup();
    let mut new_env: Vec<EnvVarName> = manifest
        .env
        .iter()
        .filter(|e| !grant.env.contains(*e))
        .cloned()
        .collect();
    new_env.sort();
    new_env.dedup();
    let new_secrets: Vec<String> = bindings(manifest)
        .into_iter()
        .filter(|(name, hosts)| grant.secrets.get(name) != Some(hosts))
        .map(|(name, _)| name)
        .collect();
    if new_permissions.is_empty() && new_env.is_empty() && new_secrets.is_empty() {
        ApprovalState::Approved
    } else {
        ApprovalState::NeedsReapproval {
            new_permissions,
            new_env,
            new_secrets,
        }
    }
}

/// `network`, `shell:exec`, `env API_TOKEN`.
fn item_list(permissions: &[Permission], env: &[EnvVarName]) -> Vec<String> {
    permissions
        .iter()
        .map(ToString::to_string)
        .chain(env.iter().map(|e| format!("env {}", e.0)))
        .collect()
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
