//! The sandbox where there is no Landlock or seccomp: nothing is enforced, and
//! [`Enforcement`] and [`support`] say so, so the caller can warn.

use super::{Egress, Enforcement, NetLevel, Policy, SandboxError, SandboxSupport};
use crate::plugins::manifest::Permission;

/// The confinement of one plugin version: nothing, on this platform.
#[derive(Debug)]
pub(crate) struct Confinement {
    enforcement: Enforcement,
}

/// The confinement of one process: nothing, on this platform.
#[derive(Debug, Clone)]
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
        .collect::<Vec<_>>();
        let mut not_enforced = not_enforced;
        let network_level = policy.egress.filter(|_| policy.hosts()).map(|_| {
            not_enforced.push("network:HOST: no sandbox on this platform, the plugin is only pointed at the egress proxy".into());
            NetLevel::Advisory
        });
        Ok(Confinement {
            enforcement: Enforcement {
                not_enforced,
                network_level,
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
    /// The same: there is nothing to enforce on this platform.
    pub(crate) fn long_lived(self) -> Prepared {
        self
    }

    /// Always: there is nothing to enforce on this platform.
    pub(crate) fn is_empty(&self) -> bool {
        true
    }

    /// Adds nothing: there is nothing to enforce on this platform.
    pub(crate) fn apply_to(self, _cmd: &mut tokio::process::Command, _cwd: &std::path::Path) {}
}

/// The egress proxy's socket, on the host's loopback: nothing holds a
/// plugin to it on this platform.
pub(crate) fn prepare_egress(
    _namespaces: bool,
) -> Result<(Egress, std::net::TcpListener), SandboxError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(SandboxError::Egress)?;
    let port = listener.local_addr().map_err(SandboxError::Egress)?.port();
    Ok((Egress { port }, listener))
}

pub(crate) fn support(_namespaces: bool) -> SandboxSupport {
    SandboxSupport {
        landlock_abi: None,
        filesystem: false,
        network_tcp: false,
        network_sockets: false,
        scopes: false,
        user_namespaces: false,
        host_grants: NetLevel::Advisory,
        projects_read_only: false,
        processes_contained: false,
        metadata_confined: false,
        plugin_tasks: None,
        notes: vec!["no sandbox on this platform: every permission is advisory".into()],
    }
}
