//! Confines a plugin process to what its granted permissions allow.
//!
//! The sandbox is applied in the **child only**, between `clone` and `exec`;
//! the host itself is never restricted. Everything that allocates or can fail
//! for a reason worth reporting happens in the parent: once per plugin version,
//! [`Confinement::new`] works out which folders the plugin may touch and opens
//! them; [`Confinement::for_call`] hands out a Landlock ruleset built from
//! them and the plugin's data and temp folders, shared by up to
//! `CHILDREN_PER_RULESET` processes. The child then makes only raw system
//! calls (`prctl`, `open`, `landlock_add_rule`, `landlock_restrict_self`,
//! `seccomp`), so it is sound even though the host is multi-threaded.
//!
//! # What is confined
//!
//! | when | on Linux | mechanism |
//! |---|---|---|
//! | no `filesystem:read` | reads only the system (`/usr`, `/etc`, `/lib*`, `/opt`, `/nix`, `/sys`, a few global `/proc` files), the `#!` interpreter's install prefix, interpreter managers under the home folder (`~/.pyenv`, `~/.nvm`, …), its own `/proc/PID`, and the plugin, data and temp folders | Landlock (ABI 1+) |
//! | no `filesystem:write` | writes only the data and temp folders and `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom` (never a terminal) | Landlock (ABI 1+) |
//! | no `filesystem:write` (even with `filesystem:read`) | cannot read other processes' `/proc/PID` files: the host's environment holds the API keys plugins must not see | Landlock (ABI 1+) |
//! | no `network` | no TCP connect or bind | Landlock (ABI 4+) |
//! | no `network` | `socket(2)` fails for every family (UDP, raw, unix, netlink); no `io_uring` | seccomp filter |
//! | no `network` | no connecting to abstract unix sockets outside the sandbox | Landlock scope (ABI 6+) |
//! | any of the above | no signals to processes outside the sandbox; no set-uid gain (`no_new_privs`) | Landlock scope (ABI 6+), `prctl` |
//! | `network:HOST` grants (no plain `network`) | reaches the egress proxy alone: a network namespace with only loopback, where the proxy listens ([`NetLevel::Namespace`]); else TCP to the proxy's port only ([`NetLevel::ProxyPort`]) | user + network namespace; else Landlock (ABI 4+) |
//! | `network:HOST` grants | `socket(2)` only for TCP: no UDP (DNS goes through the proxy), raw, packet or unix sockets | seccomp filter |
//! | a write grant over a project | its `.git/hooks`, `.git/config` and MCP client configurations (`.mcp.json`, `.vscode/mcp.json`…) are read-only | user + mount namespace |
//!
//! `shell:exec`, `clipboard` and `notifications` are advisory: nothing enforces them.
//! A plugin granted `filesystem:read`, `filesystem:write` and `network` is not
//! confined at all.
//!
//! # Guarantees and caveats
//! - What this kernel enforces is reported, never assumed: [`support`] for the
//!   machine and [`Confinement::enforcement`] for one plugin. An older kernel gets the
//!   subset it supports (Landlock's best-effort compatibility); a kernel without
//!   Landlock gets no file system confinement at all, and the caller should warn.
//! - Files already open before the restriction (stdin, stdout, stderr) keep working.
//! - A Landlock domain is inherited by every descendant and cannot be lifted, so a
//!   plugin's own children are confined the same way. They cannot read their own
//!   `/proc/PID` files unless the plugin has both `filesystem:read` and
//!   `filesystem:write` (only the entrypoint's process can): a bash plugin that
//!   runs `ps` needs both.
//! - A ruleset serves up to `CHILDREN_PER_RULESET` processes of one plugin
//!   version, each adding its own `/proc/PID` to it, so a process can read the
//!   `/proc` files of the earlier processes of the same plugin version that
//!   shared its ruleset (never another plugin's). The folders behind it are
//!   opened once per plugin version; a scoped folder deleted and made again is
//!   noticed ([`Confinement::is_current`]).
//! - Without `network`, `socketpair(2)` and pipes still work (a plugin can talk to
//!   its own children), but a plugin cannot connect to local daemons either
//!   (`ssh-agent`, `docker.sock`, D-Bus, `nscd`; glibc falls back to files).
//! - Without `filesystem:write`, `/dev/shm` is not writable: Python's
//!   `multiprocessing` locks (`sem_open`) fail. Grant `filesystem:write` for those.
//!   The plugin folder is read-only too, so Python cannot write `__pycache__`
//!   there (it runs anyway; `PYTHONPYCACHEPREFIX` can point into the data folder).
//! - Without `network`, 32-bit (i386, x32) programs are killed on their first
//!   system call: the seccomp filter only knows the native system call table, and
//!   letting foreign tables through would let them create sockets.
//! - On Linux the executor spawns with `clone(CLONE_VM | CLONE_VFORK)` and
//!   confines the child itself (`executor/spawn_linux.rs`): no fork, whatever
//!   the host's memory. [`Prepared::apply_to`] (a `pre_exec` hook, which makes
//!   the standard library fork) remains for kernels without `CLONE_PIDFD`.
//! - If a step fails in the child, the spawn fails with that step's `errno`
//!   (`io::Error` from `spawn`); the plugin never runs half-confined.
//! - Namespaces are made once (the host's user namespace), once per plugin
//!   version (the egress proxy's network namespace) or once per
//!   confinement (the mount namespace), never per process: a child only
//!   joins them (`setns`), see `namespace.rs`. The exception is the PID
//!   namespace each process gets where the user namespace works, under
//!   `plughost-init` ([`init`]) or, for a per-call process, a resident
//!   init kept from call to call (`executor/resident.rs`), so that nothing
//!   it starts outlives it
//!   (elsewhere the same init runs it as a child subreaper that kills
//!   what it leaves). Where user namespaces do not
//!   work (some distributions forbid them) or are switched off
//!   (`PLUGHOST_NO_NAMESPACES`), host grants fall back to the proxy's port
//!   and project files are not protected; [`Enforcement`] and [`support`]
//!   say so.
//!
//! # Use
//!
//! The host keeps one [`Confinement`] per plugin version (`host/checks.rs`,
//! `sandbox_for`), asks it for each process's [`Prepared`] once the approval
//! check has passed and what it enforces meets the host's sandbox mode
//! (`host/launch.rs`, the one place a plugin process is prepared), and the executor applies that in the child
//! (`executor::Spawn::sandbox`). `plughost doctor` prints [`support`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::plugins::manifest::Permission;

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
pub(crate) mod init;
#[cfg(target_os = "linux")]
mod namespace;
#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(target_os = "linux")]
mod paths;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod support;

