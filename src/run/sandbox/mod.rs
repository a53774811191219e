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
//! | no `filesystem:write` | writes only the data and temp folders and `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`, `/dev/tty` | Landlock (ABI 1+) |
//! | no `filesystem:write` (even with `filesystem:read`) | cannot read other processes' `/proc/PID` files: the host's environment holds the API keys plugins must not see | Landlock (ABI 1+) |
//! | no `network` | no TCP connect or bind | Landlock (ABI 4+) |
//! | no `network` | `socket(2)` fails for every family (UDP, raw, unix, netlink); no `io_uring` | seccomp filter |
//! | no `network` | no connecting to abstract unix sockets outside the sandbox | Landlock scope (ABI 6+) |
//! | any of the above | no signals to processes outside the sandbox; no set-uid gain (`no_new_privs`) | Landlock scope (ABI 6+), `prctl` |
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
//!
//! # Use
//!
//! The host keeps one [`Confinement`] per plugin version (`host/checks.rs`,
//! `sandbox_for`), asks it for each process's [`Prepared`] once the approval
//! check has passed, and the executor applies that in the child
//! (`executor::Spawn::sandbox`). `plughost doctor` prints [`support`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::plugins::manifest::Permission;

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(target_os = "linux")]
mod paths;
#[cfg(target_os = "linux")]
mod seccomp;

#[cfg(not(target_os = "linux"))]
#[path = "other.rs"]
mod os;

#[cfg(all(test, target_os = "linux"))]
mod tests;

#[cfg(target_os = "linux")]
pub(crate) use os::{ChildSteps, enforce};
pub(crate) use os::{Confinement, Prepared};

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
}

impl Policy<'_> {
    pub(crate) fn grants(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
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
    /// What was wanted but could not be enforced here, in words.
    pub not_enforced: Vec<String>,
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
    /// What is degraded or advisory, one sentence each.
    pub notes: Vec<String>,
}

impl SandboxSupport {
    /// What this system's kernel enforces.
    pub fn here() -> SandboxSupport {
        support()
    }
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
    /// The kernel refused the ruleset.
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(String),
}

/// Builds the sandbox of one process of the plugin `policy` describes. A host
/// prepares a [`Confinement`] once per plugin version and calls `for_call`
/// per process.
#[cfg(test)]
pub(crate) fn prepare(policy: &Policy<'_>) -> Result<Prepared, SandboxError> {
    Confinement::new(policy)?.for_call()
}

/// What this kernel can enforce.
pub(crate) fn support() -> SandboxSupport {
    os::support()
}
