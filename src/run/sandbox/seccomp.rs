//! Hand-written classic-BPF seccomp programs: what every confined process is
//! refused, and the sockets a plugin without `network` may not make.
//!
//! Every program starts the same way, whatever the plugin was granted:
//! - a system call from another table (i386 or x32 on x86-64, arm32 on arm64)
//!   kills the process: those tables number calls differently, and a filter
//!   that let them through would be bypassed by a 32-bit program;
//! - the calls in [`DENIED`] fail with `EPERM` (or `ENOSYS`, where a program
//!   falls back to an older call): the kernel interfaces that reach beyond
//!   the process, from the container defaults (Docker's and Podman's default
//!   profiles) and what they add for a process that holds no capability.
//!   Each entry says why;
//! - the calls in [`CHECKED`] are refused for some arguments only: typing
//!   into a terminal (`TIOCSTI`, `TIOCLINUX`), making device files, and
//!   changing the limits or the scheduling of another process.
//!
//! Then the sockets:
//! - [`Sockets::Any`] (`network` granted): nothing more;
//! - [`Sockets::None`] (no `network`): `socket(2)` fails with `EACCES`,
//!   whatever the family: UDP, raw and packet sockets, netlink, and unix
//!   sockets (local daemons such as `ssh-agent` or `docker.sock` are network
//!   too). `socketpair(2)` stays allowed for unix stream and seqpacket pairs
//!   (not datagram ones: [`connected_pairs`]), so a plugin can still talk to its
//!   own children;
//! - [`Sockets::TcpOnly`] (host grants, `network:HOST`): `socket(2)` is
//!   allowed for TCP over IPv4 and IPv6 (`SOCK_STREAM`, protocol 0 or
//!   `IPPROTO_TCP`), the one kind of socket that reaches the egress proxy. No
//!   UDP (so no DNS but through the proxy), no raw or packet sockets, no unix
//!   sockets (a local daemon could carry data elsewhere), no SCTP or MPTCP
//!   (which Landlock's TCP rules do not see).
//!
//! Arguments are compared on their low 32 bits, which is exact for each
//! checked argument: the kernel reads a pid, an ioctl command, a file mode
//! and the namespace flags of `clone` and `unshare` as 32-bit values (or
//! narrower).
//!
//! This file only assembles the programs; installing them is in `child.rs`.

use libc::sock_filter;

/// `AUDIT_ARCH_*` of the architectures this filter knows, from `linux/audit.h`.
#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const NATIVE_ARCH: Option<u32> = None;

/// x32 system calls on x86-64 carry this bit in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Offsets in `struct seccomp_data`: the call's number, the architecture,
// then six 64-bit arguments (whose low halves come first on the
// little-endian architectures above).
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARG0: u32 = 16;
const OFFSET_ARG1: u32 = 24;
const OFFSET_ARG2: u32 = 32;

const LOAD_WORD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JUMP_EQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JUMP_GE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JUMP_SET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// The bits of `socket(2)`'s type that say the kind of socket (the rest are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u32 = 0xf;

/// `TIOCLINUX` from `asm-generic/ioctls.h` (the same number on x86-64 and arm64).
const TIOCLINUX: u32 = 0x541C;

/// The `CLONE_NEW*` flags `clone(2)` takes (`CLONE_NEWTIME` only through
/// `clone3` and `unshare`): a new mount, cgroup, UTS, IPC, user, PID or
/// network namespace.
const CLONE_NAMESPACES: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// `CLONE_NEWTIME` from `linux/sched.h`.
const CLONE_NEWTIME: u32 = 0x80;

/// `PRIO_USER` from `sys/resource.h`: every process of a user.
const PRIO_USER: u32 = 2;

/// `IOPRIO_WHO_USER` from `linux/ioprio.h`: every process of a user.
const IOPRIO_WHO_USER: u32 = 3;

/// Where a check jumps: one of the return instructions that close the
/// program, at its index in [`RETURNS`], or ahead by some instructions.
#[derive(Clone, Copy, Debug)]
enum Go {
    Next,
    Skip(u8),
    Allow,
    Eacces,
    Enosys,
    Kill,
    Eperm,
}

const RETURNS: [u32; 5] = [
    libc::SECCOMP_RET_ALLOW,
    libc::SECCOMP_RET_ERRNO | libc::EACCES as u32,
    libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
    libc::SECCOMP_RET_KILL_PROCESS,
    libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
];

