//! What this kernel can enforce (probed once) and what a confinement will
//! have enforced on it, in words for `doctor`, the approval prompt and the
//! warning of a degraded sandbox.

use super::namespace;
use super::{Enforcement, NetLevel, SandboxSupport, seccomp};

/// `LANDLOCK_CREATE_RULESET_VERSION` from `linux/landlock.h`.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;

/// What the child will have enforced, from what is wanted and what this kernel
/// supports (the same arithmetic as the landlock crate's best-effort mode).
pub(super) fn expected(
    abi: Option<i32>,
    seccomp_ok: bool,
    [handle_reads, confine_reads, confine_writes, deny_network]: [bool; 4],
) -> Enforcement {
    let v = abi.unwrap_or(0);
    let mut e = Enforcement {
        landlock_abi: abi,
        reads_confined: confine_reads && v >= 1,
        proc_hidden: handle_reads && v >= 1,
        writes_confined: confine_writes && v >= 1,
        protected: v >= 1,
        tcp_denied: deny_network && v >= 4,
        sockets_denied: deny_network && seccomp_ok,
        signals_scoped: v >= 6,
        network_level: None,
        projects_read_only: false,
        processes_contained: false,
        metadata_confined: false,
        not_enforced: Vec::new(),
    };
    if v == 0 {
        e.not_enforced.push(
            "protected paths: no Landlock on this kernel, a plugin can reach the user's secrets and plughost's own state".into(),
        );
    }
    if confine_reads && !e.reads_confined {
        e.not_enforced
            .push("filesystem:read: no Landlock on this kernel, reads are not confined".into());
    }
    if confine_writes && !e.writes_confined {
        e.not_enforced
            .push("filesystem:write: no Landlock on this kernel, writes are not confined".into());
    }
    if deny_network && !e.tcp_denied && !e.sockets_denied {
        e.not_enforced.push(
            "network: neither Landlock ABI 4 nor seccomp on this kernel, network is not denied"
                .into(),
        );
    } else if deny_network && !e.sockets_denied {
        e.not_enforced.push(
            "network: no seccomp filter here, only TCP is denied (UDP and unix sockets are not)"
                .into(),
        );
    }
    if confine_writes && v == 1 {
        e.not_enforced.push(
            "Landlock ABI 1: renaming or linking files between folders is always denied".into(),
        );
    }
    if confine_writes && (1..3).contains(&v) {
        e.not_enforced
            .push("Landlock ABI < 3: truncating an existing file is not confined".into());
    }
    e
}

/// What this kernel enforces; `namespaces`: whether the host may use user
/// namespaces (they are tried only then).
pub(crate) fn support(namespaces: bool) -> SandboxSupport {
    let abi = landlock_abi();
    let v = abi.unwrap_or(0);
    let seccomp_ok = seccomp_available();
    let mut notes = Vec::new();
    match abi {
        None => notes.push(
            "Landlock is not available (kernel older than 5.13, or not enabled with lsm=landlock): \
             filesystem permissions are advisory"
                .into(),
        ),
        Some(v) if v < 4 => notes.push(format!(
            "Landlock ABI {v}: TCP is not denied by Landlock (needs ABI 4, Linux 6.7)"
        )),
        Some(_) => {}
    }
    if abi.is_some() && v < 6 {
        notes.push(
            "Landlock ABI < 6: a plugin can signal processes outside its sandbox (needs Linux 6.12)"
                .into(),
        );
    }
    if !seccomp_ok {
        notes.push(
            "no seccomp filter on this kernel or architecture: without `network`, \
             UDP and unix sockets are not denied"
                .into(),
        );
    }
    let user_namespaces = if namespaces {
        match namespace::available() {
            Ok(()) => true,
            Err(why) => {
                notes.push(format!(
                    "no user namespaces here ({why}): a plugin with network:HOST grants is held to the egress proxy's port only, and project files that run later (.git/hooks, MCP configurations) under a write grant are NOT protected from writes"
                ));
                false
            }
        }
    } else {
        notes.push(
            "user namespaces are switched off (PLUGHOST_NO_NAMESPACES): a plugin with network:HOST grants is held to the egress proxy's port only, and project files that run later under a write grant are NOT protected from writes"
                .into(),
        );
        false
    };
    let host_grants = if user_namespaces {
        NetLevel::Namespace
    } else if v >= 4 && seccomp_ok {
        NetLevel::ProxyPort
    } else {
        NetLevel::Advisory
    };
    // Without a PID namespace, plughost-init reaps and kills what a plugin
    // leaves; only Landlock's signal scope (ABI 6) keeps the plugin from
    // killing that init first.
    let processes_contained = (user_namespaces || (v >= 6 && super::init::reaps()))
        && match super::init::available() {
            Ok(()) => true,
            Err(why) => {
                notes.push(format!(
                    "{why}: a process a plugin starts that leaves its session outlives the call"
                ));
                false
            }
        };
    // SAFETY: geteuid takes nothing and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // RLIMIT_NPROC in plughost's user namespace, else its pids cgroup.
    let plugin_tasks = (user_namespaces && !root)
        .then_some(super::cgroup::PLUGIN_TASKS)
        .or_else(super::cgroup::limit);
    notes.push("shell:exec, clipboard and notifications are advisory".into());
    SandboxSupport {
        landlock_abi: abi,
        filesystem: v >= 1,
        network_tcp: v >= 4,
        network_sockets: seccomp_ok,
        scopes: v >= 6,
        user_namespaces,
        host_grants,
        projects_read_only: user_namespaces,
        processes_contained,
        metadata_confined: user_namespaces,
        plugin_tasks,
        notes,
    }
}

/// The kernel's Landlock ABI version, or `None` when Landlock is missing or off.
pub(super) fn landlock_abi() -> Option<i32> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag, the kernel
    // reads no memory and returns the ABI version, or -1 with errno.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then(|| i32::try_from(v).unwrap_or(i32::MAX))
}

/// Whether seccomp filters with the actions the program uses work here.
pub(super) fn seccomp_available() -> bool {
    if !seccomp::supported() {
        return false;
    }
    [libc::SECCOMP_RET_ERRNO, libc::SECCOMP_RET_KILL_PROCESS]
        .iter()
        .all(|action| {
            // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 through the pointer,
            // which points to a valid u32 for the whole call.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_GET_ACTION_AVAIL,
                    0,
                    action as *const u32,
                )
            };
            rc == 0
        })
}
