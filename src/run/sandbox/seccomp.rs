//! A hand-written classic-BPF seccomp program that denies a plugin without
//! `network` every socket, where Landlock covers only TCP.
//!
//! The program, for the native architecture:
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
//! This file only assembles the program; installing it is in `linux.rs`.

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

// Offsets in `struct seccomp_data`.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

const LOAD_WORD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JUMP_EQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JUMP_GE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Where a check jumps: one of the return instructions that close the program,
/// at its index in [`RETURNS`]. Allow, at 0, is reached by falling through.
#[derive(Clone, Copy)]
enum Verdict {
    Eacces = 1,
    Enosys = 2,
    Kill = 3,
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
    let arch = NATIVE_ARCH?;
    // (opcode, constant, where to go when the comparison holds, when it fails);
    // `None` goes on to the next instruction.
    let mut body: Vec<(u16, u32, Option<Verdict>, Option<Verdict>)> = vec![
        (LOAD_WORD, OFFSET_ARCH, None, None),
        (JUMP_EQ, arch, None, Some(Verdict::Kill)),
        (LOAD_WORD, OFFSET_NR, None, None),
    ];
    if cfg!(target_arch = "x86_64") {
        body.push((JUMP_GE, X32_SYSCALL_BIT, Some(Verdict::Kill), None));
    }
    body.push((
        JUMP_EQ,
        libc::SYS_socket as u32,
        Some(Verdict::Eacces),
        None,
    ));
    body.push((
        JUMP_EQ,
        libc::SYS_io_uring_setup as u32,
        Some(Verdict::Enosys),
        None,
    ));

    let end = body.len();
    // Jump offsets count from the next instruction.
    let offset = |from: usize, to: Option<Verdict>| {
        to.map_or(0, |v| {
            u8::try_from(end + v as usize - (from + 1)).expect("a short program")
        })
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
    // Falling off the checks lands on Allow, the first return.
    for ret in RETURNS {
        program.push(sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: ret,
        });
    }
    Some(program)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Runs the program on one `seccomp_data` (arch, nr), as the kernel would.
    fn run(program: &[sock_filter], arch: u32, nr: u32) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let ins = program[pc];
            pc += 1;
            match ins.code {
                LOAD_WORD => acc = if ins.k == OFFSET_ARCH { arch } else { nr },
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
        assert_eq!(run(&p, native, libc::SYS_read as u32), RETURNS[0]);
        assert_eq!(run(&p, native, libc::SYS_socketpair as u32), RETURNS[0]);
        assert_eq!(run(&p, native, libc::SYS_connect as u32), RETURNS[0]);
        assert_eq!(run(&p, native, libc::SYS_socket as u32), RETURNS[1]);
        assert_eq!(run(&p, native, libc::SYS_io_uring_setup as u32), RETURNS[2]);
        assert_eq!(run(&p, native, X32_SYSCALL_BIT | 41), RETURNS[3]);
        assert_eq!(run(&p, 0x4000_0003, 102), RETURNS[3]);
    }
}