/// A refused system call, its answer, and why.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "`name` and `why` are read by the test that holds the guide to this list"
    )
)]
struct Denied {
    nr: libc::c_long,
    /// `SYS_` and the call's name.
    name: &'static str,
    enosys: bool,
    why: &'static str,
}

/// A call refused with `EPERM`: `eperm!(SYS_name, "why")`, or with its
/// number for a call the C library does not name yet:
/// `eperm!(SYS_name = 467, "why")` (a call added since Linux 5.1 has one
/// number on every architecture).
macro_rules! eperm {
    ($nr:ident, $why:expr) => {
        eperm!($nr = libc::$nr, $why)
    };
    ($nr:ident = $value:expr, $why:expr) => {
        Denied {
            nr: $value,
            name: stringify!($nr),
            enosys: false,
            why: $why,
        }
    };
}

/// A call refused with `ENOSYS`, as if this kernel did not have it.
macro_rules! enosys {
    ($nr:ident, $why:expr) => {
        Denied {
            nr: libc::$nr,
            name: stringify!($nr),
            enosys: true,
            why: $why,
        }
    };
}

/// The system calls every confined process is refused, whatever it was
/// granted: none is needed by a tool, and each reaches past the process.
const DENIED: &[Denied] = &[
    // The kernel keyrings hold the user's session secrets (Kerberos tickets,
    // file system keys, the keys a desktop keeps there).
    eperm!(SYS_keyctl, "reads and changes the user's kernel keyrings"),
    eperm!(SYS_add_key, "adds keys to the user's kernel keyrings"),
    eperm!(
        SYS_request_key,
        "looks keys up in the user's kernel keyrings"
    ),
    // Namespaces and mounts: a plugin's own user namespace would give it
    // capabilities over new namespaces, and mounts could undo the read-only
    // project files.
    eperm!(SYS_mount, "mounts file systems"),
    eperm!(
        SYS_umount2,
        "unmounts file systems (the read-only project files)"
    ),
    eperm!(SYS_pivot_root, "changes the root file system"),
    eperm!(SYS_chroot, "changes the root folder"),
    eperm!(SYS_fsopen, "mounts file systems (new mount API)"),
    eperm!(SYS_fsconfig, "mounts file systems (new mount API)"),
    eperm!(SYS_fsmount, "mounts file systems (new mount API)"),
    eperm!(SYS_fspick, "reconfigures mounts (new mount API)"),
    eperm!(SYS_move_mount, "moves mounts (new mount API)"),
    eperm!(SYS_open_tree, "copies mount trees (new mount API)"),
    eperm!(SYS_mount_setattr, "changes mount flags (new mount API)"),
    eperm!(
        SYS_open_tree_attr = 467,
        "copies mount trees with other flags, read-only cleared (new mount API, Linux 6.15)"
    ),
    // clone3 takes its flags in memory, which a filter cannot read: refused
    // as unknown, so the C library falls back to clone, whose flags are
    // checked (the container defaults do the same).
    enosys!(
        SYS_clone3,
        "creates namespaces with flags a filter cannot read"
    ),
    // io_uring does its work without the system calls this filter sees
    // (sockets, opens); runtimes fall back to plain calls.
    enosys!(SYS_io_uring_setup, "bypasses the system call filter"),
    enosys!(SYS_io_uring_enter, "bypasses the system call filter"),
    enosys!(SYS_io_uring_register, "bypasses the system call filter"),
    // Files by handle skip the path walk, and so Landlock's rules.
    eperm!(
        SYS_open_by_handle_at,
        "opens files by handle, around path rules"
    ),
    eperm!(
        SYS_name_to_handle_at,
        "makes file handles for open_by_handle_at"
    ),
    // The kernel itself: modules, images, tracing, BPF, the log.
    eperm!(SYS_init_module, "loads kernel modules"),
    eperm!(SYS_finit_module, "loads kernel modules"),
    eperm!(SYS_delete_module, "unloads kernel modules"),
    eperm!(SYS_kexec_load, "replaces the running kernel"),
    eperm!(SYS_kexec_file_load, "replaces the running kernel"),
    eperm!(SYS_bpf, "loads BPF programs into the kernel"),
    eperm!(
        SYS_perf_event_open,
        "observes other processes and the kernel"
    ),
    eperm!(
        SYS_userfaultfd,
        "stalls the kernel in page faults (exploit aid)"
    ),
    eperm!(SYS_syslog, "reads and clears the kernel log"),
    eperm!(SYS_fanotify_init, "watches file access across the system"),
    // The machine: time, names, power, swap, quotas, accounting.
    eperm!(SYS_reboot, "reboots the machine"),
    eperm!(SYS_swapon, "changes swap"),
    eperm!(SYS_swapoff, "changes swap"),
    eperm!(SYS_acct, "switches process accounting"),
    eperm!(SYS_settimeofday, "sets the system clock"),
    eperm!(SYS_clock_settime, "sets the system clock"),
    eperm!(SYS_clock_adjtime, "adjusts the system clock"),
    eperm!(SYS_adjtimex, "adjusts the system clock"),
    eperm!(SYS_sethostname, "renames the machine"),
    eperm!(SYS_setdomainname, "renames the machine's domain"),
    eperm!(SYS_quotactl, "changes disk quotas"),
    eperm!(SYS_quotactl_fd, "changes disk quotas"),
    eperm!(SYS_vhangup, "hangs up the current terminal"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS_iopl, "reaches I/O ports"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS_ioperm, "reaches I/O ports"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS_modify_ldt, "changes segment descriptors (exploit aid)"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS_uselib, "loads a library the obsolete way"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS_ustat, "obsolete file system statistics"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS_sysfs, "obsolete file system type lookup"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS__sysctl, "obsolete kernel tuning"),
    #[cfg(target_arch = "x86_64")]
    eperm!(SYS_nfsservctl, "obsolete NFS server control"),
];

