//! The Linux seam of the sandbox: Landlock and seccomp (and, through
//! `namespace.rs`, the namespaces). With `child.rs` and `namespace.rs`, every
//! `unsafe` of the sandbox lives here.
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
//!
//! A plugin with host grants (`network:HOST`) is held to the egress proxy
//! ([`Egress`]): in the proxy's network namespace where user namespaces work
//! ([`NetLevel::Namespace`]), else by a Landlock rule that allows TCP
//! connections to the proxy's port alone ([`NetLevel::ProxyPort`]); at
//! both levels the seccomp program allows only TCP sockets. The project
//! files a write grant reaches that run code later are kept read-only by a
//! mount namespace made with the confinement (`namespace.rs`).

use std::collections::HashMap;
use std::fmt;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use landlock::{ABI, Access, AccessFs, AccessNet, BitFlags, Scope};

use super::child::{ChildSteps, LANDLOCK_RULE_PATH_BENEATH, PathBeneathAttr, enforce, join};
use super::namespace::{self, Joins};
use super::paths::{self, Allow};
use super::seccomp::{self, Sockets};
use super::{Egress, Enforcement, NetLevel, Policy, SandboxError};
use crate::plugins::manifest::Permission;

pub(super) use super::support::support;
use super::support::{expected, landlock_abi, seccomp_available};

/// The Landlock ABIs whose rights this sandbox asks for, tested on a kernel that
/// has them. Newer kernels add rights (ABI 9: connecting to pathname unix
/// sockets) that are left unhandled until tested here.
const FS_ABI: ABI = ABI::V5;
const NET_ABI: ABI = ABI::V4;
const SCOPE_ABI: ABI = ABI::V6;

/// `LANDLOCK_RULE_NET_PORT` from `linux/landlock.h`.
const LANDLOCK_RULE_NET_PORT: libc::c_int = 2;

/// `struct landlock_ruleset_attr` from `linux/landlock.h`. Kernels before
/// ABI 6 know fewer fields; they accept the larger struct as long as the
/// fields they do not know are zero, which the masks below guarantee.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_net_port_attr` from `linux/landlock.h`.
#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// What the kernel supports does not change while the host runs: probed once.
static PROBES: LazyLock<(Option<i32>, bool)> =
    LazyLock::new(|| (landlock_abi(), seccomp_available()));

/// The seccomp programs, one per kind of socket a plugin may make,
/// assembled once.
static PROGRAMS: LazyLock<[Option<Box<[libc::sock_filter]>>; 3]> = LazyLock::new(|| {
    [Sockets::Any, Sockets::None, Sockets::TcpOnly]
        .map(|s| seccomp::program(s).map(Vec::into_boxed_slice))
});

/// The program that refuses namespaces, assembled once.
static NAMESPACES_PROGRAM: LazyLock<Option<Box<[libc::sock_filter]>>> =
    LazyLock::new(|| seccomp::namespaces().map(Vec::into_boxed_slice));

/// The seccomp program a confinement's processes get: every one gets the
/// refusals of `seccomp.rs`, and its sockets by its network grant.
fn program(sockets: Sockets) -> Option<&'static [libc::sock_filter]> {
    let i = match sockets {
        Sockets::Any => 0,
        Sockets::None => 1,
        Sockets::TcpOnly => 2,
    };
    PROGRAMS[i].as_deref()
}

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
    enumerated: Vec<Enumerated>,
    /// The protected paths kept out of what the plugin was granted.
    protected: Vec<crate::protect::ProtectedPath>,
    /// What the rules allow, by path (read, write): what [`Self::reaches`]
    /// answers from. Empty when file access is not handled.
    reach: Vec<(PathBuf, bool, bool)>,
    /// Rights on the child's own `/proc/PID`, added in the child (0: none).
    proc_self: u64,
    /// TCP ports its processes may connect to (the egress proxy's).
    ports: Vec<u16>,
    /// Which sockets its seccomp program allows (`None`: no seccomp here).
    seccomp: Option<Sockets>,
    /// The namespaces its processes join, held open.
    namespaces: Option<Arc<Namespaces>>,
    /// The project files and protected paths kept read-only by its mount
    /// namespace, and who they were when they were mounted: a file replaced
    /// since is mounted again.
    read_only: Mounted,
    /// The protected paths among them (what [`Self::reaches`] keeps from
    /// writes), and its own folders mounted writable again inside them.
    mounted: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    enforcement: Enforcement,
    /// The ruleset the next children use, and how many have used it.
    current: Mutex<Option<(Arc<OwnedFd>, u32)>>,
    /// What the executor keeps for its per-call processes (their resident
    /// PID namespaces, `executor/resident.rs`), opaque here; it goes with
    /// the last `Prepared` of this confinement.
    kept: Kept,
}

