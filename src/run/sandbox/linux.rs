//! The Linux seam of the sandbox: Landlock and seccomp. Every `unsafe` of the
//! sandbox lives here.
//!
//! The hazard this file avoids: after `fork` in a multi-threaded process, the
//! child may only make async-signal-safe calls. A lock held by another host
//! thread at fork time (the allocator's, for one) stays locked forever in the
//! child. So the ruleset is created and filled in the parent, the seccomp
//! program is assembled there, and the hook in the child makes three raw system
//! calls on data it owns, allocating nothing.
//!
//! The ruleset is built with the landlock crate's best-effort compatibility:
//! access rights the kernel does not know are dropped, not refused. Since the
//! restriction happens in the child, the crate's `RestrictionStatus` never
//! reaches the parent; [`Enforcement`] is computed instead from the kernel's
//! Landlock ABI, which decides exactly which of the requested rights survive.

use std::fmt;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::paths::{self, Allow};
use super::{Enforcement, Policy, SandboxError, SandboxSupport, seccomp};
use crate::plugins::manifest::Permission;

/// The Landlock ABIs whose rights this sandbox asks for, tested on a kernel that
/// has them. Newer kernels add rights (ABI 9: connecting to pathname unix
/// sockets) that are left unhandled until tested here.
const FS_ABI: ABI = ABI::V5;
const NET_ABI: ABI = ABI::V4;
const SCOPE_ABI: ABI = ABI::V6;

/// `LANDLOCK_CREATE_RULESET_VERSION` from `linux/landlock.h`.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
/// `LANDLOCK_RULE_PATH_BENEATH` from `linux/landlock.h`.
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// `struct landlock_path_beneath_attr` from `linux/landlock.h` (packed there too).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// A sandbox ready to be applied to one child: the Landlock ruleset (as its file
/// descriptor) and the seccomp program, both built in the parent.
pub(crate) struct Prepared {
    ruleset: Option<OwnedFd>,
    /// Rights on the child's own `/proc/PID`, added in the child (0: none).
    proc_self: u64,
    seccomp: Option<Box<[libc::sock_filter]>>,
    enforcement: Enforcement,
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("ruleset", &self.ruleset)
            .field("proc_self", &self.proc_self)
            .field("seccomp_len", &self.seccomp.as_ref().map(|p| p.len()))
            .field("enforcement", &self.enforcement)
            .finish()
    }
}

impl Prepared {
    /// What the child will have enforced, on this kernel.
    pub(crate) fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Registers a `pre_exec` hook that confines the child. Adds nothing when
    /// there is nothing to enforce (every permission granted, or a kernel with
    /// neither Landlock nor seccomp), so the standard library stays on
    /// `posix_spawn` then.
    ///
    /// The hook sets `PR_SET_NO_NEW_PRIVS` (set-uid programs such as `sudo` no
    /// longer gain privileges in the plugin), adds the child's own `/proc/PID`
    /// to the ruleset when reads are confined, restricts the child with the
    /// ruleset, then installs the seccomp program. If any step fails, the spawn
    /// fails with that step's `errno`; the plugin never runs half-confined.
    ///
    /// The ruleset descriptor is moved into the hook, so it stays open as long
    /// as `cmd` (every spawn of `cmd` is confined the same way); it is
    /// close-on-exec, so the plugin never sees it.
    pub(crate) fn apply_to(self, cmd: &mut tokio::process::Command) {
        self.apply_to_std(cmd.as_std_mut());
    }

    /// [`Prepared::apply_to`] for a standard library command.
    pub(crate) fn apply_to_std(self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;

        let Prepared {
            ruleset,
            proc_self,
            seccomp,
            ..
        } = self;
        if ruleset.is_none() && seccomp.is_none() {
            return;
        }
        // SAFETY: the hook runs in the forked child before exec. It only reads
        // data it owns (an open descriptor, an integer, a boxed slice built in
        // the parent) and makes raw system calls: no allocation, no lock, no
        // unwinding.
        unsafe {
            cmd.pre_exec(move || enforce(ruleset.as_ref(), proc_self, seccomp.as_deref()));
        }
    }
}

