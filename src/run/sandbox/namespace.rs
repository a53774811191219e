//! The Linux seam of the namespaces: a user namespace for the host, and in
//! it a network namespace per plugin version with host grants and a mount
//! namespace per confinement that keeps project files read-only. Every
//! `unsafe` of the namespaces lives here.
//!
//! # Why namespaces, and which
//!
//! Landlock only grants: it cannot keep `.git/hooks` out of a write grant
//! of the project that holds it without forbidding new files beside it, and
//! its TCP rules know ports, not addresses. Where unprivileged user
//! namespaces work, both are done by the kernel instead:
//! - a **network namespace** with only `lo` (up), in which plughost's egress
//!   proxy listens on `127.0.0.1`: the listening socket is made inside the
//!   namespace and handed to the host, whose proxy accepts on it. A plugin
//!   there reaches the proxy and nothing else, whatever it does with its
//!   sockets. No forwarder process, no second hop;
//! - an **IPC namespace** per confinement: SysV shared memory, semaphores
//!   and message queues of its own, out of reach of the user's other
//!   processes (Landlock and seccomp do not see those objects);
//! - a **mount namespace** in which every mount is read-only but what the
//!   plugin may write (bind-mounted writable onto itself): Landlock has no
//!   right for a file's mode, owner, times or extended attributes, which a
//!   read-only mount refuses to change. In it, too, the project files that
//!   run code later are bind-mounted read-only onto themselves, and the
//!   folders holding them (`.git`, `.vscode`…) bind-mounted onto themselves,
//!   so that they cannot be renamed away and replaced (a mount point cannot
//!   be renamed or removed in its namespace).
//!
//! # How they are made, and held
//!
//! Each is made once, by a short-lived forked child (the *preparer*): a
//! multi-threaded host cannot `unshare` a user namespace itself. The child
//! makes only raw system calls (no allocation, no lock: the host's other
//! threads are gone in it), sends the namespace's `/proc/self/ns/…`
//! descriptor (and the listening socket) back over a socket pair with
//! `SCM_RIGHTS`, and exits. The host holds the namespaces by those
//! descriptors alone: no process lingers, nothing needs reaping at shutdown,
//! and a namespace ends when its last descriptor closes.
//!
//! The user namespace is made once per host process and maps the host's
//! own user onto itself (root: every id onto itself), so files keep their
//! owners. Network and mount namespaces are made inside it (the preparer
//! joins it first), so one `setns` into it gives a spawned child the right
//! to join them. A spawned child joins user, mount, then network namespace
//! between `clone` and `exec` ([`join`]); `child.rs` then drops every
//! capability that gives it (mounting, network administration), from
//! every set, before `exec`.
//!
//! # Caveats
//! - The mount namespace is a copy of the host's at the time it was made.
//!   Where it is read-only but for the plugin's writes (the namespace
//!   level's default), it is private: later mounts of the host never reach
//!   it, since they would arrive writable; a plugin sees a file system
//!   mounted since only once its confinement is prepared again. Otherwise
//!   later mounts reach it as slave mounts (propagation from the host).
//! - A project file that did not exist when the namespace was made (a new
//!   `.mcp.json`) is not read-only until the confinement is prepared again.
//! - Renaming the project folder itself is not prevented.

use std::ffi::{CStr, CString};
use std::io;
use std::mem::{MaybeUninit, size_of};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::ptr;
use std::sync::LazyLock;
use std::time::Duration;

/// `struct mount_attr` from `linux/mount.h`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 1;
/// `struct open_how` of openat2(2) (the libc crate's cannot be built).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

// The new mount API's flags (linux/mount.h; not all in the libc crate).
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
const SIOCSIFFLAGS: libc::c_ulong = 0x8914;

