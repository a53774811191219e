//! The Linux seam of the sandbox: Landlock and seccomp. Every `unsafe` of the
//! sandbox lives here.
//!
//! The work is split by how often it is needed. Once per plugin version
//! ([`Confinement::new`]): working out which folders it may use, opening each
//! (an `O_PATH` descriptor, shared with other plugins that use the same
//! folder), the Landlock access masks for this kernel, and what will be
//! enforced. Once per [`CHILDREN_PER_RULESET`] processes: a ruleset filled
//! from those descriptors (about thirty `landlock_add_rule` calls, 40 µs). In
//! the child, between `clone` and `exec`: its own `/proc/PID` added to the
//! ruleset, then `landlock_restrict_self` and the seccomp program, raw system
//! calls on data the parent built (see `executor/spawn_linux.rs`).
//!
//! A ruleset used by several children holds each one's `/proc/PID` rule, so
//! a child can read the `/proc` entries of up to that many earlier processes
//! of the same plugin version, and of no other process: a rule is bound to
//! the inode of that process's `/proc/PID`, which a later process that gets
//! the same pid does not share, and Landlock keeps sibling sandboxes from
//! reading each other's memory or environment (ptrace checks). The ruleset is
//! replaced after [`CHILDREN_PER_RULESET`] children so it stays small.
//!
//! Access rights the kernel does not know are dropped (best effort, as the
//! landlock crate does); [`Enforcement`] says what survives on this kernel.

use std::collections::HashMap;
use std::fmt;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use landlock::{ABI, Access, AccessFs, AccessNet, BitFlags, Scope};

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

/// `struct landlock_ruleset_attr` from `linux/landlock.h`. Kernels before
/// ABI 6 know fewer fields; they accept the larger struct as long as the
/// fields they do not know are zero, which the masks below guarantee.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr` from `linux/landlock.h` (packed there too).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// What the kernel supports does not change while the host runs: probed once.
static PROBES: LazyLock<(Option<i32>, bool)> =
    LazyLock::new(|| (landlock_abi(), seccomp_available()));

/// The socket-denying seccomp program, assembled once.
static DENY_SOCKETS: LazyLock<Option<Box<[libc::sock_filter]>>> =
    LazyLock::new(|| seccomp::deny_sockets().map(Vec::into_boxed_slice));

/// How many processes share a ruleset before a new one is built.
pub(crate) const CHILDREN_PER_RULESET: u32 = 32;

/// The confinement of one plugin version, prepared once and applied to each of
/// its processes.
pub(crate) struct Confinement {
    handled: RulesetAttr,
    /// The folders and files it may use, opened once.
    rules: Vec<Rule>,
    /// The data, temp and scoped folders, checked before each use: a folder
    /// deleted and made again is another folder, which the cached descriptor
    /// does not reach.
    checks: Vec<(PathBuf, Arc<Opened>)>,
    /// The folders whose entries were allowed one by one around a protected
    /// path, as they were: when one changes (an entry made or removed), the
    /// confinement is prepared again, so a new file there is reached (and a
    /// protected path made there stays out).
    enumerated: Vec<(PathBuf, Changed)>,
    /// The protected paths kept out of what the plugin was granted.
    protected: Vec<crate::protect::ProtectedPath>,
    /// What the rules allow, by path (read, write): what [`Self::reaches`]
    /// answers from. Empty when file access is not handled.
    reach: Vec<(PathBuf, bool, bool)>,
    /// Rights on the child's own `/proc/PID`, added in the child (0: none).
    proc_self: u64,
    seccomp: bool,
    enforcement: Enforcement,
    /// The ruleset the next children use, and how many have used it.
    current: Mutex<Option<(Arc<OwnedFd>, u32)>>,
}

struct Rule {
    folder: Arc<Opened>,
    access: u64,
}

/// What changes when a folder's entries change: its identity and its
/// modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Changed {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
}