/// A system call refused for some arguments, and why.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "`name` and `why` are read by the test that holds the guide to this list"
    )
)]
struct Checked {
    nr: libc::c_long,
    name: &'static str,
    /// The instructions after the number matched, each path ending in a
    /// return (the number is no longer in the accumulator).
    steps: fn() -> Vec<Step>,
    why: &'static str,
}

/// The system calls refused for some of their arguments.
const CHECKED: &[Checked] = &[
    Checked {
        nr: libc::SYS_ioctl,
        name: "SYS_ioctl",
        steps: || {
            vec![
                (LOAD_WORD, OFFSET_ARG1, Go::Next, Go::Next),
                (JUMP_EQ, libc::TIOCSTI as u32, Go::Eperm, Go::Next),
                (JUMP_EQ, TIOCLINUX, Go::Eperm, Go::Allow),
            ]
        },
        why: "TIOCSTI and TIOCLINUX type into a terminal, which its shell runs later",
    },
    #[cfg(target_arch = "x86_64")]
    Checked {
        nr: libc::SYS_mknod,
        name: "SYS_mknod",
        steps: || devices(OFFSET_ARG1),
        why: "a device file gives raw access to a disk or to kernel memory",
    },
    Checked {
        nr: libc::SYS_mknodat,
        name: "SYS_mknodat",
        steps: || devices(OFFSET_ARG2),
        why: "a device file gives raw access to a disk or to kernel memory",
    },
    Checked {
        nr: libc::SYS_prlimit64,
        name: "SYS_prlimit64",
        steps: || own_process(OFFSET_ARG0),
        why: "lowers another process's limits (plughost's open files)",
    },
    Checked {
        nr: libc::SYS_setpriority,
        name: "SYS_setpriority",
        steps: || {
            vec![
                (LOAD_WORD, OFFSET_ARG0, Go::Next, Go::Next),
                (JUMP_EQ, PRIO_USER, Go::Eperm, Go::Next),
                (LOAD_WORD, OFFSET_ARG1, Go::Next, Go::Next),
                (JUMP_EQ, 0, Go::Allow, Go::Eperm),
            ]
        },
        why: "changes the priority of another process or of every process of the user",
    },
    Checked {
        nr: libc::SYS_ioprio_set,
        name: "SYS_ioprio_set",
        steps: || {
            vec![
                (LOAD_WORD, OFFSET_ARG0, Go::Next, Go::Next),
                (JUMP_EQ, IOPRIO_WHO_USER, Go::Eperm, Go::Next),
                (LOAD_WORD, OFFSET_ARG1, Go::Next, Go::Next),
                (JUMP_EQ, 0, Go::Allow, Go::Eperm),
            ]
        },
        why: "changes the I/O priority of another process or of every process of the user",
    },
    Checked {
        nr: libc::SYS_sched_setaffinity,
        name: "SYS_sched_setaffinity",
        steps: || own_process(OFFSET_ARG0),
        why: "moves another process between processors",
    },
    Checked {
        nr: libc::SYS_sched_setscheduler,
        name: "SYS_sched_setscheduler",
        steps: || own_process(OFFSET_ARG0),
        why: "changes another process's scheduling",
    },
    Checked {
        nr: libc::SYS_sched_setparam,
        name: "SYS_sched_setparam",
        steps: || own_process(OFFSET_ARG0),
        why: "changes another process's scheduling",
    },
    Checked {
        nr: libc::SYS_sched_setattr,
        name: "SYS_sched_setattr",
        steps: || own_process(OFFSET_ARG0),
        why: "changes another process's scheduling",
    },
];