struct Rule {
    folder: Arc<Opened>,
    access: u64,
}

/// A folder whose entries were allowed one by one, held open, and its
/// modification time when they were read (an entry made, removed or
/// renamed changes it).
///
/// Checked before each call, so it must be cheap: the folder's own time is
/// read from the descriptor (`fstat`, no path lookup), and only a folder
/// whose parent is not also enumerated is looked up by its path as well. A
/// folder replaced at its path changes its parent's entries, which is
/// enumerated too (and so on up to one looked up by path). A mount made
/// since over one of them is not noticed; what it brings matches no rule,
/// so it stays out of reach until the confinement is prepared again.
struct Enumerated {
    path: PathBuf,
    folder: Arc<Opened>,
    mtime: (i64, i64),
    by_path: bool,
}

impl Enumerated {
    fn is_current(&self) -> bool {
        if self.by_path {
            std::fs::metadata(&self.path).is_ok_and(|m| {
                (m.dev(), m.ino()) == (self.folder.dev, self.folder.ino)
                    && (m.mtime(), m.mtime_nsec()) == self.mtime
            })
        } else {
            modified(&self.folder.fd).is_ok_and(|t| t == self.mtime)
        }
    }
}

/// The modification time of the file `fd` is open on (an `O_PATH`
/// descriptor will do), as (seconds, nanoseconds).
fn modified(fd: &OwnedFd) -> io::Result<(i64, i64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is an open descriptor for the whole call, and `st` is a
    // buffer of the size fstat writes.
    if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstat returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok((st.st_mtime, st.st_mtime_nsec))
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

/// The namespaces the processes of a confinement join: the host's user
/// namespace (held for the host's life by `namespace.rs`), a mount
/// namespace, the egress proxy's network namespace and an IPC namespace,
/// each optional.
struct Namespaces {
    mnt: Option<OwnedFd>,
    net: Option<Arc<OwnedFd>>,
    ipc: Option<OwnedFd>,
}

impl Namespaces {
    fn joins(&self) -> Option<Joins> {
        Some(Joins {
            user: namespace::user().ok()?,
            mnt: self.mnt.as_ref().map_or(-1, AsRawFd::as_raw_fd),
            net: self.net.as_deref().map_or(-1, AsRawFd::as_raw_fd),
            ipc: self.ipc.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        })
    }
}

/// The confinement of one process: the ruleset (as a descriptor), the
/// seccomp program and the namespaces to join, all built in the parent.
#[derive(Clone)]
pub(crate) struct Prepared {
    ruleset: Option<Arc<OwnedFd>>,
    proc_self: u64,
    /// A long-lived process: its PID namespace gets a `/proc` of its own.
    own_proc: bool,
    seccomp: Option<&'static [libc::sock_filter]>,
    namespaces: Option<Arc<Namespaces>>,
    kept: Option<Kept>,
}

/// State the executor keeps per confinement, made on first use and
/// dropped with the confinement. Opaque to the sandbox (the executor owns
/// its type), so the sandbox does not depend on the executor.
#[derive(Clone, Default)]
pub(crate) struct Kept(Arc<std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>>);

impl Kept {
    /// The state, made with `T::default()` on first use; `None` if it was
    /// made with another type.
    pub(crate) fn get<T: Default + Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.0
            .get_or_init(|| Arc::new(T::default()))
            .clone()
            .downcast()
            .ok()
    }
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("ruleset", &self.ruleset)
            .field("proc_self", &self.proc_self)
            .field("own_proc", &self.own_proc)
            .field("seccomp", &self.seccomp.is_some())
            .field("namespaces", &self.namespaces.is_some())
            .finish()
    }
}