#[cfg(not(target_os = "linux"))]
#[path = "other.rs"]
mod os;

#[cfg(all(test, target_os = "linux"))]
mod tests;

#[cfg(target_os = "linux")]
pub(crate) use cgroup::join_thread as join_tasks_group;
#[cfg(target_os = "linux")]
pub(crate) use child::{ChildSteps, enforce, join, mount_own_proc, scope_signals};
#[cfg(target_os = "linux")]
pub(crate) use os::Kept;
pub(crate) use os::{Confinement, Prepared, prepare_egress};

/// What a plugin may touch, derived from its granted permissions.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "only the Linux sandbox confines folders")
)]
pub(crate) struct Policy<'a> {
    /// The plugin's folder: readable, never writable without `filesystem:write`.
    pub plugin_dir: &'a Path,
    /// The plugin's data folder: readable and writable.
    pub data_dir: &'a Path,
    /// The folder that holds the plugin's temp folders (each process's
    /// `TMPDIR` is a folder inside): readable and writable.
    pub tmp_dir: &'a Path,
    /// The entrypoint; its `#!` interpreter's install prefix becomes readable.
    pub entrypoint: &'a Path,
    /// The permissions the user GRANTED (not merely those the manifest asks for).
    pub permissions: &'a [Permission],
    /// plughost's own trust (its plugins folder, binary and configuration):
    /// never writable, whatever is granted.
    pub trust: &'a [PathBuf],
    /// Neither readable nor writable, whatever is granted (the state folder:
    /// approvals, tokens, other plugins' data), but for the plugin's own data
    /// and temp folders in it.
    pub private: &'a [PathBuf],
    /// The child's environment: `PATH` resolves `#!/usr/bin/env X`, `HOME`,
    /// `PYENV_ROOT`, `NVM_DIR`… locate interpreter managers. A variable missing
    /// here is taken from the host's environment.
    pub env: &'a [(OsString, OsString)],
    /// The egress proxy a plugin with host grants is held to (see
    /// [`prepare_egress`]); `None` for the others.
    pub egress: Option<&'a Egress>,
    /// Files it reads beyond its folders, kept from it otherwise: the roots
    /// a plugin with brokered secrets trusts (in the state folder).
    pub also_read: &'a [PathBuf],
    /// Whether user namespaces may be used (they are tried only then).
    pub namespaces: bool,
}

impl Policy<'_> {
    pub(crate) fn grants(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
    }

    /// Whether the plugin was granted hosts (`network:HOST`) rather than
    /// the whole network.
    pub(crate) fn hosts(&self) -> bool {
        !self.grants(Permission::Network)
            && self.permissions.iter().any(|p| p.host_grant().is_some())
    }
}

