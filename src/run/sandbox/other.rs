//! The sandbox where there is no Landlock or seccomp: nothing is enforced, and
//! [`Enforcement`] and [`support`] say so, so the caller can warn.

use super::{Enforcement, Policy, SandboxError, SandboxSupport};
use crate::plugins::manifest::Permission;

/// The confinement of one plugin version: nothing, on this platform.
#[derive(Debug)]
pub(crate) struct Confinement {
    enforcement: Enforcement,
}

/// The confinement of one process: nothing, on this platform.
#[derive(Debug)]
pub(crate) struct Prepared;

impl Confinement {
    /// Records which wanted restrictions go unenforced here.
    pub(crate) fn new(policy: &Policy<'_>) -> Result<Confinement, SandboxError> {
        let not_enforced = [
            Permission::FilesystemRead,
            Permission::FilesystemWrite,
            Permission::Network,
        ]
        .into_iter()
        .filter(|p| !policy.grants(p.clone()))
        .map(|p| format!("{p}: no sandbox on this platform"))
        .collect();
        Ok(Confinement {
            enforcement: Enforcement {
                not_enforced,
                ..Enforcement::default()
            },
        })
    }

    /// What its processes will have enforced: nothing here.
    pub(crate) fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// The protected paths kept out: none, with nothing enforced.
    pub(crate) fn protected(&self) -> &[crate::protect::ProtectedPath] {
        &[]
    }

    /// Everything is reached: nothing is enforced here.
    pub(crate) fn reaches(&self, _path: &std::path::Path, _write: bool) -> bool {
        true
    }

    /// Always current: it holds no folders.
    pub(crate) fn is_current(&self) -> bool {
        true
    }

    /// Nothing to prepare.
    pub(crate) fn for_call(&self) -> Result<Prepared, SandboxError> {
        Ok(Prepared)
    }
}

impl Prepared {
    /// Adds nothing: there is nothing to enforce on this platform.
    pub(crate) fn apply_to(self, _cmd: &mut tokio::process::Command) {}
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
