//! What the child of a confined spawn does between `clone` (or `fork`) and
//! `exec`: join the namespaces, set `no_new_privs`, add its own `/proc/PID`
//! to the ruleset, restrict itself with Landlock, install the seccomp
//! program. Raw system calls on data the parent built, nothing that
//! allocates, locks or unwinds: see `executor/spawn_linux.rs` for why.

use std::os::fd::RawFd;
use std::ptr;

use super::namespace::{self, Joins};

/// `LANDLOCK_RULE_PATH_BENEATH` from `linux/landlock.h`.
pub(super) const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// `struct landlock_path_beneath_attr` from `linux/landlock.h` (packed there too).
#[repr(C, packed)]
pub(super) struct PathBeneathAttr {
    pub allowed_access: u64,
    pub parent_fd: i32,
}

/// What the child of a confined spawn does before `exec`, as plain data.
#[derive(Clone, Copy)]
pub(crate) struct ChildSteps {
    /// The namespaces to join first (before the child changes folder).
    pub joins: Option<Joins>,
    /// The ruleset to restrict itself with.
    pub ruleset: Option<RawFd>,
    /// Rights on its own `/proc/PID` to add to the ruleset first (0: none).
    pub proc_self: u64,
    /// Whether the init of the process's PID namespace mounts a `/proc` of
    /// that namespace (see [`mount_own_proc`]).
    pub own_proc: bool,
    /// Set only by [`Self::after_init`], for a plugin whose init mounted
    /// one: its `/proc` rights reach all of that `/proc` (its own processes
    /// alone) rather than its own `/proc/PID`.
    pub proc_whole: bool,
    /// The seccomp program to install last (`None` when the spawning
    /// thread holds it already, and the child inherits it).
    pub seccomp: Option<&'static [libc::sock_filter]>,
    /// The program that refuses namespaces, installed by the child itself
    /// after it joined and made its own (a spawning thread cannot hold it).
    pub seccomp_namespaces: Option<&'static [libc::sock_filter]>,
    /// `cgroup.procs` of the plugins' pids cgroup, to join first (-1: none;
    /// see `cgroup.rs`).
    pub tasks_group: RawFd,
    /// Whether to set `no_new_privs` and drop every capability (false only
    /// for a process that inherits both from its PID namespace's init).
    pub drop_privileges: bool,
    /// `RLIMIT_NPROC` for the process (0: left as it is). In the host's
    /// user namespace the kernel counts it per namespace: the processes and
    /// threads of all of this host's plugins together (see `cgroup::PLUGIN_TASKS`).
    pub tasks: u64,
}

impl ChildSteps {
    /// The steps that hold for every process of a PID namespace, taken
    /// once by its init before it starts the plugin (which inherits them):
    /// the task limit, `no_new_privs`, no capability, the seccomp programs.
    /// Not the Landlock domain: the plugin could trace a process inside it.
    pub(crate) fn for_init(&self) -> ChildSteps {
        ChildSteps {
            joins: None,
            ruleset: None,
            proc_self: 0,
            proc_whole: false,
            ..*self
        }
    }

    /// What the plugin of a PID namespace takes on top of what its init
    /// gave it ([`Self::for_init`]): its Landlock domain. `own_proc`:
    /// whether the init mounted a `/proc` of the namespace's own.
    pub(crate) fn after_init(&self, own_proc: bool) -> ChildSteps {
        ChildSteps {
            proc_whole: own_proc,
            joins: None,
            tasks_group: -1,
            seccomp: None,
            seccomp_namespaces: None,
            drop_privileges: false,
            tasks: 0,
            ..*self
        }
    }
}

/// The child's first half, before it changes to the plugin's folder:
/// joins the plugins' pids cgroup and the namespaces (joining a mount namespace moves the current folder
/// to its root). Returns 0, or the failing call's errno.
pub(crate) fn join(steps: &ChildSteps) -> i32 {
    // The pids cgroup before anything can fork: what the child and the
    // plugin start is counted there from the start.
    if steps.tasks_group >= 0 {
        // SAFETY: writes one byte of a static string to a descriptor the
        // host keeps open for its life; `0` is the writer, for `cgroup.procs`.
        if unsafe { libc::write(steps.tasks_group, b"0".as_ptr().cast(), 1) } != 1 {
            return errno();
        }
    }
    match &steps.joins {
        Some(joins) => namespace::join(joins),
        None => 0,
    }
}

