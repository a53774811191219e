//! Hand-written classic-BPF seccomp programs, where Landlock covers only TCP.
//!
//! [`deny_sockets`], for a plugin without `network`:
//! - a system call from another table (i386 or x32 on x86-64, arm32 on arm64)
//!   kills the process: those tables number `socket` differently, and a filter
//!   that let them through would be bypassed by a 32-bit program;
//! - `socket(2)` fails with `EACCES`, whatever the family: UDP, raw and packet
//!   sockets, netlink, and unix sockets (local daemons such as `ssh-agent` or
//!   `docker.sock` are network too). `socketpair(2)` stays allowed, so a plugin
//!   can still talk to its own children;
//! - `io_uring_setup(2)` fails with `ENOSYS` (io_uring can create sockets
//!   without the `socket` system call; runtimes fall back to plain system calls);
//! - everything else is allowed.
//!
//! [`tcp_only`], for a plugin with host grants (`network:HOST`): the same,
//! but `socket(2)` is allowed for TCP over IPv4 and IPv6 (`SOCK_STREAM`,
//! protocol 0 or `IPPROTO_TCP`), the one kind of socket that reaches the
//! egress proxy. No UDP (so no DNS but through the proxy), no raw or packet
//! sockets, no unix sockets (a local daemon could carry data elsewhere), no
//! SCTP or MPTCP (which Landlock's TCP rules do not see).
//!
//! This file only assembles the programs; installing them is in `linux.rs`.

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
const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// The bits of `socket(2)`'s type that say the kind of socket (the rest are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u32 = 0xf;

/// Where a check jumps: one of the return instructions that close the
/// program, at its index in [`RETURNS`], or ahead by some instructions.
#[derive(Clone, Copy)]
enum Go {
    Next,
    Skip(u8),
    Allow,
    Eacces,
    Enosys,
    Kill,
}

const RETURNS: [u32; 4] = [
    libc::SECCOMP_RET_ALLOW,
    libc::SECCOMP_RET_ERRNO | libc::EACCES as u32,
    libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
    libc::SECCOMP_RET_KILL_PROCESS,
];

/// Whether this architecture has a filter.
pub(crate) fn supported() -> bool {
    NATIVE_ARCH.is_some()
}

/// The program that denies sockets, or `None` on an architecture it does not know.
pub(crate) fn deny_sockets() -> Option<Vec<sock_filter>> {
    let mut body = head()?;
    body.push((JUMP_EQ, libc::SYS_socket as u32, Go::Eacces, Go::Next));
    Some(assemble(body))
}

/// The program that allows only TCP sockets, or `None` on an architecture
/// it does not know.
pub(crate) fn tcp_only() -> Option<Vec<sock_filter>> {
    let mut body = head()?;
    body.extend([
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
    ]);
    Some(assemble(body))
}

/// One instruction before assembly: (opcode, constant, where to go when the
/// comparison holds, when it fails).
type Step = (u16, u32, Go, Go);

/// What both programs start with: foreign tables killed, `io_uring` refused,
/// the call's number loaded.
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
    body.push((
        JUMP_EQ,
        libc::SYS_io_uring_setup as u32,
        Go::Enosys,
        Go::Next,
    ));
    Some(body)
}

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
        };
        u8::try_from(end + target - (from + 1)).expect("a short program")
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
                JUMP_EQ | JUMP_GE => {
                    let hit = if ins.code == JUMP_EQ {
                        acc == ins.k
                    } else {
                        acc >= ins.k
                    };
                    pc += usize::from(if hit { ins.jt } else { ins.jf });
                }
                RETURN => return ins.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    #[test]
    fn the_program_denies_sockets_and_foreign_tables_only() {
        let p = deny_sockets().unwrap();
        let native = NATIVE_ARCH.unwrap();
        let call = |nr| run(&p, native, nr, [0; 3]);
        assert_eq!(call(libc::SYS_read as u32), RETURNS[0]);
        assert_eq!(call(libc::SYS_socketpair as u32), RETURNS[0]);
        assert_eq!(call(libc::SYS_connect as u32), RETURNS[0]);
        assert_eq!(call(libc::SYS_socket as u32), RETURNS[1]);
        assert_eq!(call(libc::SYS_io_uring_setup as u32), RETURNS[2]);
        assert_eq!(call(X32_SYSCALL_BIT | 41), RETURNS[3]);
        assert_eq!(run(&p, 0x4000_0003, 102, [0; 3]), RETURNS[3]);
    }

    #[test]
    fn the_tcp_program_allows_tcp_sockets_only() {
        let p = tcp_only().unwrap();
        let native = NATIVE_ARCH.unwrap();
        let socket = |family: i32, kind: i32, proto: i32| {
            run(
                &p,
                native,
                libc::SYS_socket as u32,
                [family as u32, kind as u32, proto as u32],
            )
        };
        let stream = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        assert_eq!(socket(libc::AF_INET, stream, 0), RETURNS[0]);
        assert_eq!(
            socket(libc::AF_INET6, libc::SOCK_STREAM, libc::IPPROTO_TCP),
            RETURNS[0]
        );
        assert_eq!(socket(libc::AF_INET, libc::SOCK_DGRAM, 0), RETURNS[1]);
        assert_eq!(socket(libc::AF_INET, libc::SOCK_RAW, 1), RETURNS[1]);
        assert_eq!(socket(libc::AF_UNIX, libc::SOCK_STREAM, 0), RETURNS[1]);
        assert_eq!(socket(libc::AF_PACKET, libc::SOCK_RAW, 0), RETURNS[1]);
        assert_eq!(socket(libc::AF_INET, libc::SOCK_STREAM, 262), RETURNS[1]);
        assert_eq!(
            socket(libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_SCTP),
            RETURNS[1]
        );
        assert_eq!(
            run(&p, native, libc::SYS_connect as u32, [0; 3]),
            RETURNS[0]
        );
        assert_eq!(
            run(&p, native, libc::SYS_io_uring_setup as u32, [0; 3]),
            RETURNS[2]
        );
        assert_eq!(run(&p, 0x4000_0003, 102, [0; 3]), RETURNS[3]);
    }
}