impl Changed {
    fn of(meta: &std::fs::Metadata) -> Changed {
        Changed {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// A file or folder opened for rules (`O_PATH`), shared by every
/// confinement that allows it: most are the same system folders for every
/// plugin, and a host with a hundred plugins should not hold thousands of
/// descriptors for them.
struct Opened {
    fd: OwnedFd,
    dev: u64,
    ino: u64,
    is_dir: bool,
}

/// The folders opened so far, by path; an entry lives as long as a
/// confinement uses it.
static OPENED: LazyLock<Mutex<HashMap<PathBuf, Weak<Opened>>>> = LazyLock::new(Mutex::default);

/// `path` opened for rules: the descriptor already open when it still names
/// the same file (a folder deleted and made again is another one).
fn open_shared(path: &Path) -> io::Result<Arc<Opened>> {
    let meta = std::fs::metadata(path)?;
    let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(o) = opened.get(path).and_then(Weak::upgrade)
        && (o.dev, o.ino) == (meta.dev(), meta.ino())
    {
        return Ok(o);
    }
    let fd = open_path(path)?;
    let meta = std::fs::File::from(fd.try_clone()?).metadata()?;
    let o = Arc::new(Opened {
        fd,
        dev: meta.dev(),
        ino: meta.ino(),
        is_dir: meta.is_dir(),
    });
    opened.retain(|_, w| w.strong_count() > 0);
    opened.insert(path.to_owned(), Arc::downgrade(&o));
    Ok(o)
}

impl fmt::Debug for Confinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Confinement")
            .field("rules", &self.rules.len())
            .field("enforcement", &self.enforcement)
            .finish()
    }
}

/// The confinement of one process: the ruleset (as a descriptor) and the
/// seccomp program, both built in the parent.
pub(crate) struct Prepared {
    ruleset: Option<Arc<OwnedFd>>,
    proc_self: u64,
    seccomp: Option<&'static [libc::sock_filter]>,
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("ruleset", &self.ruleset)
            .field("proc_self", &self.proc_self)
            .field("seccomp", &self.seccomp.is_some())
            .finish()
    }
}

/// What the child of a confined spawn does before `exec`, as plain data.
#[derive(Clone, Copy)]
pub(crate) struct ChildSteps {
    /// The ruleset to restrict itself with.
    pub ruleset: Option<RawFd>,
    /// Rights on its own `/proc/PID` to add to the ruleset first (0: none).
    pub proc_self: u64,
    /// The seccomp program to install last.
    pub seccomp: Option<&'static [libc::sock_filter]>,
}

