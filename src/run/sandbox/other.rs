//! The sandbox where there is no Landlock or seccomp: nothing is enforced, and
//! [`Enforcement`] and [`support`] say so, so the caller can warn.

use super::{Enforcement, Policy, SandboxError, SandboxSupport};
use crate::plugins::manifest::Permission;

/// A sandbox that enforces nothing on this platform.
#[derive(Debug)]
pub(crate) struct Prepared {
    enforcement: Enforcement,
}

impl Prepared {
    /// What the child will have enforced: nothing here.
    pub(crate) fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Adds nothing: there is nothing to enforce on this platform.
    pub(crate) fn apply_to(self, _cmd: &mut tokio::process::Command) {}
}

pub(crate) fn prepare(policy: &Policy<'_>) -> Result<Prepared, SandboxError> {
    let not_enforced = [
        Permission::FilesystemRead,
        Permission::FilesystemWrite,
        Permission::Network,
    ]
    .into_iter()
    .filter(|p| !policy.grants(*p))
    .map(|p| format!("{p}: no sandbox on this platform"))
    .collect();
    Ok(Prepared {
        enforcement: Enforcement {
            not_enforced,
            ..Enforcement::default()
        },
    })
}

pub(crate) fn support() -> SandboxSupport {
    SandboxSupport {
        landlock_abi: None,
        filesystem: false,
        network_tcp: false,
        network_sockets: false,
        scopes: false,
        notes: vec!["no sandbox on this platform: every permission is advisory".into()],
    }
}
