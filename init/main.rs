//! `plughost-init`: the first process of a confined plugin's PID namespace.
//!
//! When the first process of a PID namespace exits, the kernel kills every
//! other process in it. So the executor starts each confined plugin as the
//! second process of a namespace of its own, under this one, and every
//! process the plugin starts, even one that left its session, ends with the
//! call. The plugin cannot be that first process itself: the first process
//! of a namespace ignores the signals it has no handler for (a plugin's
//! `SIGTERM`), and its status is not the plugin's.
//!
//! What it does, and nothing else:
//! - waits for its children (the plugin, and what the plugin leaves when it
//!   dies: the namespace's orphans come here) and reaps them;
//! - when the plugin exits, writes its wait status (4 bytes) to descriptor 3
//!   for the host, and exits, which ends the namespace;
//! - passes on to the plugin's process group every signal it gets (the
//!   host's `SIGTERM`), except `SIGCHLD`;
//! - exits when descriptor 4, the read end of a pipe only the host writes to,
//!   reports that the host is gone, so that nothing outlives the host either.
//!
//! Where there is no PID namespace (no user namespaces: Landlock alone),
//! `argv[2]` is `reap` or `reap-scoped`: this process is then a child
//! subreaper, so what the plugin leaves comes to it rather than to the
//! machine's init, and before it reports the plugin's end (or goes with the
//! host, or is told to end by the host's [`END`]) it kills what is left,
//! since no kernel does that for it. `reap-scoped`: it is in a Landlock
//! domain that scopes signals (which every process of the plugin's tree
//! inherits, and nothing else has), so one `kill(-1, SIGKILL)` reaches that
//! whole tree and nothing else, forks in flight included (a fork whose
//! parent has a `SIGKILL` pending fails); it checks first that the scope
//! holds (its parent, the host, refuses its signal). Otherwise it kills the
//! children the kernel lists for it, which a tree that forks and exits
//! faster than it kills can outrun.
//!
//! `argv[1]` is the plugin's pid, in the namespace. It has no libc: raw
//! system calls on a static binary of a few kilobytes, built by `build.rs`
//! and run from memory, so that starting it costs one small `exec`.
#![no_std]
#![no_main]

use core::arch::{asm, global_asm};

/// Where the host reads the plugin's wait status.
const STATUS_FD: usize = 3;
/// The read end of the host's lifeline: end of file when the host is gone.
const LIFELINE_FD: usize = 4;

const SIGCHLD: u32 = 17;
const SIGKILL: usize = 9;
/// What the host sends a reaping init instead of `SIGKILL`, which would end
/// it before it ended what it holds (`SIGUSR2`; the host sends a plugin
/// `SIGTERM` and `SIGKILL` only, so nothing is lost by not passing it on).
const END: u32 = 12;
const SIG_BLOCK: usize = 0;
const WNOHANG: usize = 1;
const EINTR: isize = 4;
const EPERM: isize = 1;
const SFD_NONBLOCK: usize = 0o4000;
const SFD_CLOEXEC: usize = 0o2000000;
const POLLIN: i16 = 1;
const AT_FDCWD: isize = -100;
const O_RDONLY_CLOEXEC: usize = 0o2000000;
/// How many others it reaps before it looks at the lifeline and the
/// signals again: a plugin that keeps making children of this process
/// cannot keep it from noticing that the host is gone.
const REAPS_PER_TURN: usize = 64;
/// Exit codes: the plugin's pid was missing, or the host is gone.
const BAD_ARGUMENTS: usize = 125;
const HOST_GONE: usize = 124;
/// How many rounds (a millisecond apart at least) [`Init::kill_all`] tries
/// before it gives up: about five seconds.
const KILL_ROUNDS: usize = 5000;

#[cfg(target_arch = "x86_64")]
mod nr {
    pub const READ: usize = 0;
    pub const WRITE: usize = 1;
    pub const CLOSE: usize = 3;
    pub const OPENAT: usize = 257;
    pub const RT_SIGPROCMASK: usize = 14;
    pub const WAIT4: usize = 61;
    pub const KILL: usize = 62;
    pub const GETPPID: usize = 110;
    pub const EXIT_GROUP: usize = 231;
    pub const PPOLL: usize = 271;
    pub const SIGNALFD4: usize = 289;
}