/// The child's half: its task limit, `no_new_privs`, every capability dropped for good, its
/// own `/proc/PID`, the Landlock restriction, the seccomp program. Returns
/// 0, or the failing call's errno.
///
/// Runs between `clone`/`fork` and `exec`: only raw system calls on data the
/// parent built, nothing that allocates, locks or unwinds.
pub(crate) fn enforce(steps: &ChildSteps) -> i32 {
    if steps.tasks != 0 {
        // Lowered, never raised: a lower limit of the user's stays.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into a valid local; setrlimit reads it.
        let rc = unsafe {
            if libc::getrlimit(libc::RLIMIT_NPROC, &mut limit) != 0 {
                -1
            } else {
                limit.rlim_cur = limit.rlim_cur.min(steps.tasks);
                limit.rlim_max = limit.rlim_max.min(steps.tasks);
                libc::setrlimit(libc::RLIMIT_NPROC, &limit)
            }
        };
        if rc != 0 {
            return errno();
        }
    }
    if steps.drop_privileges {
        // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments and touches no memory.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return errno();
        }
        let rc = drop_capabilities();
        if rc != 0 {
            return rc;
        }
    }
    if let Some(fd) = steps.ruleset {
        if steps.proc_self != 0 {
            let rc = allow_own_proc(fd, steps.proc_self, steps.proc_whole);
            if rc != 0 {
                return rc;
            }
        }
        // SAFETY: `fd` is an open Landlock ruleset descriptor the parent keeps
        // open across the spawn; the call takes it and a flags integer.
        let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
        if rc != 0 {
            return errno();
        }
    }
    for filter in [steps.seccomp, steps.seccomp_namespaces]
        .into_iter()
        .flatten()
    {
        let program = libc::sock_fprog {
            len: filter.len() as libc::c_ushort,
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: `program` points to `filter`, a valid static slice of `len`
        // instructions; the kernel copies it and never writes through it.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &program as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return errno();
        }
    }
    0
}

/// `_LINUX_CAPABILITY_VERSION_3` from `linux/capability.h`: 64-bit sets, as
/// two 32-bit halves.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`, one per 32-bit half.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `CAP_SETPCAP`: needed to change the bounding set and the securebits.
const CAP_SETPCAP: u32 = 8;

/// The securebits that keep capabilities from coming back: running a
/// program as root (or a set-uid root one) grants none (`NOROOT`), changing
/// uids neither grants nor keeps any (`NO_SETUID_FIXUP`, `KEEP_CAPS`), no
/// ambient capability can be raised, and each bit is locked.
const SECUREBITS: libc::c_ulong = {
    const NOROOT: libc::c_ulong = 1 << 0;
    const NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    NOROOT
        | NOROOT << 1
        | NO_SETUID_FIXUP
        | NO_SETUID_FIXUP << 1
        | KEEP_CAPS_LOCKED
        | NO_CAP_AMBIENT_RAISE
        | NO_CAP_AMBIENT_RAISE << 1
};

/// Drops every capability the process holds (as root, or in the user
/// namespace it joined), from every set: effective, permitted, inheritable,
/// ambient and the bounding set, with the securebits that keep a later
/// `exec` as root from granting them again. A process without
/// capabilities has nothing to drop and makes no change. Returns 0 or the
/// failing call's errno.
fn drop_capabilities() -> i32 {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget writes two cap data structs into `data`, a valid local
    // of that size, and may write the header's version, a valid local too.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return errno();
    }
    let held = data
        .iter()
        .any(|d| d.effective | d.permitted | d.inheritable != 0);
    if data[0].effective & (1 << CAP_SETPCAP) != 0 {
        // SAFETY: integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0) } != 0 {
            return errno();
        }
        for cap in 0..64 {
            // SAFETY: integer arguments only. EINVAL: past the last
            // capability this kernel knows.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
                if errno() == libc::EINVAL {
                    break;
                }
                return errno();
            }
        }
    }
    // SAFETY: integer arguments only. EINVAL: a kernel without ambient
    // capabilities (before 4.3), where there are none to clear.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    if rc != 0 && errno() != libc::EINVAL {
        return errno();
    }
    if held {
        header.version = CAPABILITY_VERSION_3;
        let none = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        // SAFETY: capset reads the header and two cap data structs, valid
        // locals of those sizes.
        if unsafe { libc::syscall(libc::SYS_capset, &header, none.as_ptr()) } != 0 {
            return errno();
        }
    }
    0
}