/// The child's half. Async-signal-safe: raw system calls and `errno` only.
fn enforce(
    ruleset: Option<&OwnedFd>,
    proc_self: u64,
    seccomp: Option<&[libc::sock_filter]>,
) -> io::Result<()> {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if let Some(fd) = ruleset {
        if proc_self != 0 {
            allow_own_proc(fd, proc_self)?;
        }
        // SAFETY: `fd` is an open Landlock ruleset descriptor owned by the hook;
        // the call takes it and a flags integer, and touches no memory of ours.
        let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    if let Some(filter) = seccomp {
        let program = libc::sock_fprog {
            len: filter.len() as libc::c_ushort,
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: `program` points to `filter`, a valid slice of `len`
        // instructions that outlives the call; the kernel copies it and never
        // writes through the pointer.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &program as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Adds the calling process's own `/proc/PID` to `ruleset`. Runs in the child,
/// where `/proc/self` names the plugin rather than the host. Its descendants get
/// other pids, so they cannot read their own `/proc/PID` files (magic links such
/// as `/proc/self/fd/N` to a pipe still work). Without `/proc` mounted, skips.
fn allow_own_proc(ruleset: &OwnedFd, access: u64) -> io::Result<()> {
    // SAFETY: the path is a static NUL-terminated string; open returns a new
    // descriptor or -1 and writes no memory of ours.
    let dir = unsafe {
        libc::open(
            c"/proc/self".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return Ok(());
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: dir,
    };
    // SAFETY: `attr` is a valid landlock_path_beneath_attr for the whole call,
    // which only reads it; `ruleset` and `dir` are open descriptors.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    let result = if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    };
    // SAFETY: `dir` is the descriptor opened above, closed exactly once.
    unsafe { libc::close(dir) };
    result
}

pub(super) fn prepare(policy: &Policy<'_>) -> Result<Prepared, SandboxError> {
    // What the kernel supports does not change while the host runs: probe once.
    static PROBES: std::sync::OnceLock<(Option<i32>, bool)> = std::sync::OnceLock::new();
    let &(abi, seccomp_ok) = PROBES.get_or_init(|| (landlock_abi(), seccomp_available()));
    let confine_reads = !policy.grants(Permission::FilesystemRead);
    let confine_writes = !policy.grants(Permission::FilesystemWrite);
    let deny_network = !policy.grants(Permission::Network);

    // With `filesystem:read` alone, reads stay handled (with rules that allow
    // everything else) so that the other processes' /proc entries, the host's
    // environment among them, stay hidden. With `filesystem:write` as well, the
    // plugin can do anything the user can: there is nothing left to hide.
    let handle_reads = confine_reads || confine_writes;

    let enforcement = expected(
        abi,
        seccomp_ok,
        [handle_reads, confine_reads, confine_writes, deny_network],
    );
    let ruleset = if handle_reads || confine_writes || deny_network {
        build_ruleset(policy, handle_reads, confine_writes, deny_network)?
    } else {
        None
    };
    // Read rights exist since ABI 1, so when reads are handled all of them are.
    let proc_self = if handle_reads && ruleset.is_some() && enforcement.proc_hidden {
        AccessFs::from_read(FS_ABI).bits()
    } else {
        0
    };
    let seccomp = if deny_network && seccomp_ok {
        seccomp::deny_sockets().map(Vec::into_boxed_slice)
    } else {
        None
    };
    Ok(Prepared {
        ruleset,
        proc_self,
        seccomp,
        enforcement,
    })
}

/// Creates and fills the ruleset; `None` when the kernel can enforce none of it.
fn build_ruleset(
    policy: &Policy<'_>,
    handle_reads: bool,
    confine_writes: bool,
    deny_network: bool,
) -> Result<Option<OwnedFd>, SandboxError> {
    let read = AccessFs::from_read(FS_ABI);
    let write = AccessFs::from_write(FS_ABI);
    let mut handled_fs = BitFlags::EMPTY;
    if handle_reads {
        handled_fs |= read;
    }
    if confine_writes {
        handled_fs |= write;
    }
    let mut scopes = BitFlags::from(Scope::Signal);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if !handled_fs.is_empty() {
        ruleset = ruleset.handle_access(handled_fs).map_err(landlock_error)?;
    }
    if deny_network {
        // Handled with no rule: every TCP connect and bind is denied.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(NET_ABI))
            .map_err(landlock_error)?;
        scopes |= Scope::AbstractUnixSocket;
    }
    ruleset = ruleset
        .scope(scopes & Scope::from_all(SCOPE_ABI))
        .map_err(landlock_error)?;
    let mut created = ruleset.create().map_err(landlock_error)?;

    if !handled_fs.is_empty() {
        for Allow {
            path,
            read: r,
            write: w,
            required,
        } in paths::allowed(policy)
        {
            let mut access = BitFlags::EMPTY;
            if r {
                access |= read;
            }
            if w {
                access |= write;
            }
            access &= handled_fs;
            if access.is_empty() {
                continue;
            }
            // What landlock's PathFd does, keeping the io::Error for the message.
            let fd = match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
                .open(&path)
            {
                Ok(fd) => fd,
                Err(source) if required => return Err(SandboxError::Path { path, source }),
                Err(_) => continue,
            };
            // Rights that only make sense on a folder are invalid on a file.
            if fd.metadata().is_ok_and(|m| !m.is_dir()) {
                access &= AccessFs::from_file(FS_ABI);
            }
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(landlock_error)?;
        }
    }
    Ok(created.into())
}

fn landlock_error(e: landlock::RulesetError) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// What the child will have enforced, from what is wanted and what this kernel
/// supports (the same arithmetic as the landlock crate's best-effort mode).
fn expected(
    abi: Option<i32>,
    seccomp_ok: bool,
    [handle_reads, confine_reads, confine_writes, deny_network]: [bool; 4],
) -> Enforcement {
    let v = abi.unwrap_or(0);
    let any = confine_reads || confine_writes || deny_network;
    let mut e = Enforcement {
        landlock_abi: abi,
        reads_confined: confine_reads && v >= 1,
        proc_hidden: handle_reads && v >= 1,
        writes_confined: confine_writes && v >= 1,
        tcp_denied: deny_network && v >= 4,
        sockets_denied: deny_network && seccomp_ok,
        signals_scoped: any && v >= 6,
        not_enforced: Vec::new(),
    };
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

pub(super) fn support() -> SandboxSupport {
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
    notes.push("shell:exec, clipboard and notifications are advisory".into());
    SandboxSupport {
        landlock_abi: abi,
        filesystem: v >= 1,
        network_tcp: v >= 4,
        network_sockets: seccomp_ok,
        scopes: v >= 6,
        notes,
    }
}

/// The kernel's Landlock ABI version, or `None` when Landlock is missing or off.
fn landlock_abi() -> Option<i32> {
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
fn seccomp_available() -> bool {
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