#[cfg(target_arch = "aarch64")]
mod nr {
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const CLOSE: usize = 57;
    pub const OPENAT: usize = 56;
    pub const RT_SIGPROCMASK: usize = 135;
    pub const WAIT4: usize = 260;
    pub const KILL: usize = 129;
    pub const GETPPID: usize = 173;
    pub const EXIT_GROUP: usize = 94;
    pub const PPOLL: usize = 73;
    pub const SIGNALFD4: usize = 74;
}

// The entry point: the kernel leaves argc, then argv, at the stack pointer.
#[cfg(target_arch = "x86_64")]
global_asm!(
    ".globl _start",
    "_start:",
    "xor ebp, ebp",
    "mov rdi, rsp",
    "and rsp, -16",
    "call {main}",
    "ud2",
    main = sym start,
);

#[cfg(target_arch = "aarch64")]
global_asm!(
    ".globl _start",
    "_start:",
    "mov x29, xzr",
    "mov x30, xzr",
    "mov x0, sp",
    "bl {main}",
    "brk #0",
    main = sym start,
);

/// One system call with up to four arguments; a negative result is `-errno`.
#[cfg(target_arch = "x86_64")]
unsafe fn syscall(n: usize, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes a valid system call and arguments; the
    // kernel clobbers rcx and r11 only.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a, in("rsi") b, in("rdx") c, in("r10") d,
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// One system call with up to four arguments; a negative result is `-errno`.
#[cfg(target_arch = "aarch64")]
unsafe fn syscall(n: usize, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes a valid system call and arguments.
    unsafe {
        asm!(
            "svc 0",
            inlateout("x0") a as isize => ret,
            in("x1") b, in("x2") c, in("x3") d,
            in("x8") n,
            options(nostack),
        );
    }
    ret
}

fn exit(code: usize) -> ! {
    // SAFETY: exit_group takes an integer and does not return.
    unsafe { syscall(nr::EXIT_GROUP, code, 0, 0, 0) };
    loop {}
}

/// The decimal number at `s`, a NUL-terminated string; 0 if it is not one.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn parse_pid(s: *const u8) -> usize {
    if s.is_null() {
        return 0;
    }
    let mut n: usize = 0;
    let mut i = 0;
    loop {
        // SAFETY: within the string, up to and including its NUL.
        let c = unsafe { *s.add(i) };
        match c {
            0 => return if i == 0 { 0 } else { n },
            b'0'..=b'9' if i < 10 => n = n * 10 + usize::from(c - b'0'),
            _ => return 0,
        }
        i += 1;
    }
}

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