/// How a plugin with host grants is held to plughost's egress proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NetLevel {
    /// It runs in a network namespace with only loopback, where the proxy
    /// listens: the proxy is its one way out, whatever it does with its
    /// sockets (user and network namespaces).
    Namespace,
    /// Landlock lets its TCP connections reach the proxy's port alone (on
    /// any address: a service elsewhere on that port number is reachable
    /// too), and seccomp denies every socket but TCP.
    ProxyPort,
    /// Nothing holds it: it is only pointed at the proxy (no namespaces and
    /// no Landlock ABI 4 here).
    Advisory,
}

impl NetLevel {
    /// What the level holds, in a sentence for `doctor` and the approval prompt.
    pub fn describe(self) -> &'static str {
        match self {
            NetLevel::Namespace => {
                "held by the kernel: it runs in a network namespace whose one way out is plughost's egress proxy"
            }
            NetLevel::ProxyPort => {
                "held to the egress proxy's port only (Landlock TCP rule and seccomp; no user namespaces here): it could reach another service on that port number"
            }
            NetLevel::Advisory => {
                "NOT enforced here (neither user namespaces nor Landlock ABI 4): it is only pointed at the egress proxy"
            }
        }
    }
}

/// The egress proxy as the sandbox sees it: the port its plugin may
/// connect to, and the network namespace the proxy listens in (`None`: it
/// listens on the host's loopback). Made once per plugin version by
/// [`prepare_egress`], shared by every confinement of that version.
#[derive(Debug, Clone)]
pub(crate) struct Egress {
    #[cfg_attr(
        not(target_os = "linux"),
        expect(
            dead_code,
            reason = "only the Linux sandbox holds a plugin to the port"
        )
    )]
    pub port: u16,
    #[cfg(target_os = "linux")]
    pub netns: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

impl Egress {
    /// Whether a network namespace holds the plugin to the proxy (so it
    /// may keep TCP sockets: they reach the proxy and nothing else).
    pub(crate) fn held_by_namespace(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.netns.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }
}

/// What one prepared call will have enforced once its child starts: the
/// expected Landlock and seccomp outcome on this kernel. Each flag is true only
/// when the restriction is both wanted (the permission was not granted) and
/// supported here.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Enforcement {
    /// The Landlock ABI the ruleset was built for (`None`: no Landlock here).
    pub landlock_abi: Option<i32>,
    /// Reads are confined to the allowed folders (no `filesystem:read`).
    pub reads_confined: bool,
    /// The `/proc` entries of other processes (their environment, memory maps)
    /// are hidden; true whenever `filesystem:write` is not granted.
    pub proc_hidden: bool,
    /// Writes are confined to the data and temp folders (no `filesystem:write`).
    pub writes_confined: bool,
    /// The protected paths are kept out of what was granted (Landlock ABI 1+).
    pub protected: bool,
    /// TCP connect and bind are denied (no `network`; Landlock ABI 4+).
    pub tcp_denied: bool,
    /// `socket(2)` and `io_uring` are denied (no `network`; seccomp).
    pub sockets_denied: bool,
    /// Signals to processes outside the sandbox are denied (Landlock ABI 6+).
    pub signals_scoped: bool,
    /// With host grants: how the plugin is held to the egress proxy.
    pub network_level: Option<NetLevel>,
    /// The project files that run later under its write grants are
    /// read-only (a mount namespace).
    pub projects_read_only: bool,
    /// Nothing it starts outlives it: its processes are in a PID namespace
    /// of their own, or under a reaping `plughost-init` that Landlock's
    /// signal scope keeps it from killing (see [`SandboxSupport`]).
    pub processes_contained: bool,
    /// The mode, owner, times and extended attributes of files it may not
    /// write cannot be changed either: every mount but its write grants,
    /// data and temp folders is read-only in its mount namespace (Landlock
    /// has no right for them).
    pub metadata_confined: bool,
    /// What was wanted but could not be enforced here, in words.
    pub not_enforced: Vec<String>,
}

/// How much of the sandbox confined a plugin's process, for traces and
/// metrics: nothing, everything its permissions call for, or part of it
/// (this kernel lacks some restriction; `plughost doctor` says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxLevel {
    /// No confinement (`--no-sandbox`).
    Off,
    /// Every restriction its permissions call for is enforced.
    Full,
    /// Some restriction it should have is not enforced on this kernel.
    Partial,
}

impl SandboxLevel {
    /// `off`, `full` or `partial`, as traces name it (`plughost.sandbox`).
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxLevel::Off => "off",
            SandboxLevel::Full => "full",
            SandboxLevel::Partial => "partial",
        }
    }
}