impl Confinement {
    /// Prepares the confinement of the plugin `policy` describes: the folders
    /// it may use are resolved and opened now.
    pub(crate) fn new(policy: &Policy<'_>) -> Result<Confinement, SandboxError> {
        let (abi, seccomp_ok) = *PROBES;
        let confine_reads = !policy.grants(Permission::FilesystemRead);
        let confine_writes = !policy.grants(Permission::FilesystemWrite);
        let deny_network = !policy.grants(Permission::Network);
        // Reads and writes are always handled, with rules that allow what is
        // granted: whatever is granted, the protected paths (the user's
        // secrets, what runs later, plughost's own trust) and the other
        // processes' /proc entries stay out of reach.
        let handle_reads = true;
        let handle_writes = true;
        let enforcement = expected(
            abi,
            seccomp_ok,
            [handle_reads, confine_reads, confine_writes, deny_network],
        );
        let kernel = ABI::from(abi.unwrap_or(0));
        let fs = AccessFs::from_all(kernel) & AccessFs::from_all(FS_ABI);
        let read = AccessFs::from_read(FS_ABI) & fs;
        let write = AccessFs::from_write(FS_ABI) & fs;
        let mut handled_fs = BitFlags::EMPTY;
        if handle_reads {
            handled_fs |= read;
        }
        if handle_writes {
            handled_fs |= write;
        }
        let mut scopes = BitFlags::from(Scope::Signal);
        let mut handled_net = BitFlags::EMPTY;
        if deny_network {
            // Handled with no rule: every TCP connect and bind is denied.
            handled_net = AccessNet::from_all(NET_ABI) & AccessNet::from_all(kernel);
            scopes |= Scope::AbstractUnixSocket;
        }
        let any = handle_reads || handle_writes || deny_network;
        let scoped = if any {
            scopes & Scope::from_all(SCOPE_ABI) & Scope::from_all(kernel)
        } else {
            BitFlags::EMPTY
        };
        let handled = RulesetAttr {
            handled_access_fs: handled_fs.bits(),
            handled_access_net: handled_net.bits(),
            scoped: scoped.bits(),
        };
        let mut rules = Vec::new();
        let mut checks = Vec::new();
        let mut enumerated = Vec::new();
        let mut protected = Vec::new();
        let mut reach = Vec::new();
        if !handled_fs.is_empty() {
            let allowed = paths::allowed(policy);
            protected = allowed.protected;
            reach = allowed
                .rules
                .iter()
                .filter(|a| !a.list_only)
                .map(|a| (a.path.clone(), a.read, a.write))
                .collect();
            for dir in allowed.enumerated {
                if let Ok(meta) = std::fs::metadata(&dir) {
                    enumerated.push((dir, Changed::of(&meta)));
                }
            }
            for Allow {
                path,
                read: r,
                write: w,
                list_only,
                required,
            } in allowed.rules
            {
                let mut access = BitFlags::EMPTY;
                if list_only {
                    access |= AccessFs::ReadDir;
                } else {
                    if r {
                        access |= read;
                    }
                    if w {
                        access |= write;
                    }
                }
                access &= handled_fs;
                if access.is_empty() {
                    continue;
                }
                let folder = match open_shared(&path) {
                    Ok(folder) => folder,
                    Err(source) if required => return Err(SandboxError::Path { path, source }),
                    Err(_) => continue,
                };
                // Rights that only make sense on a folder are invalid on a file.
                if !folder.is_dir {
                    access &= AccessFs::from_file(FS_ABI);
                }
                // Required folders other than the plugin's own (which a
                // reload replaces): data, temp, scoped grants.
                if required && path != policy.plugin_dir {
                    checks.push((path, folder.clone()));
                }
                rules.push(Rule {
                    folder,
                    access: access.bits(),
                });
            }
        }
        let ruleset_possible = handled.handled_access_fs != 0
            || handled.handled_access_net != 0
            || handled.scoped != 0;
        // Read rights exist since ABI 1, so when reads are handled all of them are.
        let proc_self = if handle_reads && ruleset_possible && enforcement.proc_hidden {
            read.bits()
        } else {
            0
        };
        Ok(Confinement {
            handled,
            rules,
            checks,
            enumerated,
            protected,
            reach,
            proc_self,
            seccomp: deny_network && seccomp_ok,
            enforcement,
            current: Mutex::new(None),
        })
    }

    /// The protected paths kept out of what its processes were granted.
    pub(crate) fn protected(&self) -> &[crate::protect::ProtectedPath] {
        &self.protected
    }

    /// Whether its processes may read (or, with `write`, change) `path`: a
    /// rule allows the path or a folder above it. (The rules hold real
    /// paths: `path` is resolved as far as it exists.)
    pub(crate) fn reaches(&self, path: &Path, write: bool) -> bool {
        if self.handled.handled_access_fs == 0 {
            return true;
        }
        let path = paths::real(path);
        self.reach
            .iter()
            .any(|(p, r, w)| path.starts_with(p) && if write { *w } else { *r })
    }

    /// What its processes will have enforced, on this kernel.
    pub(crate) fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Whether the data, temp and scoped folders it opened are still the
    /// folders at their paths (a folder deleted and made again is not).
    pub(crate) fn is_current(&self) -> bool {
        self.checks.iter().all(|(path, o)| {
            std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (o.dev, o.ino))
        }) && self
            .enumerated
            .iter()
            .all(|(path, seen)| std::fs::metadata(path).is_ok_and(|m| Changed::of(&m) == *seen))
    }

    /// The confinement of one process: the current ruleset, or a new one
    /// when the current one has served [`CHILDREN_PER_RULESET`] processes.
    pub(crate) fn for_call(&self) -> Result<Prepared, SandboxError> {
        let seccomp = if self.seccomp {
            DENY_SOCKETS.as_deref()
        } else {
            None
        };
        let h = &self.handled;
        if h.handled_access_fs == 0 && h.handled_access_net == 0 && h.scoped == 0 {
            return Ok(Prepared {
                ruleset: None,
                proc_self: 0,
                seccomp,
            });
        }
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let ruleset = match &mut *current {
            Some((ruleset, used)) if *used < CHILDREN_PER_RULESET => {
                *used += 1;
                ruleset.clone()
            }
            _ => {
                let ruleset = Arc::new(self.build_ruleset()?);
                *current = Some((ruleset.clone(), 1));
                ruleset
            }
        };
        Ok(Prepared {
            ruleset: Some(ruleset),
            proc_self: self.proc_self,
            seccomp,
        })
    }

    fn build_ruleset(&self) -> Result<OwnedFd, SandboxError> {
        let landlock = |e: io::Error| SandboxError::Landlock(e.to_string());
        let ruleset = create_ruleset(&self.handled).map_err(landlock)?;
        for rule in &self.rules {
            add_rule(&ruleset, rule.folder.fd.as_raw_fd(), rule.access).map_err(landlock)?;
        }
        Ok(ruleset)
    }
}

