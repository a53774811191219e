//! Why a call is refused for want of approval, as data: what the manifest
//! asks for that the user has not granted.

use super::ApprovalState;
use crate::error::{Refusal, Requirement};
use crate::plugins::manifest::Manifest;

/// Why a call of `manifest` is refused in `state`, or `None` when `state`
/// allows the call:
///
/// `plugin "kv-store" needs approval for network, shell:exec`
///
/// `plugin "kv-store" needs re-approval for new permissions network, env API_TOKEN`
pub(crate) fn refusal(manifest: &Manifest, state: &ApprovalState) -> Option<Refusal> {
    let (permissions, env, secrets, again) = match state {
        ApprovalState::Automatic | ApprovalState::Approved | ApprovalState::ToolsChanged { .. } => {
            return None;
        }
        ApprovalState::NeedsApproval => {
            let mut permissions = manifest.granted();
            permissions.sort();
            permissions.dedup();
            let mut env = manifest.env.clone();
            env.sort();
            env.dedup();
            let secrets = manifest.secrets.keys().cloned().collect();
            (permissions, env, secrets, false)
        }
        ApprovalState::NeedsReapproval {
            new_permissions,
            new_env,
            new_secrets,
        } => (
            new_permissions.clone(),
            new_env.clone(),
            new_secrets.clone(),
            true,
        ),
    };
    let secrets = secrets.into_iter().map(|name| Requirement::Secret {
        hosts: manifest
            .secrets
            .get(&name)
            .map(|b| b.hosts.clone())
            .unwrap_or_default(),
        name,
    });
    Some(Refusal::NeedsApproval {
        plugin: manifest.name.clone(),
        missing: permissions
            .into_iter()
            .map(Requirement::Permission)
            .chain(env.into_iter().map(Requirement::Env))
            .chain(secrets)
            .collect(),
        again,
    })
}