/// What this kernel can enforce, for `plughost doctor` and for the warning shown
/// when the sandbox is degraded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct SandboxSupport {
    /// The kernel's Landlock ABI version; `None` when Landlock is missing or off.
    pub landlock_abi: Option<i32>,
    /// File system reads and writes can be confined (Landlock ABI 1+).
    pub filesystem: bool,
    /// TCP connect and bind can be denied (Landlock ABI 4+).
    pub network_tcp: bool,
    /// Every socket family can be denied (seccomp filters on this architecture).
    pub network_sockets: bool,
    /// Signals and abstract unix sockets can be scoped (Landlock ABI 6+).
    pub scopes: bool,
    /// User namespaces work here (and are not switched off).
    pub user_namespaces: bool,
    /// How a plugin with `network:HOST` grants is held to the egress proxy here.
    pub host_grants: NetLevel,
    /// The project files that run later (`.git/hooks`, MCP configurations)
    /// under a write grant can be kept read-only (a mount namespace).
    pub projects_read_only: bool,
    /// What a call starts ends with it, even what left its session, and
    /// also when the host exits: its processes are in a PID namespace of
    /// their own, or (Landlock alone, ABI 6 and later, whose signal scope
    /// keeps a plugin from killing it) under a `plughost-init` that reaps
    /// and kills them.
    pub processes_contained: bool,
    /// A plugin cannot change the mode, owner, times or extended attributes
    /// of files outside what it may write (a read-only mount tree).
    pub metadata_confined: bool,
    /// The most processes and threads all plugins of one host may have
    /// together: counted in its user namespace (`RLIMIT_NPROC`), or where
    /// that does not hold (root, Landlock alone) in a pids cgroup of its
    /// own when it can make one. `None`: neither holds here.
    pub plugin_tasks: Option<u64>,
    /// What is degraded or advisory, one sentence each.
    pub notes: Vec<String>,
}

impl SandboxSupport {
    /// What this system's kernel enforces, with user namespaces unless
    /// `PLUGHOST_NO_NAMESPACES` switches them off.
    pub fn here() -> SandboxSupport {
        support_here()
    }
}

/// Whether the environment switches user namespaces off
/// (`PLUGHOST_NO_NAMESPACES` set, and neither empty nor `0`): the way to
/// force the fallback levels, for tests and for kernels where namespaces
/// misbehave. A host's own setting is `PluginHostBuilder::namespaces`,
/// whose default this is.
pub(crate) fn namespaces_by_default() -> bool {
    std::env::var_os("PLUGHOST_NO_NAMESPACES").is_none_or(|v| v.is_empty() || v == "0")
}

/// Why a sandbox could not be prepared. The caller should fail the call
/// (`not_allowed`) rather than run the plugin unconfined.
#[derive(Debug, thiserror::Error)]
#[cfg_attr(
    not(target_os = "linux"),
    expect(dead_code, reason = "only the Linux sandbox can fail to prepare")
)]
pub(crate) enum SandboxError {
    /// A folder the plugin must be able to use cannot be opened.
    #[error("cannot open {} for the sandbox: {source}", path.display())]
    Path {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A grant is reached through a symbolic link the plugin may replace.
    #[error(
        "{}, in a folder the plugin may write, so the plugin could point it anywhere: replace the link with the folder it names, or grant that folder instead",
        through_link(grant, link)
    )]
    ChangeableLink { grant: PathBuf, link: PathBuf },
    /// A folder changed between being judged and being opened.
    #[error("{} changed while its sandbox was prepared (it now leads to {}); try again, and if it keeps changing, something is swapping it", path.display(), now.display())]
    Moved { path: PathBuf, now: PathBuf },
    /// A path the mount namespace binds changed while it was made.
    #[error(
        "a folder changed while its sandbox was prepared ({0}); try again, and if it keeps changing, something is swapping it"
    )]
    Changed(String),
    /// The kernel refused the ruleset.
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(String),
    /// The egress proxy's socket could not be made.
    #[error("cannot start the egress proxy: {0}")]
    Egress(std::io::Error),
}

/// How a grant meets a link: it is the link, or the link is on its way.
fn through_link(grant: &std::path::Path, link: &std::path::Path) -> String {
    if grant == link {
        format!("the granted {} is a symbolic link", grant.display())
    } else {
        format!(
            "the granted {} is reached through the symbolic link {}",
            grant.display(),
            link.display()
        )
    }
}

/// Builds the sandbox of one process of the plugin `policy` describes. A host
/// prepares a [`Confinement`] once per plugin version and calls `for_call`
/// per process.
#[cfg(test)]
pub(crate) fn prepare(policy: &Policy<'_>) -> Result<Prepared, SandboxError> {
    Confinement::new(policy)?.for_call()
}

/// What this kernel can enforce, with user namespaces when `namespaces`.
pub(crate) fn support(namespaces: bool) -> SandboxSupport {
    os::support(namespaces)
}

/// [`support`] with the default of [`namespaces_by_default`], probed once.
pub(crate) fn support_here() -> SandboxSupport {
    static HERE: std::sync::LazyLock<SandboxSupport> =
        std::sync::LazyLock::new(|| os::support(namespaces_by_default()));
    HERE.clone()
}