impl Confinement {
    /// Prepares the confinement of the plugin `policy` describes: the folders
    /// it may use are resolved and opened now.
    pub(crate) fn new(policy: &Policy<'_>) -> Result<Confinement, SandboxError> {
        let (abi, seccomp_ok) = *PROBES;
        let confine_reads = !policy.grants(Permission::FilesystemRead);
        let confine_writes = !policy.grants(Permission::FilesystemWrite);
        let deny_network = !policy.grants(Permission::Network);
        // Host grants: TCP to the egress proxy alone; or, for a server with
        // no network in a namespace of its own, to a proxy that refuses
        // everything and says what was tried (`host/egress.rs`).
        let egress = policy
            .egress
            .filter(|e| deny_network && (policy.hosts() || e.netns.is_some()));
        // Reads and writes are always handled, with rules that allow what is
        // granted: whatever is granted, the protected paths (the user's
        // secrets, what runs later, plughost's own trust) and the other
        // processes' /proc entries stay out of reach.
        let handle_reads = true;
        let handle_writes = true;
        let mut enforcement = expected(
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
            // Handled with no rule (but the egress proxy's port, for host
            // grants): every TCP connect and bind is denied.
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
        // Protected paths under a write grant are kept read-only by a mount
        // namespace where one can be made; should it fail after all, by
        // Landlock rules around them.
        let mounts = policy.namespaces && namespace::available().is_ok();
        let mut files = FileRules::of(policy, mounts, read, write, handled_fs)?;
        // Landlock has no right for a file's mode, owner, times or extended
        // attributes: every mount but what the plugin may write is made
        // read-only, so that it cannot change them elsewhere either.
        let whole = mounts && handle_writes;
        let made = |files: &FileRules, whole| match mount_namespace(files, whole) {
            Ok(made) => Ok(Ok(made)),
            Err(MountFailure::Unavailable(why)) => Ok(Err(why)),
            Err(MountFailure::Changed(why)) => Err(SandboxError::Changed(why)),
        };
        let mut mnt = made(&files, whole)?;
        if let (Err(why), true) = (&mnt, whole) {
            enforcement.not_enforced.push(format!(
                "the mode, owner and times of files outside the plugin's writes are NOT protected: every other mount could not be made read-only ({why})"
            ));
            mnt = made(&files, false)?;
        }
        if mnt.is_err() && !files.mounted.is_empty() {
            files = FileRules::of(policy, false, read, write, handled_fs)?;
            mnt = made(&files, false)?;
        }
        let (mnt, read_only) = match mnt {
            Ok(Some((ns, seen, whole))) => {
                enforcement.projects_read_only = true;
                enforcement.metadata_confined = whole;
                (Some(ns), seen)
            }
            Ok(None) => (None, Vec::new()),
            Err(why) => {
                enforcement.not_enforced.push(format!(
                    "project files that run later (.git/hooks, MCP configurations) under a write grant are NOT protected from writes: no mount namespace ({why})"
                ));
                (None, Vec::new())
            }
        };
        let FileRules {
            rules,
            checks,
            enumerated,
            protected,
            reach,
            mounted,
            writable,
            ..
        } = files;
        let ruleset_possible = handled.handled_access_fs != 0
            || handled.handled_access_net != 0
            || handled.scoped != 0;
        // Read rights exist since ABI 1, so when reads are handled all of them are.
        let proc_self = if handle_reads && ruleset_possible && enforcement.proc_hidden {
            read.bits()
        } else {
            0
        };
        let ports = match egress {
            Some(e) if handled.handled_access_net != 0 => vec![e.port],
            _ => Vec::new(),
        };
        let seccomp = match (seccomp_ok, deny_network, egress) {
            (false, _, _) => None,
            (true, false, _) => Some(Sockets::Any),
            (true, true, Some(_)) => Some(Sockets::TcpOnly),
            (true, true, None) => Some(Sockets::None),
        };
        if let Some(e) = egress {
            let level = held_at(e, abi, seccomp_ok);
            enforcement.network_level = Some(level);
            match level {
                NetLevel::Namespace => {}
                NetLevel::ProxyPort => enforcement.not_enforced.push(
                    "network:HOST: no network namespace here, the plugin is held to the egress proxy's port only (it could reach another service on that port number)".into(),
                ),
                NetLevel::Advisory => enforcement.not_enforced.push(
                    "network:HOST: neither user namespaces nor Landlock ABI 4 here, the plugin is pointed at the egress proxy but nothing holds it there".into(),
                ),
            }
        }
        let net = egress.and_then(|e| e.netns.clone());
        // Wherever the user namespace works, every process joins it (even
        // one that needs no other namespace), for the task limit it counts
        // (`cgroup::PLUGIN_TASKS`) and a PID namespace of its own.
        let in_user_namespace = policy.namespaces && namespace::user().is_ok();
        // Without a PID namespace, the reaping init holds the plugin's
        // tree only while the plugin cannot kill it (Landlock's signal scope).
        enforcement.processes_contained = (in_user_namespace
            || (enforcement.signals_scoped && super::init::reaps()))
            && super::init::available().is_ok();
        // SysV objects of its own (one preparer more, once per confinement).
        let ipc = if in_user_namespace {
            match namespace::ipc() {
                Ok(ipc) => Some(ipc),
                Err(e) => {
                    enforcement.not_enforced.push(format!(
                        "SysV IPC: {e}; the plugin shares the user's shared memory and semaphores"
                    ));
                    None
                }
            }
        } else {
            None
        };
        let namespaces = (mnt.is_some() || net.is_some() || in_user_namespace)
            .then(|| Arc::new(Namespaces { mnt, net, ipc }));
        Ok(Confinement {
            handled,
            rules,
            checks,
            enumerated,
            protected,
            reach,
            proc_self,
            ports,
            seccomp,
            namespaces,
            read_only,
            mounted,
            writable,
            enforcement,
            current: Mutex::new(None),
            kept: Kept::default(),
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
        let mounted_read_only = write
            && self.mounted.iter().any(|m| path.starts_with(m))
            && !self.writable.iter().any(|w| path.starts_with(w));
        !mounted_read_only
            && self
                .reach
                .iter()
                .any(|(p, r, w)| path.starts_with(p) && if write { *w } else { *r })
    }

    /// What its processes will have enforced, on this kernel.
    pub(crate) fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Whether the data, temp and scoped folders it opened are still the
    /// folders at their paths (a folder deleted and made again is not), and
    /// the project files it keeps read-only the files it mounted.
    pub(crate) fn is_current(&self) -> bool {
        self.checks.iter().all(|(path, o)| {
            std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (o.dev, o.ino))
        }) && self.enumerated.iter().all(Enumerated::is_current)
            && self.read_only.iter().all(|(path, dev, ino)| {
                std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (*dev, *ino))
            })
    }

    /// The confinement of one process: the current ruleset, or a new one
    /// when the current one has served [`CHILDREN_PER_RULESET`] processes.
    pub(crate) fn for_call(&self) -> Result<Prepared, SandboxError> {
        let seccomp = self.seccomp.and_then(program);
        let namespaces = self.namespaces.clone();
        let h = &self.handled;
        if h.handled_access_fs == 0 && h.handled_access_net == 0 && h.scoped == 0 {
            return Ok(Prepared {
                ruleset: None,
                proc_self: 0,
                own_proc: false,
                seccomp,
                namespaces,
                kept: Some(self.kept.clone()),
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
            own_proc: false,
            seccomp,
            namespaces,
            kept: Some(self.kept.clone()),
        })
    }

    fn build_ruleset(&self) -> Result<OwnedFd, SandboxError> {
        let landlock = |e: io::Error| SandboxError::Landlock(e.to_string());
        let ruleset = create_ruleset(&self.handled).map_err(landlock)?;
        for rule in &self.rules {
            add_rule(&ruleset, rule.folder.fd.as_raw_fd(), rule.access).map_err(landlock)?;
        }
        for port in &self.ports {
            add_port_rule(&ruleset, *port).map_err(landlock)?;
        }
        Ok(ruleset)
    }
}

impl Prepared {
    /// The confinement of a long-lived process (a worker, an MCP server):
    /// in a PID namespace of its own, it also gets a `/proc` of that
    /// namespace, so each process it starts reads its own `/proc/PID` (a
    /// browser's helpers check `/proc/self/fd`). Its spawn costs a mount
    /// namespace and a `/proc` mount (about 80 µs), once for the process's
    /// life; a per-call process is spawned without them.
    pub(crate) fn long_lived(mut self) -> Prepared {
        self.own_proc = true;
        self.kept = None;
        self
    }

    /// What the executor keeps for the per-call processes of its plugin
    /// version (none for a long-lived process).
    pub(crate) fn kept(&self) -> Option<&Kept> {
        self.kept.as_ref()
    }

    /// Whether the child has anything to do: a process with nothing to
    /// enforce is spawned like any other.
    pub(crate) fn is_empty(&self) -> bool {
        self.ruleset.is_none() && self.seccomp.is_none() && self.namespaces.is_none()
    }

    /// The steps for the child of a confined spawn. `self` must outlive the
    /// spawn (the ruleset descriptor is read in the child).
    pub(crate) fn child_steps(&self) -> ChildSteps {
        let joins = self.namespaces.as_deref().and_then(Namespaces::joins);
        ChildSteps {
            joins,
            tasks_group: super::cgroup::procs_fd().unwrap_or(-1),
            drop_privileges: true,
            tasks: if joins.is_some_and(|j| j.user >= 0) {
                super::cgroup::PLUGIN_TASKS
            } else {
                0
            },
            ruleset: self.ruleset.as_deref().map(AsRawFd::as_raw_fd),
            proc_self: self.proc_self,
            own_proc: self.own_proc && self.proc_self != 0,
            proc_whole: false,
            seccomp: self.seccomp,
            seccomp_namespaces: self.seccomp.and(NAMESPACES_PROGRAM.as_deref()),
        }
    }

    /// Registers a `pre_exec` hook that confines the child: the way to apply
    /// it with the standard library's spawn (which then forks), used where
    /// the executor's own spawn is not available. The hook starts a session
    /// of its own (so the command must not set a process group: a group
    /// leader cannot). `cwd` is the child's folder, entered again after
    /// joining a mount namespace.
    pub(crate) fn apply_to(self, cmd: &mut tokio::process::Command, cwd: &Path) {
        self.apply_to_std(cmd.as_std_mut(), cwd);
    }

    /// [`Prepared::apply_to`] for a standard library command.
    pub(crate) fn apply_to_std(self, cmd: &mut std::process::Command, cwd: &Path) {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;

        if self.is_empty() {
            return;
        }
        let cwd = std::ffi::CString::new(cwd.as_os_str().as_bytes()).unwrap_or_default();
        let steps = self.child_steps();
        // SAFETY: the hook runs in the forked child before exec. It only reads
        // data it owns (`self`, kept alive by the closure: open descriptors,
        // integers, a static program, a string) and makes raw system calls:
        // no allocation, no lock, no unwinding.
        unsafe {
            cmd.pre_exec(move || {
                let _held = &self;
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                let rc = join(&steps);
                if rc != 0 {
                    return Err(io::Error::from_raw_os_error(rc));
                }
                if steps.joins.is_some() && libc::chdir(cwd.as_ptr()) != 0 {
                    return Err(io::Error::last_os_error());
                }
                match enforce(&steps) {
                    0 => Ok(()),
                    errno => Err(io::Error::from_raw_os_error(errno)),
                }
            });
        }
    }
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

/// Allows TCP connections to `port` in `ruleset` (Landlock ABI 4+).
fn add_port_rule(ruleset: &OwnedFd, port: u16) -> io::Result<()> {
    let attr = NetPortAttr {
        allowed_access: AccessNet::ConnectTcp as u64,
        port: u64::from(port),
    };
    // SAFETY: `attr` is a valid landlock_net_port_attr for the whole call,
    // which only reads it; the ruleset descriptor is open.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_NET_PORT,
            &attr as *const NetPortAttr,
            0u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes the socket the egress proxy of one plugin version listens on, and
/// what its confinements need to know of it: in a new network namespace
/// (only `lo`) when `namespaces` allows it and it works here, else on the
/// host's `127.0.0.1` (the proxy's port is then all Landlock holds the
/// plugin to).
pub(crate) fn prepare_egress(
    namespaces: bool,
) -> Result<(Egress, std::net::TcpListener), SandboxError> {
    if namespaces
        && namespace::available().is_ok()
        && let Ok((ns, listener)) = namespace::network()
    {
        let port = listener.local_addr().map_err(SandboxError::Egress)?.port();
        let egress = Egress {
            port,
            netns: Some(Arc::new(ns)),
        };
        return Ok((egress, listener));
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(SandboxError::Egress)?;
    let port = listener.local_addr().map_err(SandboxError::Egress)?.port();
    Ok((Egress { port, netns: None }, listener))
}

/// The level a plugin held to `egress` gets on this kernel.
fn held_at(egress: &Egress, abi: Option<i32>, seccomp_ok: bool) -> NetLevel {
    if egress.netns.is_some() {
        NetLevel::Namespace
    } else if abi.unwrap_or(0) >= 4 && seccomp_ok {
        NetLevel::ProxyPort
    } else {
        NetLevel::Advisory
    }
}

/// The mount namespace `files` needs: with `whole`, every mount read-only
/// but what the plugin may write; its project files and protected paths
/// read-only, the folders above them pinned, the plugin's own folders
/// inside them writable. `None` when it needs none; the error says why one
/// could not be made. The flag says whether `whole` held.
fn mount_namespace(
    files: &FileRules,
    whole: bool,
) -> Result<Option<(OwnedFd, Mounted, bool)>, MountFailure> {
    let granted = whole.then(|| granted_mounts(&files.reach)).flatten();
    if granted.is_none() && files.read_only.is_empty() && files.mounted.is_empty() {
        return Ok(None);
    }
    let unavailable = MountFailure::Unavailable;
    if !files.namespaces {
        return Err(unavailable("namespaces are switched off".to_owned()));
    }
    namespace::available().map_err(unavailable)?;
    let (projects, mut pinned) = namespace::layout(&files.read_only, &files.project_roots);
    let mut read_only = projects;
    read_only.extend(files.mounted.iter().cloned());
    pinned.extend(files.pinned.iter().cloned());
    let (read_only, pinned) = namespace::outer_first(read_only, pinned);
    let seen: Mounted = read_only
        .iter()
        .filter_map(|p| {
            let m = std::fs::symlink_metadata(p).ok()?;
            Some((p.clone(), m.dev(), m.ino()))
        })
        .collect();
    let whole = granted.is_some();
    namespace::mounts(granted.as_deref(), &read_only, &pinned, &files.writable)
        .map(|ns| Some((ns, seen, whole)))
        .map_err(|e| {
            // A path that became a link or went away since it was judged:
            // the plugin may be racing the preparer, to have the tree
            // given up; the call fails rather than run with less.
            if namespace::path_changed(&e) {
                MountFailure::Changed(e.to_string())
            } else {
                MountFailure::Unavailable(e.to_string())
            }
        })
}

/// Why a mount namespace was not made.
enum MountFailure {
    /// This system cannot make it: run with less, and say so.
    Unavailable(String),
    /// A path in it changed while it was made: fail the call.
    Changed(String),
}

/// The paths a read-only mount tree keeps writable: each folder or file
/// the plugin may write (`reach`, real paths), outer first, without those
/// a folder above covers. Devices (`/dev/null`) need none: writing to a
/// device changes no file. `None` when a write reaches `/` itself, which
/// leaves nothing to make read-only.
fn granted_mounts(reach: &[(PathBuf, bool, bool)]) -> Option<Vec<PathBuf>> {
    let granted: Vec<PathBuf> = reach
        .iter()
        .filter(|(_, _, write)| *write)
        // Each is opened with no link on the way (see `namespace::mounts`).
        .map(|(path, _, _)| path.clone())
        .filter(|path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir() || m.is_file()))
        .collect();
    if granted.iter().any(|p| p.parent().is_none()) {
        return None;
    }
    Some(namespace::outer_first(granted, Vec::new()).0)
}

/// The paths a mount namespace keeps read-only, and who each was (device,
/// inode) when it was mounted.
type Mounted = Vec<(PathBuf, u64, u64)>;

/// The file rules of a confinement, and the paths its mount namespace
/// keeps read-only: [`paths::allowed`] with each folder opened.
struct FileRules {
    rules: Vec<Rule>,
    checks: Vec<(PathBuf, Arc<Opened>)>,
    enumerated: Vec<Enumerated>,
    protected: Vec<crate::protect::ProtectedPath>,
    reach: Vec<(PathBuf, bool, bool)>,
    /// Project files (real paths) and the folders they were found in.
    read_only: Vec<PathBuf>,
    project_roots: Vec<PathBuf>,
    mounted: Vec<PathBuf>,
    pinned: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    /// Whether the policy allows namespaces.
    namespaces: bool,
}

impl FileRules {
    fn of(
        policy: &Policy<'_>,
        mounts: bool,
        read: BitFlags<AccessFs>,
        write: BitFlags<AccessFs>,
        handled_fs: BitFlags<AccessFs>,
    ) -> Result<FileRules, SandboxError> {
        let allowed = paths::allowed(policy, mounts);
        if let Some((grant, link)) = allowed.changeable.first().cloned() {
            return Err(SandboxError::ChangeableLink { grant, link });
        }
        let mut out = FileRules {
            rules: Vec::new(),
            checks: Vec::new(),
            enumerated: Vec::new(),
            protected: allowed.protected,
            // Real paths: the plugin's own are named as they are (a home
            // folder behind a link), every other was resolved once, by
            // `paths::allowed`, and is not looked up again.
            reach: allowed
                .rules
                .iter()
                .filter(|a| !a.list_only)
                .map(|a| {
                    let own = paths::own(policy, &a.path);
                    let path = if own {
                        paths::real(&a.path)
                    } else {
                        a.path.clone()
                    };
                    (path, a.read, a.write)
                })
                .collect(),
            read_only: allowed
                .read_only
                .iter()
                .map(|p| paths::real(&p.path))
                .collect(),
            project_roots: allowed
                .project_roots
                .iter()
                .map(|p| paths::real(p))
                .collect(),
            mounted: allowed.mounted,
            pinned: allowed.pinned,
            writable: allowed.writable,
            namespaces: policy.namespaces,
        };
        for dir in &allowed.enumerated {
            let by_path = !dir
                .parent()
                .is_some_and(|p| allowed.enumerated.iter().any(|e| e == p));
            if let Ok(folder) = open_shared(dir)
                && let Ok(mtime) = modified(&folder.fd)
            {
                out.enumerated.push(Enumerated {
                    path: dir.clone(),
                    folder,
                    mtime,
                    by_path,
                });
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
            // No device files are made anywhere, whatever is granted: one
            // would reach a disk or kernel memory past every rule.
            access &= !(AccessFs::MakeChar | AccessFs::MakeBlock);
            if access.is_empty() {
                continue;
            }
            let folder = match open_shared(&path) {
                Ok(folder) => folder,
                Err(source) if required => return Err(SandboxError::Path { path, source }),
                Err(_) => continue,
            };
            // The path was judged with its links resolved (it names no
            // link); what was opened must still be there, not what a link
            // swapped in since leads to.
            if !paths::own(policy, &path)
                && let Some(now) = moved(&folder, &path)
            {
                if required {
                    return Err(SandboxError::Moved { path, now });
                }
                continue;
            }
            // Rights that only make sense on a folder are invalid on a file.
            if !folder.is_dir {
                access &= AccessFs::from_file(FS_ABI);
            }
            // Required folders other than the plugin's own (which a
            // reload replaces): data, temp, scoped grants.
            if required && path != policy.plugin_dir {
                out.checks.push((path, folder.clone()));
            }
            // One rule per file: the read and the write side of a grant
            // name the same folders (the kernel would merge them, but each
            // is a system call whenever the ruleset is built again).
            match out
                .rules
                .iter_mut()
                .find(|r| Arc::ptr_eq(&r.folder, &folder))
            {
                Some(rule) => rule.access |= access.bits(),
                None => out.rules.push(Rule {
                    folder,
                    access: access.bits(),
                }),
            }
        }
        Ok(out)
    }
}

/// Where `folder` is now when that is not `path`, which had no link on its
/// way when judged. A path the kernel cannot name (`/proc/self/fd` gives
/// none) counts as moved.
fn moved(folder: &Opened, path: &Path) -> Option<PathBuf> {
    let link = format!("/proc/self/fd/{}", folder.fd.as_raw_fd());
    match std::fs::read_link(link) {
        Ok(now) if now == path => None,
        Ok(now) => Some(now),
        Err(_) => Some(PathBuf::from("(unknown)")),
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