/// `struct ifreq` as `SIOC[GS]IFFLAGS` use it.
#[repr(C)]
struct IfFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// How long the host waits for a preparer before it gives up.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// The host's user namespace, made on first use; the error says why it
/// could not be made (a distribution that forbids unprivileged ones…).
static USER: LazyLock<Result<OwnedFd, String>> = LazyLock::new(|| {
    let job = Job::bare(None, libc::CLONE_NEWUSER, c"/proc/self/ns/user");
    prepare(&job)
        .map(|(ns, _)| ns)
        .map_err(|e| format!("cannot make a user namespace: {e}"))
});

/// Whether namespaces can be made here: a user namespace, and a network
/// namespace in it (probed once).
pub(crate) fn available() -> Result<(), String> {
    static PROBE: LazyLock<Result<(), String>> =
        LazyLock::new(|| network().map(drop).map_err(|e| e.to_string()));
    PROBE.clone()
}

/// A new network namespace with only `lo`, up, and a socket listening on
/// `127.0.0.1` in it (port chosen by the kernel).
pub(crate) fn network() -> io::Result<(OwnedFd, std::net::TcpListener)> {
    let user = user()?;
    let job = Job {
        network: true,
        ..Job::bare(Some(user), libc::CLONE_NEWNET, c"/proc/self/ns/net")
    };
    let (ns, listener) = prepare(&job)?;
    let listener = listener.ok_or_else(|| io::Error::other("the preparer sent no socket"))?;
    Ok((ns, std::net::TcpListener::from(listener)))
}

/// A new mount namespace in which, with `granted`, every mount is made
/// read-only and then `granted` (outer paths first) mounted writable onto
/// themselves; then `pinned` (folders) are mounted onto themselves, then
/// `read_only` read-only onto themselves, outer paths first, then
/// `writable` (folders inside those) writable again.
pub(crate) fn mounts(
    granted: Option<&[PathBuf]>,
    read_only: &[PathBuf],
    pinned: &[PathBuf],
    writable: &[PathBuf],
) -> io::Result<OwnedFd> {
    let user = user()?;
    let c = |p: &PathBuf| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::other(format!("{} contains a NUL byte", p.display())))
    };
    let job = Job {
        join_user: Some(user),
        unshare: libc::CLONE_NEWNS,
        network: false,
        whole_read_only: granted.is_some(),
        granted: granted
            .unwrap_or_default()
            .iter()
            .map(c)
            .collect::<io::Result<_>>()?,
        pinned: pinned.iter().map(c).collect::<io::Result<_>>()?,
        read_only: read_only.iter().map(c).collect::<io::Result<_>>()?,
        writable: writable.iter().map(c).collect::<io::Result<_>>()?,
        ns: c"/proc/self/ns/mnt",
    };
    prepare(&job).map(|(ns, _)| ns)
}

/// A new IPC namespace: SysV shared memory, semaphores and message queues
/// (and POSIX message queues) of its own, so that a plugin reaches none of
/// the objects of the user's other processes, and leaves none behind
/// (they go with the namespace).
pub(crate) fn ipc() -> io::Result<OwnedFd> {
    let user = user()?;
    let job = Job::bare(Some(user), libc::CLONE_NEWIPC, c"/proc/self/ns/ipc");
    prepare(&job).map(|(ns, _)| ns)
}

/// The host's user namespace, as a descriptor valid for the host's life.
pub(crate) fn user() -> io::Result<RawFd> {
    match &*USER {
        Ok(fd) => Ok(fd.as_raw_fd()),
        Err(e) => Err(io::Error::other(e.clone())),
    }
}

/// The namespaces a spawned child joins, as descriptors (`-1`: none).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Joins {
    pub user: RawFd,
    pub mnt: RawFd,
    pub net: RawFd,
    pub ipc: RawFd,
}