/// # Safety
/// Called once, by `_start`, with the initial stack pointer.
unsafe extern "C" fn start(sp: *const usize) -> ! {
    // SAFETY: the kernel's initial stack: argc, then argc pointers.
    let (child, mode) = unsafe {
        let argc = *sp;
        let argv = sp.add(1).cast::<*const u8>();
        let child = if argc < 2 { 0 } else { parse_pid(*argv.add(1)) };
        let mode = if argc >= 3 { mode(*argv.add(2)) } else { 0 };
        (child, mode)
    };
    let mut init = Init {
        child,
        reaps: mode != 0,
        scoped: mode == 2 && scope_holds(),
        status: None,
    };
    if child < 2 {
        exit(BAD_ARGUMENTS);
    }
    let all: u64 = !0;
    // SAFETY: blocks every signal (the kernel ignores SIGKILL and SIGSTOP
    // in the set); they are taken from the signalfd instead. A blocked
    // signal is queued even for the first process of a namespace.
    let sfd = unsafe {
        syscall(
            nr::RT_SIGPROCMASK,
            SIG_BLOCK,
            (&raw const all) as usize,
            0,
            8,
        );
        syscall(
            nr::SIGNALFD4,
            usize::MAX,
            (&raw const all) as usize,
            8,
            SFD_NONBLOCK | SFD_CLOEXEC,
        )
    };
    if sfd < 0 {
        exit(BAD_ARGUMENTS);
    }
    let mut info = [0u32; 32];
    loop {
        // The plugin first: its end is the namespace's.
        let mut status: i32 = 0;
        // SAFETY: wait4 writes the status into a valid local.
        let pid = unsafe { syscall(nr::WAIT4, child, (&raw mut status) as usize, WNOHANG, 0) };
        if pid == child as isize && ended(status) {
            init.status = Some(status);
            init.finish();
        }
        if pid < 0 && pid != -EINTR {
            // The plugin is not a child here: nothing to wait for.
            exit(BAD_ARGUMENTS);
        }
        // Then a bounded batch of the others (what the plugin left, or
        // made this process's children), so that the host's lifeline is
        // looked at between batches however many there are.
        let mut more = false;
        for _ in 0..REAPS_PER_TURN {
            let mut status: i32 = 0;
            // SAFETY: wait4 writes the status into a valid local.
            let pid = unsafe {
                syscall(
                    nr::WAIT4,
                    usize::MAX,
                    (&raw mut status) as usize,
                    WNOHANG,
                    0,
                )
            };
            if pid == child as isize && ended(status) {
                init.status = Some(status);
                init.finish();
            }
            if pid <= 0 && pid != -EINTR {
                break;
            }
            more = true;
        }
        let mut fds = [
            PollFd {
                fd: sfd as i32,
                events: POLLIN,
                revents: 0,
            },
            PollFd {
                fd: LIFELINE_FD as i32,
                events: POLLIN,
                revents: 0,
            },
        ];
        // Without waiting when a batch may have left more to reap.
        let zero = [0usize; 2];
        let timeout = if more { (&raw const zero) as usize } else { 0 };
        // SAFETY: two valid pollfds, a valid timespec or none, no signal mask.
        let n = unsafe { syscall(nr::PPOLL, (&raw mut fds) as usize, 2, timeout, 0) };
        if n < 0 {
            continue;
        }
        if fds[1].revents != 0 {
            // End of file, an error, or not open at all: no host to answer to.
            init.kill_all();
            exit(HOST_GONE);
        }
        loop {
            // SAFETY: reads one 128-byte signalfd_siginfo into a valid local.
            let got = unsafe { syscall(nr::READ, sfd as usize, (&raw mut info) as usize, 128, 0) };
            if got != 128 {
                break;
            }
            let signal = info[0];
            if signal == END && init.reaps {
                init.kill_all();
                init.finish();
            }
            if signal != SIGCHLD {
                // SAFETY: kill takes integers; to the plugin's group, or the
                // plugin alone if it left its group.
                unsafe {
                    if syscall(
                        nr::KILL,
                        (child as isize).wrapping_neg() as usize,
                        signal as usize,
                        0,
                        0,
                    ) < 0
                    {
                        syscall(nr::KILL, child, signal as usize, 0, 0);
                    }
                }
            }
        }
    }
}

/// Whether a wait status is an end (an exit or a killing signal), not a
/// stop: a child that traces itself reports its stops to this process.
fn ended(status: i32) -> bool {
    // A stop (and a continuation) has 0x7f in its low seven bits.
    status & 0x7f != 0x7f
}

/// The mode `argv[2]` names: 1 for `reap`, 2 for `reap-scoped`, else 0.
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn mode(s: *const u8) -> u8 {
    // SAFETY: as the caller promises.
    unsafe {
        if equals(s, b"reap\0") {
            1
        } else if equals(s, b"reap-scoped\0") {
            2
        } else {
            0
        }
    }
}

/// Whether `s`, a NUL-terminated string or null, is `want` (which ends in
/// its NUL).
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn equals(s: *const u8, want: &[u8]) -> bool {
    if s.is_null() {
        return false;
    }
    for (i, w) in want.iter().enumerate() {
        // SAFETY: within the string: it stops at the first byte that
        // differs, and a NUL inside `s` differs from `want`'s bytes before
        // its own NUL.
        if unsafe { *s.add(i) } != *w {
            return false;
        }
    }
    true
}

/// Whether the signal scope holds: the host (this process's parent, of the
/// same user) refuses its signal. Anything else, and `kill(-1)` is never
/// sent: unscoped, it would reach every process of the user.
fn scope_holds() -> bool {
    // SAFETY: getppid and kill (signal 0: a check only) take integers.
    unsafe {
        let parent = syscall(nr::GETPPID, 0, 0, 0, 0);
        parent > 1 && syscall(nr::KILL, parent as usize, 0, 0, 0) == -EPERM
    }
}

/// The plugin, and what this process knows of its end.
struct Init {
    child: usize,
    /// A child subreaper outside any PID namespace (`argv[2]` is `reap`).
    reaps: bool,
    /// In a domain that scopes signals, checked ([`scope_holds`]).
    scoped: bool,
    /// The plugin's wait status, once it was reaped.
    status: Option<i32>,
}