/// The calls that make or join namespaces, in a program of their own: a
/// spawned child joins the host's namespaces before it installs this one, while it already runs under the main
/// program (which the threads that spawn it hold, see
/// `executor/spawn_linux.rs`).
const NAMESPACES: &[Checked] = &[
    Checked {
        nr: libc::SYS_setns,
        name: "SYS_setns",
        steps: || vec![(JUMP_GE, 0, Go::Eperm, Go::Eperm)],
        why: "joins another process's namespaces",
    },
    Checked {
        nr: libc::SYS_clone,
        name: "SYS_clone",
        steps: || {
            vec![
                (LOAD_WORD, OFFSET_ARG0, Go::Next, Go::Next),
                (
                    JUMP_SET,
                    CLONE_NAMESPACES | libc::CLONE_PARENT as u32,
                    Go::Eperm,
                    Go::Allow,
                ),
            ]
        },
        why: "creates namespaces (a user namespace holds every capability over them), or a sibling (`CLONE_PARENT`): a child of the PID namespace's first process, which a plugin could flood with them",
    },
    Checked {
        nr: libc::SYS_unshare,
        name: "SYS_unshare",
        steps: || {
            vec![
                (LOAD_WORD, OFFSET_ARG0, Go::Next, Go::Next),
                (
                    JUMP_SET,
                    CLONE_NAMESPACES | CLONE_NEWTIME,
                    Go::Eperm,
                    Go::Allow,
                ),
            ]
        },
        why: "creates namespaces (a user namespace holds every capability over them)",
    },
    Checked {
        nr: libc::SYS_ptrace,
        name: "SYS_ptrace",
        steps: || pid_one(OFFSET_ARG1),
        why: "traces the PID namespace's first process, which may be a resident init of plughost's own memory",
    },
    Checked {
        nr: libc::SYS_process_vm_readv,
        name: "SYS_process_vm_readv",
        steps: || pid_one(OFFSET_ARG0),
        why: "reads the memory of the PID namespace's first process",
    },
    Checked {
        nr: libc::SYS_process_vm_writev,
        name: "SYS_process_vm_writev",
        steps: || pid_one(OFFSET_ARG0),
        why: "writes the memory of the PID namespace's first process",
    },
    Checked {
        nr: libc::SYS_pidfd_open,
        name: "SYS_pidfd_open",
        steps: || pid_one(OFFSET_ARG0),
        why: "a handle on the PID namespace's first process (to take its descriptors)",
    },
];

/// Refused when the pid at `offset` is 1: the first process of the
/// caller's PID namespace (`plughost-init`, or a resident init, which
/// shares plughost's memory). Landlock already keeps a plugin from tracing
/// a process outside its domain; this holds without it.
fn pid_one(offset: u32) -> Vec<Step> {
    vec![
        (LOAD_WORD, offset, Go::Next, Go::Next),
        (JUMP_EQ, 1, Go::Eperm, Go::Allow),
    ]
}

/// Refused when the mode at `offset` makes a character or block device.
fn devices(offset: u32) -> Vec<Step> {
    vec![
        (LOAD_WORD, offset, Go::Next, Go::Next),
        (AND, libc::S_IFMT, Go::Next, Go::Next),
        (JUMP_EQ, libc::S_IFCHR, Go::Eperm, Go::Next),
        (JUMP_EQ, libc::S_IFBLK, Go::Eperm, Go::Allow),
    ]
}