/// The child's half: joins `joins`' namespaces, user first (the
/// capabilities that gives it are dropped by `child::enforce` before
/// `exec`). Returns 0 or the failing call's errno.
///
/// Runs between `clone` and `exec`: raw system calls only. Joining a mount
/// namespace moves the current folder to its root: the caller changes
/// folder afterwards.
pub(crate) fn join(joins: &Joins) -> i32 {
    for (fd, kind) in [
        (joins.user, libc::CLONE_NEWUSER),
        (joins.mnt, libc::CLONE_NEWNS),
        (joins.net, libc::CLONE_NEWNET),
        (joins.ipc, libc::CLONE_NEWIPC),
    ] {
        if fd < 0 {
            continue;
        }
        // SAFETY: setns takes a descriptor the parent keeps open across the
        // spawn and a flag; it touches no memory of ours.
        if unsafe { libc::setns(fd, kind) } != 0 {
            return errno();
        }
    }
    0
}

fn errno() -> i32 {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    let e = unsafe { *libc::__errno_location() };
    if e == 0 { libc::ECHILD } else { e }
}

/// What a preparer does, built before the fork (it allocates nothing after).
struct Job {
    /// The user namespace to join first.
    join_user: Option<RawFd>,
    /// The namespaces to make (`CLONE_NEW…`).
    unshare: libc::c_int,
    /// Bring `lo` up and listen on `127.0.0.1`.
    network: bool,
    /// Make every mount read-only, then `granted` writable again: what
    /// the plugin may write (Landlock decides the rest) is all it can change
    /// the mode, owner, times or extended attributes of.
    whole_read_only: bool,
    /// Files and folders bind-mounted onto themselves, writable, after the
    /// whole tree was made read-only.
    granted: Vec<CString>,
    /// Folders bind-mounted onto themselves.
    pinned: Vec<CString>,
    /// Files and folders bind-mounted onto themselves, read-only.
    read_only: Vec<CString>,
    /// Folders inside those bind-mounted onto themselves, writable.
    writable: Vec<CString>,
    /// The namespace file sent back.
    ns: &'static CStr,
}

impl Job {
    /// Joins `join_user`, makes `unshare`, sends `ns` back: nothing else.
    fn bare(join_user: Option<RawFd>, unshare: libc::c_int, ns: &'static CStr) -> Job {
        Job {
            join_user,
            unshare,
            network: false,
            whole_read_only: false,
            granted: Vec::new(),
            pinned: Vec::new(),
            read_only: Vec::new(),
            writable: Vec::new(),
            ns,
        }
    }
}

/// The step of a preparer that failed, as it reports it.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Step {
    JoinUser = 1,
    Unshare,
    Wait,
    Private,
    Pin,
    ReadOnly,
    Writable,
    Loopback,
    Listen,
    Open,
    Send,
    Root,
    Granted,
}

impl Step {
    fn describe(n: u8) -> &'static str {
        match n {
            1 => "join the host's user namespace",
            2 => "make the namespace",
            3 => "wait for the user mapping",
            4 => "keep its mounts from reaching the host",
            5 => "pin a folder",
            6 => "make a protected path read-only",
            7 => "make the plugin's own folder writable",
            8 => "bring up the loopback interface",
            9 => "listen on 127.0.0.1",
            10 => "open the namespace",
            11 => "send it to the host",
            12 => "make every mount read-only",
            _ => "make a granted path writable",
        }
    }
}

/// Forks a preparer that runs `job`, maps the user namespace it makes (if
/// it makes one), and takes what it sends: the namespace descriptor and,
/// for a network job, the listening socket.
///
/// Blocks the calling thread until the preparer is done (a few
/// milliseconds: a fork and a dozen system calls), at most
/// [`PREPARE_TIMEOUT`]. The fork copies the host's page tables: once per
/// plugin version, not per call.
fn prepare(job: &Job) -> io::Result<(OwnedFd, Option<OwnedFd>)> {
    let mut pair = [0 as libc::c_int; 2];
    // SAFETY: `pair` is a valid array of two ints, which socketpair fills.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            pair.as_mut_ptr(),
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair returned two new descriptors that nothing else owns.
    let (host, child) = unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
    // SAFETY: fork has no preconditions; the child runs `preparer`, which
    // makes only async-signal-safe system calls on data built before the
    // fork and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        preparer(job, child.as_raw_fd());
    }
    drop(child);
    let result = talk(job, &host, pid);
    if result.is_err() {
        // SAFETY: kill takes a pid and a signal; the child is ours and unreaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    reap(pid);
    result
}