/// The calling thread's errno (in a `clone(CLONE_VM)` child: the suspended
/// parent thread's, which nobody else reads meanwhile).
fn errno() -> i32 {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    let e = unsafe { *libc::__errno_location() };
    if e == 0 { libc::ECHILD } else { e }
}

/// Adds the calling process's own `/proc/PID` to `ruleset`. Runs in the child,
/// where `/proc/self` names the plugin rather than the host. Its descendants get
/// other pids, so they cannot read their own `/proc/PID` files (magic links such
/// as `/proc/self/fd/N` to a pipe still work). Without `/proc` mounted, skips.
///
/// With `whole` (a `/proc` of the plugin's PID namespace, mounted by its
/// init: [`mount_own_proc`]), all of that `/proc` instead: it shows the
/// plugin's own processes and no other, so each process the plugin starts
/// reads its own entries too.
fn allow_own_proc(ruleset: RawFd, access: u64, whole: bool) -> i32 {
    let path = if whole { c"/proc" } else { c"/proc/self" };
    // SAFETY: the path is a static NUL-terminated string; open returns a new
    // descriptor or -1 and writes no memory of ours.
    let dir = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return 0;
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
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    let result = if rc == 0 { 0 } else { errno() };
    // SAFETY: `dir` is the descriptor opened above, closed exactly once.
    unsafe { libc::close(dir) };
    result
}

/// `LANDLOCK_SCOPE_SIGNAL` (Landlock ABI 6).
const LANDLOCK_SCOPE_SIGNAL: u64 = 1 << 1;

/// `struct landlock_ruleset_attr` (ABI 6: filesystem and network rights,
/// then scopes).
#[repr(C)]
struct ScopeOnly {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// Puts the calling process in a Landlock domain that only scopes signals:
/// it can then signal nothing but itself and the processes it starts (which
/// inherit the domain, and nest theirs in it). A reaping `plughost-init`
/// takes it so that one `kill(-1, SIGKILL)` ends exactly the plugin's tree,
/// forks in flight included. False where the kernel has no signal scope
/// (before ABI 6) or refuses; `no_new_privs` must be set already.
///
/// Runs between `clone` and `exec`: raw system calls on locals only.
pub(crate) fn scope_signals() -> bool {
    let attr = ScopeOnly {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: LANDLOCK_SCOPE_SIGNAL,
    };
    // SAFETY: `attr` is a valid local of the size passed; the kernel reads
    // it and returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const ScopeOnly,
            std::mem::size_of::<ScopeOnly>(),
            0u32,
        )
    };
    if fd < 0 {
        return false;
    }
    // SAFETY: restricts this process with the ruleset just made, then
    // closes that descriptor; integer arguments only.
    unsafe {
        let rc = libc::syscall(libc::SYS_landlock_restrict_self, fd as libc::c_int, 0u32);
        libc::close(fd as libc::c_int);
        rc == 0
    }
}

/// Gives the calling process, the first of a new PID namespace, a mount
/// namespace of its own with a `/proc` of that PID namespace over the
/// host's: in it, `/proc` lists the namespace's processes alone, so every
/// process the plugin starts can be allowed its own `/proc/PID` (which
/// Landlock, fixed at `exec` to the pids known then, cannot do otherwise).
/// Returns whether it is mounted; where the kernel refuses (a `/proc` the
/// host's mount namespace shows only in part, as in most containers), the
/// process keeps the host's `/proc` and the plugin its own `/proc/PID`.
///
/// The copy of a mount namespace made from a user namespace other than its
/// owner's receives mounts from it and sends none back; `/proc` is made
/// private first all the same, so that nothing mounted here can ever reach
/// a namespace it was copied from. Runs between `clone` and `exec`: raw
/// system calls only.
pub(crate) fn mount_own_proc() -> bool {
    // SAFETY: integer arguments and static NUL-terminated strings only;
    // the calls write no memory of ours.
    unsafe {
        libc::unshare(libc::CLONE_NEWNS) == 0
            && libc::mount(
                ptr::null(),
                c"/proc".as_ptr(),
                ptr::null(),
                libc::MS_PRIVATE,
                ptr::null(),
            ) == 0
            && libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                ptr::null(),
            ) == 0
    }
}