/// Refused unless the pid at `offset` is 0 (the calling process).
fn own_process(offset: u32) -> Vec<Step> {
    vec![
        (LOAD_WORD, offset, Go::Next, Go::Next),
        (JUMP_EQ, 0, Go::Allow, Go::Eperm),
    ]
}

/// Which sockets a program lets a process make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// Any (`network` granted).
    Any,
    /// None (no `network`).
    None,
    /// TCP over IPv4 and IPv6 only (host grants).
    TcpOnly,
}

/// Whether this architecture has a filter.
pub(crate) fn supported() -> bool {
    NATIVE_ARCH.is_some()
}

/// The program for a confined process allowed `sockets`, or `None` on an
/// architecture it does not know.
pub(crate) fn program(sockets: Sockets) -> Option<Vec<sock_filter>> {
    let mut body = head()?;
    for d in DENIED {
        let answer = if d.enosys { Go::Enosys } else { Go::Eperm };
        body.push((JUMP_EQ, d.nr as u32, answer, Go::Next));
    }
    checks(&mut body, CHECKED);
    if sockets != Sockets::Any {
        body.extend(connected_pairs());
    }
    match sockets {
        Sockets::Any => {}
        Sockets::None => body.push((JUMP_EQ, libc::SYS_socket as u32, Go::Eacces, Go::Next)),
        Sockets::TcpOnly => body.extend([
            (JUMP_EQ, libc::SYS_socket as u32, Go::Next, Go::Allow),
            (LOAD_WORD, OFFSET_ARG0, Go::Next, Go::Next),
            (JUMP_EQ, libc::AF_INET as u32, Go::Skip(1), Go::Next),
            (JUMP_EQ, libc::AF_INET6 as u32, Go::Next, Go::Eacces),
            (LOAD_WORD, OFFSET_ARG1, Go::Next, Go::Next),
            (AND, SOCK_TYPE_MASK, Go::Next, Go::Next),
            (JUMP_EQ, libc::SOCK_STREAM as u32, Go::Next, Go::Eacces),
            (LOAD_WORD, OFFSET_ARG2, Go::Next, Go::Next),
            (JUMP_EQ, 0, Go::Allow, Go::Next),
            (JUMP_EQ, libc::IPPROTO_TCP as u32, Go::Allow, Go::Eacces),
        ]),
    }
    Some(assemble(body))
}

/// `socketpair(2)` without `network`: unix stream and seqpacket pairs only.
/// A datagram socket, connected to its pair or not, still sends to any
/// address it is given (`sendto`, `sendmsg`): a pair's datagram end would
/// reach every local daemon listening on a unix datagram socket (the
/// system log's `/dev/log`, `/run/systemd/notify`), which Landlock does not
/// see. A stream socket refuses an address (`EISCONN`), and a seqpacket one
/// ignores it.
fn connected_pairs() -> Vec<Step> {
    vec![
        (JUMP_EQ, libc::SYS_socketpair as u32, Go::Next, Go::Skip(6)),
        (LOAD_WORD, OFFSET_ARG0, Go::Next, Go::Next),
        (JUMP_EQ, libc::AF_UNIX as u32, Go::Next, Go::Eacces),
        (LOAD_WORD, OFFSET_ARG1, Go::Next, Go::Next),
        (AND, SOCK_TYPE_MASK, Go::Next, Go::Next),
        (JUMP_EQ, libc::SOCK_STREAM as u32, Go::Allow, Go::Next),
        (JUMP_EQ, libc::SOCK_SEQPACKET as u32, Go::Allow, Go::Eacces),
    ]
}

/// The program that refuses making and joining namespaces ([`NAMESPACES`]),
/// installed by the child itself after it joined the host's; `None` on an
/// architecture it does not know.
pub(crate) fn namespaces() -> Option<Vec<sock_filter>> {
    let mut body = head()?;
    checks(&mut body, NAMESPACES);
    Some(assemble(body))
}

/// What every program starts with: foreign tables killed, the call's
/// number loaded.
fn head() -> Option<Vec<Step>> {
    let arch = NATIVE_ARCH?;
    let mut body = vec![
        (LOAD_WORD, OFFSET_ARCH, Go::Next, Go::Next),
        (JUMP_EQ, arch, Go::Next, Go::Kill),
        (LOAD_WORD, OFFSET_NR, Go::Next, Go::Next),
    ];
    if cfg!(target_arch = "x86_64") {
        body.push((JUMP_GE, X32_SYSCALL_BIT, Go::Kill, Go::Next));
    }
    Some(body)
}