/// The host's side of a preparer: the user mapping when it made a user
/// namespace, then its answer.
fn talk(job: &Job, host: &OwnedFd, pid: libc::pid_t) -> io::Result<(OwnedFd, Option<OwnedFd>)> {
    if job.unshare & libc::CLONE_NEWUSER != 0 {
        let (tag, _, _) = receive(host)?;
        if tag.first() != Some(&b'u') {
            return Err(failure(job, &tag));
        }
        map_user(pid)?;
        send_byte(host, b'g')?;
    }
    let (tag, ns, socket) = receive(host)?;
    match (tag.first(), ns) {
        (Some(b'k'), Some(ns)) => Ok((ns, socket)),
        _ => Err(failure(job, &tag)),
    }
}

/// Maps the host's user (and group) onto itself in the namespace of `pid`;
/// root maps every id onto itself, as it may.
fn map_user(pid: libc::pid_t) -> io::Result<()> {
    // SAFETY: geteuid and getegid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let write = |file: &str, text: &str| {
        std::fs::write(proc.join(file), text)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot write {file}: {e}")))
    };
    if uid == 0 {
        write("uid_map", "0 0 4294967295\n")?;
        write("gid_map", "0 0 4294967295\n")
    } else {
        write("setgroups", "deny")?;
        write("uid_map", &format!("{uid} {uid} 1\n"))?;
        write("gid_map", &format!("{gid} {gid} 1\n"))
    }
}

/// The error a preparer reported (`e`, step, errno, the index of the path
/// in that step's list of `job`), or that it ended without a word.
fn failure(job: &Job, message: &[u8]) -> io::Error {
    match message {
        [b'e', step, e0, e1, e2, e3, i0, i1, i2, i3] => {
            let errno = i32::from_ne_bytes([*e0, *e1, *e2, *e3]);
            let e = io::Error::from_raw_os_error(errno);
            let index = u32::from_ne_bytes([*i0, *i1, *i2, *i3]) as usize;
            let paths = match *step {
                s if s == Step::Granted as u8 => &job.granted,
                s if s == Step::Pin as u8 => &job.pinned,
                s if s == Step::ReadOnly as u8 => &job.read_only,
                s if s == Step::Writable as u8 => &job.writable,
                _ => &Vec::new(),
            };
            let path = paths
                .get(index)
                .map(|p| format!(" {}", String::from_utf8_lossy(p.as_bytes())))
                .unwrap_or_default();
            let text = format!("cannot {}{path}: {e}", Step::describe(*step));
            io::Error::new(e.kind(), StepFailed { errno, text })
        }
        _ => io::Error::other("the namespace preparer ended without an answer"),
    }
}

/// A step of the preparer that failed, with the kernel's errno.
#[derive(Debug)]
struct StepFailed {
    errno: i32,
    text: String,
}

impl std::fmt::Display for StepFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for StepFailed {}

/// Whether the preparer failed because a path it mounts became a link
/// (`ELOOP`), or went away, since it was judged: what a plugin racing it
/// would cause, not what a system without support gives.
pub(crate) fn path_changed(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<StepFailed>())
        .is_some_and(|f| matches!(f.errno, libc::ELOOP | libc::ENOENT | libc::ENOTDIR))
}