impl Prepared {
    /// Whether the child has anything to do: a process with nothing to
    /// enforce is spawned like any other.
    pub(crate) fn is_empty(&self) -> bool {
        self.ruleset.is_none() && self.seccomp.is_none()
    }

    /// The steps for the child of a confined spawn. `self` must outlive the
    /// spawn (the ruleset descriptor is read in the child).
    pub(crate) fn child_steps(&self) -> ChildSteps {
        ChildSteps {
            ruleset: self.ruleset.as_deref().map(AsRawFd::as_raw_fd),
            proc_self: self.proc_self,
            seccomp: self.seccomp,
        }
    }

    /// Registers a `pre_exec` hook that confines the child: the way to apply
    /// it with the standard library's spawn (which then forks), used where
    /// the executor's own spawn is not available.
    pub(crate) fn apply_to(self, cmd: &mut tokio::process::Command) {
        self.apply_to_std(cmd.as_std_mut());
    }

    /// [`Prepared::apply_to`] for a standard library command.
    pub(crate) fn apply_to_std(self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;

        if self.is_empty() {
            return;
        }
        let Prepared {
            ruleset,
            proc_self,
            seccomp,
        } = self;
        // SAFETY: the hook runs in the forked child before exec. It only reads
        // data it owns (an open descriptor, an integer, a static program) and
        // makes raw system calls: no allocation, no lock, no unwinding.
        unsafe {
            cmd.pre_exec(move || {
                let steps = ChildSteps {
                    ruleset: ruleset.as_deref().map(AsRawFd::as_raw_fd),
                    proc_self,
                    seccomp,
                };
                match enforce(&steps) {
                    0 => Ok(()),
                    errno => Err(io::Error::from_raw_os_error(errno)),
                }
            });
        }
    }
}

/// The child's half: `no_new_privs`, its own `/proc/PID`, the Landlock
/// restriction, the seccomp program. Returns 0, or the failing call's errno.
///
/// Runs between `clone`/`fork` and `exec`: only raw system calls on data the
/// parent built, nothing that allocates, locks or unwinds.
pub(crate) fn enforce(steps: &ChildSteps) -> i32 {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return errno();
    }
    if let Some(fd) = steps.ruleset {
        if steps.proc_self != 0 {
            let rc = allow_own_proc(fd, steps.proc_self);
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
    if let Some(filter) = steps.seccomp {
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
fn allow_own_proc(ruleset: RawFd, access: u64) -> i32 {
    // SAFETY: the path is a static NUL-terminated string; open returns a new
    // descriptor or -1 and writes no memory of ours.
    let dir = unsafe {
        libc::open(
            c"/proc/self".as_ptr(),
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

/// A new, empty ruleset handling `attr`'s rights.
fn create_ruleset(attr: &RulesetAttr) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid landlock_ruleset_attr of the size passed,
    // which the kernel only reads.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor (close-on-exec) that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Allows `access` beneath the file or folder `fd` in `ruleset`.
fn add_rule(ruleset: &OwnedFd, fd: RawFd, access: u64) -> io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd,
    };
    // SAFETY: `attr` is a valid landlock_path_beneath_attr for the whole call,
    // which only reads it; both descriptors are open.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An `O_PATH` descriptor of `path` (what landlock's `PathFd` does).
fn open_path(path: &Path) -> io::Result<OwnedFd> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(path)
        .map(OwnedFd::from)
}

/// What the child will have enforced, from what is wanted and what this kernel
/// supports (the same arithmetic as the landlock crate's best-effort mode).
fn expected(
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