/// Appends each check: its steps when the number matches, else past them.
fn checks(body: &mut Vec<Step>, checked: &[Checked]) {
    for c in checked {
        let steps = (c.steps)();
        let skip = u8::try_from(steps.len()).expect("a short check");
        body.push((JUMP_EQ, c.nr as u32, Go::Next, Go::Skip(skip)));
        body.extend(steps);
    }
}

/// Every system call refused always or for some arguments, by name, with
/// why: what the documentation's table must list.
#[cfg(test)]
fn refused() -> impl Iterator<Item = (&'static str, &'static str)> {
    DENIED
        .iter()
        .map(|d| (d.name, d.why))
        .chain(CHECKED.iter().chain(NAMESPACES).map(|c| (c.name, c.why)))
        .map(|(name, why)| (name.trim_start_matches("SYS_"), why))
}

/// One instruction before assembly: (opcode, constant, where to go when the
/// comparison holds, when it fails).
type Step = (u16, u32, Go, Go);

/// The program: `body`, then the returns, reached by jumps or (Allow, the
/// first) by falling off the end of `body`.
fn assemble(body: Vec<Step>) -> Vec<sock_filter> {
    let end = body.len();
    // Jump offsets count from the next instruction.
    let offset = |from: usize, to: Go| {
        let target = match to {
            Go::Next => return 0,
            Go::Skip(n) => return n,
            Go::Allow => 0,
            Go::Eacces => 1,
            Go::Enosys => 2,
            Go::Kill => 3,
            Go::Eperm => 4,
        };
        u8::try_from(end + target - (from + 1)).expect("a program short enough for 8-bit jumps")
    };
    let mut program = Vec::with_capacity(end + RETURNS.len());
    for (i, (code, k, on_true, on_false)) in body.into_iter().enumerate() {
        program.push(sock_filter {
            code,
            jt: offset(i, on_true),
            jf: offset(i, on_false),
            k,
        });
    }
    for ret in RETURNS {
        program.push(sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: ret,
        });
    }
    program
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Runs the program on one `seccomp_data` (arch, nr, args), as the
    /// kernel would.
    fn run(program: &[sock_filter], arch: u32, nr: u32, args: [u32; 3]) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let ins = program[pc];
            pc += 1;
            match ins.code {
                LOAD_WORD => {
                    acc = match ins.k {
                        OFFSET_ARCH => arch,
                        OFFSET_NR => nr,
                        OFFSET_ARG0 => args[0],
                        OFFSET_ARG1 => args[1],
                        OFFSET_ARG2 => args[2],
                        other => panic!("unexpected offset {other}"),
                    }
                }
                AND => acc &= ins.k,
                JUMP_EQ | JUMP_GE | JUMP_SET => {
                    let hit = match ins.code {
                        JUMP_EQ => acc == ins.k,
                        JUMP_GE => acc >= ins.k,
                        _ => acc & ins.k != 0,
                    };
                    pc += usize::from(if hit { ins.jt } else { ins.jf });
                }
                RETURN => return ins.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    const ALLOW: u32 = RETURNS[0];
    const EACCES: u32 = RETURNS[1];
    const ENOSYS: u32 = RETURNS[2];
    const KILL: u32 = RETURNS[3];
    const EPERM: u32 = RETURNS[4];

    fn call(p: &[sock_filter], nr: libc::c_long, args: [u32; 3]) -> u32 {
        run(p, NATIVE_ARCH.unwrap(), nr as u32, args)
    }

    #[test]
    fn every_program_refuses_what_reaches_past_the_process() {
        for sockets in [Sockets::Any, Sockets::None, Sockets::TcpOnly] {
            let p = program(sockets).unwrap();
            for d in DENIED {
                let want = if d.enosys { ENOSYS } else { EPERM };
                assert_eq!(call(&p, d.nr, [0; 3]), want, "{}", d.name);
            }
            // The terminal: typing into it, whatever the descriptor.
            let tiocsti = libc::TIOCSTI as u32;
            assert_eq!(call(&p, libc::SYS_ioctl, [0, tiocsti, 0]), EPERM);
            assert_eq!(call(&p, libc::SYS_ioctl, [7, TIOCLINUX, 0]), EPERM);
            assert_eq!(
                call(&p, libc::SYS_ioctl, [1, libc::TIOCGWINSZ as u32, 0]),
                ALLOW
            );
            assert_eq!(
                call(&p, libc::SYS_ioctl, [3, libc::FIONREAD as u32, 0]),
                ALLOW
            );
            // Devices are not made; files, folders, fifos and sockets are.
            let dir = libc::AT_FDCWD as u32;
            for kind in [libc::S_IFCHR, libc::S_IFBLK] {
                assert_eq!(call(&p, libc::SYS_mknodat, [dir, 0, kind | 0o600]), EPERM);
                assert_eq!(call(&p, libc::SYS_mknod, [0, kind | 0o666, 0]), EPERM);
            }
            for kind in [libc::S_IFIFO, libc::S_IFREG, libc::S_IFSOCK] {
                assert_eq!(call(&p, libc::SYS_mknodat, [dir, 0, kind | 0o600]), ALLOW);
            }
            // Its own limits and scheduling only.
            assert_eq!(call(&p, libc::SYS_prlimit64, [0, 7, 1]), ALLOW);
            assert_eq!(call(&p, libc::SYS_prlimit64, [4242, 7, 1]), EPERM);
            assert_eq!(call(&p, libc::SYS_setpriority, [0, 0, 10]), ALLOW);
            assert_eq!(call(&p, libc::SYS_setpriority, [0, 4242, 10]), EPERM);
            let user = PRIO_USER;
            assert_eq!(call(&p, libc::SYS_setpriority, [user, 0, 10]), EPERM);
            assert_eq!(call(&p, libc::SYS_ioprio_set, [1, 0, 0]), ALLOW);
            assert_eq!(call(&p, libc::SYS_ioprio_set, [1, 4242, 0]), EPERM);
            assert_eq!(
                call(&p, libc::SYS_ioprio_set, [IOPRIO_WHO_USER, 0, 0]),
                EPERM
            );
            for nr in [
                libc::SYS_sched_setaffinity,
                libc::SYS_sched_setscheduler,
                libc::SYS_sched_setparam,
                libc::SYS_sched_setattr,
            ] {
                assert_eq!(call(&p, nr, [0, 0, 0]), ALLOW);
                assert_eq!(call(&p, nr, [4242, 0, 0]), EPERM);
            }
            // fork and threads; namespaces are the other program's.
            let fork = libc::SIGCHLD as u32;
            let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u32;
            assert_eq!(call(&p, libc::SYS_clone, [fork, 0, 0]), ALLOW);
            assert_eq!(call(&p, libc::SYS_clone, [thread, 0, 0]), ALLOW);
            let vfork = (libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT) as u32;
            assert_eq!(call(&p, libc::SYS_clone, [vfork, 0, 0]), ALLOW);
            // Ordinary calls, and foreign tables killed.
            for nr in [
                libc::SYS_read,
                libc::SYS_openat,
                libc::SYS_execve,
                libc::SYS_kill,
                libc::SYS_connect,
                libc::SYS_getrlimit,
            ] {
                assert_eq!(call(&p, nr, [0; 3]), ALLOW);
            }
            assert_eq!(call(&p, X32_SYSCALL_BIT as libc::c_long | 41, [0; 3]), KILL);
            assert_eq!(run(&p, 0x4000_0003, 102, [0; 3]), KILL);
        }
    }

    #[test]
    fn without_network_a_socket_pair_is_a_stream_or_seqpacket_one() {
        let unix = libc::AF_UNIX as u32;
        let flags = (libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u32;
        for sockets in [Sockets::Any, Sockets::None, Sockets::TcpOnly] {
            let p = program(sockets).unwrap();
            let pair = |domain: u32, kind: i32| {
                call(&p, libc::SYS_socketpair, [domain, kind as u32 | flags, 0])
            };
            assert_eq!(pair(unix, libc::SOCK_STREAM), ALLOW);
            assert_eq!(pair(unix, libc::SOCK_SEQPACKET), ALLOW);
            let datagrams = if sockets == Sockets::Any {
                ALLOW
            } else {
                EACCES
            };
            assert_eq!(pair(unix, libc::SOCK_DGRAM), datagrams, "{sockets:?}");
            // TIPC's pairs: a network protocol's.
            assert_eq!(
                pair(libc::AF_TIPC as u32, libc::SOCK_SEQPACKET),
                datagrams,
                "{sockets:?}"
            );
            // The rest of the program still runs after the check.
            assert_eq!(call(&p, libc::SYS_read, [0; 3]), ALLOW);
        }
    }

    #[test]
    fn the_namespace_program_refuses_making_and_joining_namespaces() {
        let p = namespaces().unwrap();
        let fork = libc::SIGCHLD as u32;
        for ns in [
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWNS,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWNET,
        ] {
            let flags = ns as u32 | fork;
            assert_eq!(call(&p, libc::SYS_clone, [flags, 0, 0]), EPERM);
            assert_eq!(call(&p, libc::SYS_unshare, [ns as u32, 0, 0]), EPERM);
        }
        assert_eq!(call(&p, libc::SYS_unshare, [CLONE_NEWTIME, 0, 0]), EPERM);
        let sibling = libc::CLONE_PARENT as u32 | libc::CLONE_VM as u32 | fork;
        assert_eq!(call(&p, libc::SYS_clone, [sibling, 0, 0]), EPERM);
        assert_eq!(call(&p, libc::SYS_setns, [3, 0, 0]), EPERM);
        let files = libc::CLONE_FILES as u32;
        assert_eq!(call(&p, libc::SYS_unshare, [files, 0, 0]), ALLOW);
        assert_eq!(call(&p, libc::SYS_clone, [fork, 0, 0]), ALLOW);
        assert_eq!(call(&p, libc::SYS_read, [0; 3]), ALLOW);
        assert_eq!(call(&p, libc::SYS_keyctl, [0; 3]), ALLOW);
        assert_eq!(run(&p, 0x4000_0003, 102, [0; 3]), KILL);
        // The namespace's first process is out of reach; the plugin's own
        // children are not.
        let attach = libc::PTRACE_ATTACH;
        assert_eq!(call(&p, libc::SYS_ptrace, [attach, 1, 0]), EPERM);
        assert_eq!(call(&p, libc::SYS_ptrace, [attach, 3, 0]), ALLOW);
        for nr in [
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_pidfd_open,
        ] {
            assert_eq!(call(&p, nr, [1, 0, 0]), EPERM);
            assert_eq!(call(&p, nr, [3, 0, 0]), ALLOW);
        }
    }

    #[test]
    fn sockets_follow_the_network_grant() {
        let socket = |p: &[sock_filter], family: i32, kind: i32, proto: i32| {
            call(
                p,
                libc::SYS_socket,
                [family as u32, kind as u32, proto as u32],
            )
        };
        let stream = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        let any = program(Sockets::Any).unwrap();
        assert_eq!(socket(&any, libc::AF_INET, libc::SOCK_DGRAM, 0), ALLOW);
        assert_eq!(socket(&any, libc::AF_UNIX, stream, 0), ALLOW);
        let none = program(Sockets::None).unwrap();
        assert_eq!(socket(&none, libc::AF_INET, stream, 0), EACCES);
        assert_eq!(socket(&none, libc::AF_UNIX, stream, 0), EACCES);
        let tcp = program(Sockets::TcpOnly).unwrap();
        assert_eq!(socket(&tcp, libc::AF_INET, stream, 0), ALLOW);
        assert_eq!(
            socket(&tcp, libc::AF_INET6, libc::SOCK_STREAM, libc::IPPROTO_TCP),
            ALLOW
        );
        assert_eq!(socket(&tcp, libc::AF_INET, libc::SOCK_DGRAM, 0), EACCES);
        assert_eq!(socket(&tcp, libc::AF_INET, libc::SOCK_RAW, 1), EACCES);
        assert_eq!(socket(&tcp, libc::AF_UNIX, libc::SOCK_STREAM, 0), EACCES);
        assert_eq!(socket(&tcp, libc::AF_PACKET, libc::SOCK_RAW, 0), EACCES);
        assert_eq!(socket(&tcp, libc::AF_INET, libc::SOCK_STREAM, 262), EACCES);
        assert_eq!(
            socket(&tcp, libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_SCTP),
            EACCES
        );
    }

    /// The guide lists every refused call, so what it says is what the
    /// filter does.
    #[test]
    fn the_guide_lists_every_refused_call() {
        let guide = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/sandbox.md"),
        )
        .unwrap();
        for (name, _) in refused() {
            assert!(
                guide.contains(&format!("`{name}`")),
                "docs/sandbox.md does not list `{name}`"
            );
        }
    }
}