/// One message from the preparer, with the descriptors it carries (the
/// namespace, then the socket).
fn receive(sock: &OwnedFd) -> io::Result<(Vec<u8>, Option<OwnedFd>, Option<OwnedFd>)> {
    let mut poll = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let timeout = PREPARE_TIMEOUT.as_millis() as libc::c_int;
    // SAFETY: `poll` is one valid pollfd for the whole call.
    let n = unsafe { libc::poll(&mut poll, 1, timeout) };
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the namespace preparer did not answer",
        ));
    }
    let mut data = [0u8; 16];
    let mut control = Control([0; 8]);
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // SAFETY: an all-zero msghdr is valid; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<Control>() as _;
    // SAFETY: `msg` points to `iov`, `data` and `control`, all alive for
    // the call, with their true lengths.
    let len = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if len < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // within `msg_controllen`; SCM_RIGHTS data is an array of ints.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let n = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / size_of::<i32>();
                let data = libc::CMSG_DATA(cmsg).cast::<i32>();
                for i in 0..n {
                    fds.push(OwnedFd::from_raw_fd(ptr::read_unaligned(data.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    let mut fds = fds.into_iter();
    Ok((data[..len as usize].to_vec(), fds.next(), fds.next()))
}

/// Room for one control message of up to four descriptors, aligned.
#[repr(C, align(8))]
struct Control([u64; 8]);

fn send_byte(sock: &OwnedFd, byte: u8) -> io::Result<()> {
    // SAFETY: one byte from a valid local.
    let n = unsafe { libc::send(sock.as_raw_fd(), (&raw const byte).cast(), 1, 0) };
    if n == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn reap(pid: libc::pid_t) {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only into `status`, a valid local.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// The preparer: runs `job` and reports on `sock`, then exits.
///
/// In a forked child of a multi-threaded host: only system calls through
/// libc on data built before the fork; no allocation, no lock, no unwinding.
fn preparer(job: &Job, sock: RawFd) -> ! {
    // The failing step, its errno and which of its paths (`u32::MAX`: none).
    let fail_at = |step: Step, index: u32| -> ! {
        let e = errno().to_ne_bytes();
        let i = index.to_ne_bytes();
        let message = [
            b'e', step as u8, e[0], e[1], e[2], e[3], i[0], i[1], i[2], i[3],
        ];
        // SAFETY: sends a local array and exits; nothing is unwound.
        unsafe {
            libc::send(sock, message.as_ptr().cast(), message.len(), 0);
            libc::_exit(1)
        }
    };
    let fail = |step: Step| -> ! { fail_at(step, u32::MAX) };
    // SAFETY: each call below is a libc wrapper of one system call, given
    // descriptors the child owns, pointers to the job's strings (built
    // before the fork and unchanged since), or locals of this frame.
    unsafe {
        if let Some(user) = job.join_user
            && libc::setns(user, libc::CLONE_NEWUSER) != 0
        {
            fail(Step::JoinUser);
        }
        if libc::unshare(job.unshare) != 0 {
            fail(Step::Unshare);
        }
        if job.unshare & libc::CLONE_NEWUSER != 0 {
            let mut go = 0u8;
            if libc::send(sock, b"u".as_ptr().cast(), 1, 0) != 1
                || libc::recv(sock, (&raw mut go).cast(), 1, 0) != 1
            {
                fail(Step::Wait);
            }
        }
        if job.unshare & libc::CLONE_NEWNS != 0 {
            let none = ptr::null::<libc::c_char>();
            // A read-only tree is private: a mount the host makes later
            // would arrive here writable (a USB drive, an sshfs folder, an
            // automount the plugin triggers), so none arrives at all.
            let propagation = if job.whole_read_only {
                libc::MS_PRIVATE
            } else {
                libc::MS_SLAVE
            };
            if libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | propagation,
                ptr::null(),
            ) != 0
            {
                fail(Step::Private);
            }
            if job.whole_read_only && set_read_only(c"/".as_ptr(), true) != 0 {
                fail(Step::Root);
            }
            // Each path bind-mounted onto itself, then made writable
            // (`Some(false)`), read-only (`Some(true)`) or left as it is.
            let phases: [(&[CString], Option<bool>, Step); 4] = [
                (&job.granted, Some(false), Step::Granted),
                (&job.pinned, None, Step::Pin),
                (&job.read_only, Some(true), Step::ReadOnly),
                (&job.writable, Some(false), Step::Writable),
            ];
            for (paths, read_only, step) in phases {
                for (i, path) in (0u32..).zip(paths) {
                    let p = path.as_ptr();
                    if matches!(step, Step::Granted) {
                        match bind_writable(p) {
                            0 => continue,
                            _ if errno() == libc::ENOSYS => {}
                            // Gone, or now reached through a link, since it
                            // was judged (a folder beside a protected path
                            // that someone removed, a folder the plugin
                            // swapped): it stays read-only with the rest of
                            // the tree, which gives nobody more.
                            _ if matches!(errno(), libc::ENOENT | libc::ELOOP | libc::ENOTDIR) => {
                                continue;
                            }
                            _ => fail_at(step, i),
                        }
                    }
                    if libc::mount(p, p, none, libc::MS_BIND | libc::MS_REC, ptr::null()) != 0 {
                        fail_at(step, i);
                    }
                    if let Some(on) = read_only
                        && set_read_only(p, on) != 0
                    {
                        fail_at(step, i);
                    }
                }
            }
        }
        let mut listener = -1;
        if job.network {
            if loopback_up() != 0 {
                fail(Step::Loopback);
            }
            listener = listen_loopback();
            if listener < 0 {
                fail(Step::Listen);
            }
        }
        let ns = libc::open(job.ns.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if ns < 0 {
            fail(Step::Open);
        }
        let fds = [ns, listener];
        let count = if listener >= 0 { 2 } else { 1 };
        if send_fds(sock, &fds[..count]) != 0 {
            fail(Step::Send);
        }
        libc::_exit(0)
    }
}

/// Bind-mounts `path` writable onto itself through one descriptor, opened
/// with no symbolic link on the way: the plugin may be running and may
/// swap a folder it can write for a link after the path was judged, and a
/// bind by path would then make wherever the link leads writable. 0, or -1
/// with `ENOSYS` before Linux 5.12 (the caller binds by path), or another
/// error.
///
/// # Safety
/// `path` is a NUL-terminated string.
unsafe fn bind_writable(path: *const libc::c_char) -> libc::c_int {
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: `how` is a valid open_how of the size passed; `path` is a
    // NUL-terminated string (the caller's promise).
    let at = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path,
            &how as *const OpenHow,
            size_of::<OpenHow>(),
        )
    } as libc::c_int;
    if at < 0 {
        return -1;
    }
    let attr = MountAttr {
        attr_set: 0,
        attr_clr: MOUNT_ATTR_RDONLY,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: system calls on `at`, a descriptor this function owns and
    // closes, the detached tree it clones (closed too), empty C strings
    // and `attr`, a valid mount_attr of the size passed.
    unsafe {
        let empty = c"".as_ptr();
        let tree = libc::syscall(
            libc::SYS_open_tree,
            at,
            empty,
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | libc::AT_EMPTY_PATH as libc::c_uint
                | libc::AT_RECURSIVE as libc::c_uint,
        ) as libc::c_int;
        let made = tree >= 0
            && libc::syscall(
                libc::SYS_mount_setattr,
                tree,
                empty,
                libc::AT_EMPTY_PATH,
                &attr as *const MountAttr,
                size_of::<MountAttr>(),
            ) == 0
            && libc::syscall(
                libc::SYS_move_mount,
                tree,
                empty,
                at,
                empty,
                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
            ) == 0;
        let rc = if made { 0 } else { -1 };
        let e = errno();
        if tree >= 0 {
            libc::close(tree);
        }
        libc::close(at);
        *libc::__errno_location() = e;
        rc
    }
}

/// Sets (with the mounts below) or clears (the mount alone) the read-only
/// flag of the mount at `path`; 0 or -1.
///
/// # Safety
/// `path` is a NUL-terminated string.
unsafe fn set_read_only(path: *const libc::c_char, on: bool) -> libc::c_int {
    let attr = MountAttr {
        attr_set: if on { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if on { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `attr` is a valid mount_attr of the size passed; `path` is a
    // NUL-terminated string (the caller's promise).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path,
            if on { libc::AT_RECURSIVE } else { 0 },
            &attr as *const MountAttr,
            size_of::<MountAttr>(),
        )
    };
    if rc == 0 || errno() != libc::ENOSYS {
        return rc as libc::c_int;
    }
    // Before Linux 5.12: a remount that keeps the flags the kernel locked
    // (a user namespace may not clear them).
    let mut st = MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: statvfs fills `st`; `path` is NUL-terminated.
    if unsafe { libc::statvfs(path, st.as_mut_ptr()) } != 0 {
        return -1;
    }
    // SAFETY: initialized by the successful statvfs.
    let f = unsafe { st.assume_init() }.f_flag;
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT;
    if on {
        flags |= libc::MS_RDONLY;
    }
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f & st_flag != 0 {
            flags |= ms_flag;
        }
    }
    let none = ptr::null::<libc::c_char>();
    // SAFETY: a remount of `path` with integer flags and no data.
    unsafe { libc::mount(none, path, none, flags, ptr::null()) }
}

/// Brings `lo` up in the current network namespace; 0 or -1.
fn loopback_up() -> libc::c_int {
    // SAFETY: a datagram socket for the ioctls, closed below.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return -1;
    }
    let mut req = IfFlags {
        name: [0; 16],
        flags: 0,
        _rest: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    // SAFETY: `req` is a valid ifreq-sized struct for both calls, which read
    // and write only within it.
    let rc = unsafe {
        if libc::ioctl(s, SIOCGIFFLAGS as _, &mut req) != 0 {
            -1
        } else {
            req.flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(s, SIOCSIFFLAGS as _, &req)
        }
    };
    // SAFETY: `s` is the socket opened above, closed once.
    unsafe { libc::close(s) };
    rc
}

/// A TCP socket listening on `127.0.0.1`, on a port the kernel picks; the
/// descriptor or -1.
fn listen_loopback() -> RawFd {
    // SAFETY: socket takes integers.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return -1;
    }
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `addr` is a valid sockaddr_in of the length passed.
    let bound = unsafe {
        libc::bind(
            s,
            (&raw const addr).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) == 0
            && libc::listen(s, 1024) == 0
    };
    if bound { s } else { -1 }
}

/// Sends `fds` over `sock` with one byte, `k`; 0 or -1.
fn send_fds(sock: RawFd, fds: &[RawFd]) -> libc::c_int {
    let mut data = *b"k";
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = Control([0; 8]);
    let bytes = std::mem::size_of_val(fds) as libc::c_uint;
    // SAFETY: an all-zero msghdr is valid; its pointers are set below to
    // locals that outlive the sendmsg call. The CMSG macros compute within
    // `control`, which has room for four descriptors (at most two here).
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(bytes) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(bytes) as _;
        ptr::copy_nonoverlapping(
            fds.as_ptr(),
            libc::CMSG_DATA(cmsg).cast::<RawFd>(),
            fds.len(),
        );
        if libc::sendmsg(sock, &msg, 0) == 1 {
            0
        } else {
            -1
        }
    }
}

/// The paths a mount namespace keeps read-only and the folders it pins, for
/// the project files `read_only` under the folders a plugin may write
/// (`roots`): each file, and the project's own folders holding it
/// (`.git`, `.vscode`). Outer paths come first.
pub(crate) fn layout(read_only: &[PathBuf], roots: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut pinned: Vec<PathBuf> = Vec::new();
    for path in read_only {
        let Some(root) = roots
            .iter()
            .filter(|r| path.starts_with(r) && path != *r)
            .max_by_key(|r| r.as_os_str().len())
        else {
            continue;
        };
        let mut at = path.parent();
        while let Some(dir) = at {
            if dir == root.as_path() || !dir.starts_with(root) {
                break;
            }
            // The project's own folders (`.git`, `.vscode`); not the project
            // folder itself, whose files would then be on another mount
            // than their neighbours (a move between them fails with EXDEV).
            let hidden = dir
                .file_name()
                .is_some_and(|n| n.as_bytes().first() == Some(&b'.'));
            if hidden && !pinned.iter().any(|p| p == dir) && !read_only.iter().any(|r| r == dir) {
                pinned.push(dir.to_path_buf());
            }
            at = dir.parent();
        }
    }
    outer_first(read_only.to_vec(), pinned)
}

/// `read_only` and `pinned` in the order they are mounted, outer paths
/// first, without what a read-only folder already holds.
pub(crate) fn outer_first(
    mut read_only: Vec<PathBuf>,
    mut pinned: Vec<PathBuf>,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let depth = |p: &PathBuf| p.components().count();
    read_only.sort_by_key(depth);
    read_only.dedup();
    let outer: Vec<PathBuf> = read_only.clone();
    read_only.retain(|p| !outer.iter().any(|o| o != p && p.starts_with(o)));
    pinned.sort_by_key(depth);
    pinned.dedup();
    pinned.retain(|p| !read_only.iter().any(|o| p.starts_with(o)));
    (read_only, pinned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_between_the_grant_and_a_project_file_are_pinned() {
        let p = PathBuf::from;
        let (ro, pinned) = layout(
            &[
                p("/w/site/.git/hooks"),
                p("/w/site/.git/config"),
                p("/w/site/.vscode/mcp.json"),
                p("/w/site/.mcp.json"),
                p("/w/site/.claude"),
                p("/w/site/.claude/settings.json"),
            ],
            &[p("/w")],
        );
        assert_eq!(
            ro,
            [
                p("/w/site/.mcp.json"),
                p("/w/site/.claude"),
                p("/w/site/.git/hooks"),
                p("/w/site/.git/config"),
                p("/w/site/.vscode/mcp.json"),
            ]
        );
        assert_eq!(pinned, [p("/w/site/.git"), p("/w/site/.vscode")]);
    }

    /// A folder made writable in a read-only tree is opened with no link on
    /// the way: bound by path, a link the plugin swapped in would make
    /// wherever it leads writable.
    #[test]
    fn a_writable_bind_never_follows_a_link() {
        if !crate::test_support::prerequisite("user namespaces", available().is_ok()) {
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let (real, link) = (root.join("real"), root.join("link"));
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(mounts(Some(std::slice::from_ref(&real)), &[], &[], &[]).is_ok());
        // Skipped: the link, and wherever it leads, stay read-only with the
        // rest of the tree; a path gone since it was judged (another
        // program's folder beside a protected one) is skipped too.
        let gone = root.join("gone");
        let ns = mounts(Some(&[link.clone(), gone]), &[], &[], &[]).unwrap();
        assert!(
            !writable_in(&ns, &real),
            "the link's target was made writable"
        );
        let ns = mounts(Some(std::slice::from_ref(&real)), &[], &[], &[]).unwrap();
        assert!(writable_in(&ns, &real));
    }

    /// Whether `dir` is writable in the mount namespace `ns`: a child joins
    /// it (after the host's user namespace) and makes a file there.
    fn writable_in(ns: &OwnedFd, dir: &std::path::Path) -> bool {
        use std::os::unix::process::CommandExt;
        let user = user().unwrap();
        let mnt = ns.as_raw_fd();
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", "touch \"$1/made\" 2>/dev/null", "sh"])
            .arg(dir);
        // SAFETY: the closure makes only setns calls, async-signal-safe, on
        // descriptors this process keeps open until the child is reaped.
        unsafe {
            cmd.pre_exec(move || {
                let joins = Joins {
                    user,
                    mnt,
                    net: -1,
                    ipc: -1,
                };
                match join(&joins) {
                    0 => Ok(()),
                    e => Err(io::Error::from_raw_os_error(e)),
                }
            });
        }
        let made = cmd.status().unwrap().success();
        let _ = std::fs::remove_file(dir.join("made"));
        made
    }

    #[test]
    fn the_path_of_a_file_is_a_c_string() {
        assert!(mounts(None, &[PathBuf::from("/a\0b")], &[], &[]).is_err());
    }
}