impl Init {
    /// Ends what the plugin left (when this process reaps), writes the
    /// plugin's wait status for the host, and exits, which ends the
    /// namespace where there is one.
    fn finish(&mut self) -> ! {
        self.kill_all();
        // Killed by the host's END before it was seen to end: as SIGKILL.
        let status = self.status.unwrap_or(SIGKILL as i32);
        // SAFETY: writes the 4 bytes of a valid local.
        unsafe { syscall(nr::WRITE, STATUS_FD, (&raw const status) as usize, 4, 0) };
        exit(0)
    }

    /// Where this process reaps: kills what is left of the plugin's tree
    /// and reaps it, again until it has no child. A child subreaper gets
    /// every orphan of the plugin's tree, so once it has no child, nothing
    /// of that tree is left (nothing can leave it: `CLONE_PARENT` is
    /// refused to a plugin). Scoped, one `kill(-1)` reaches the whole tree;
    /// otherwise the children the kernel lists (`/proc/thread-self/children`)
    /// are killed one by one, each while still unreaped, so its pid is its own.
    fn kill_all(&mut self) {
        if !self.reaps {
            return;
        }
        // Never a blocking wait: a child's zombie its tracer holds, or one
        // reparented here after the listing, would keep it waiting for
        // good. A bounded number of rounds, so that a tree that outruns
        // the one-by-one killer cannot hold the host's call for ever.
        for _ in 0..KILL_ROUNDS {
            let listed = if self.scoped {
                // SAFETY: kill takes integers; -1 is every process this
                // one may signal, which the scope keeps to its tree.
                unsafe { syscall(nr::KILL, usize::MAX, SIGKILL, 0, 0) };
                0
            } else {
                kill_children()
            };
            loop {
                let mut status: i32 = 0;
                // SAFETY: wait4 writes the status into a valid local.
                let pid = unsafe {
                    syscall(nr::WAIT4, usize::MAX, (&raw mut status) as usize, WNOHANG, 0)
                };
                if pid == -EINTR {
                    continue;
                }
                if pid == self.child as isize && ended(status) {
                    self.status = Some(status);
                }
                if pid < 0 {
                    // ECHILD: none left at all.
                    return;
                }
                if pid == 0 {
                    break;
                }
            }
            if listed < 0 {
                // The kernel cannot list them: reaping is all that is left.
                return;
            }
            // Killed but not yet gone, or an orphan on its way here.
            pause();
        }
    }
}

/// Sends `SIGKILL` to every child the kernel lists for this process;
/// returns how many, or -1 if the list cannot be read.
fn kill_children() -> isize {
    // SAFETY: a NUL-terminated path and integer flags.
    let fd = unsafe {
        syscall(
            nr::OPENAT,
            AT_FDCWD as usize,
            c"/proc/thread-self/children".as_ptr() as usize,
            O_RDONLY_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return -1;
    }
    // Small enough to need no `memset`, which there is no libc to give.
    let mut buf = [0u8; 128];
    let (mut pid, mut digits, mut killed) = (0usize, 0usize, 0isize);
    loop {
        // SAFETY: reads into a valid local buffer of its length.
        let n = unsafe { syscall(nr::READ, fd as usize, (&raw mut buf) as usize, buf.len(), 0) };
        if n == -EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        // Numbers split by spaces; one may run on into the next read.
        // No slice index: its bounds check would pull in the unwinder.
        for &c in buf.iter().take(n as usize) {
            if c.is_ascii_digit() && digits < 10 {
                pid = pid * 10 + usize::from(c - b'0');
                digits += 1;
                continue;
            }
            if digits > 0 {
                killed += kill(pid);
            }
            (pid, digits) = (0, 0);
        }
    }
    if digits > 0 {
        killed += kill(pid);
    }
    // SAFETY: closes the descriptor opened above.
    unsafe { syscall(nr::CLOSE, fd as usize, 0, 0, 0) };
    killed
}

/// Sends `SIGKILL` to the child `pid`; 1 if it was one to send to. Never
/// to 0, 1 or a number past the kernel's largest pid (`PID_MAX_LIMIT`),
/// which the kernel would read as a group or as every process.
fn kill(pid: usize) -> isize {
    if pid < 2 || pid > 1 << 22 {
        return 0;
    }
    // SAFETY: kill takes integers.
    unsafe { syscall(nr::KILL, pid, SIGKILL, 0, 0) };
    1
}

/// Waits a millisecond.
fn pause() {
    let millisecond = [0usize, 1_000_000];
    // SAFETY: no descriptors, a valid timespec, no signal mask.
    unsafe { syscall(nr::PPOLL, 0, 0, (&raw const millisecond) as usize, 0) };
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    exit(BAD_ARGUMENTS)
}
