//! Spawning on Linux without a fork: `clone(CLONE_VM | CLONE_VFORK |
//! CLONE_PIDFD)`, the way `posix_spawn` does it, plus the sandbox.
//!
//! The standard library spawns with `posix_spawn` (cheap) unless a `pre_exec`
//! hook is set, and the sandbox needs one; then it forks, and a fork copies the
//! host's page tables: about 1 ms with 16 MB resident, 40 ms with 1 GB. Here
//! the child shares the parent's memory until `exec`, on a small stack of its
//! own, while the calling thread waits (`CLONE_VFORK`). So a confined spawn
//! costs the same as an unconfined one, whatever the host's size.
//!
//! Sharing the parent's memory is what makes this delicate. The child:
//! - runs [`child_main`], which only reads what the parent built (paths, argv,
//!   envp, the sandbox's ruleset and program) and makes plain system calls
//!   through libc: no allocation, no lock, no unwinding, no `std` I/O;
//! - starts with every signal blocked (the parent blocks them around `clone`),
//!   so no handler of the host runs on the child's stack; it resets every
//!   handled signal to its default (and `SIGPIPE`, which Rust ignores), then
//!   unblocks all of them just before `exec`, as the standard library does;
//! - writes `errno` into the thread-local of the suspended parent thread,
//!   which nobody reads meanwhile (glibc's `posix_spawn` relies on the same);
//! - reports a failed step by writing it into [`Shared`] and exiting; the
//!   parent, released by the exit, reads it, reaps the child and returns it.
//!
//! Kernels without `CLONE_PIDFD` (before 5.2) refuse the flags; the caller then
//! falls back to the standard library's spawn (see `process.rs`).
//!
//! Where the sandbox joins a user namespace, the plugin also gets a PID
//! namespace of its own, so that nothing it starts outlives it (not even a
//! process that left its session): the child makes the namespace and clones
//! its first process as the host's child (`CLONE_PARENT`), which clones the
//! plugin, then `exec`s `plughost-init` (see `init.rs`). The host watches and
//! signals that first process; the plugin's status comes back on a pipe.
//!
//! A per-call plugin there runs in a resident PID namespace instead, kept
//! from call to call (`resident.rs`), when one is free: no process more
//! than the plugin itself per call, and the host does not wait for its
//! `exec`.
//!
//! Where the sandbox has no user namespace (Landlock alone), the same first
//! process runs the plugin without a PID namespace, as a child subreaper:
//! orphans of the plugin's tree come to it, and it kills every one of them
//! before it reports the plugin's end (`init/main.rs`, `reap`). The host
//! then ends it with [`unix::END`](super::unix::END), never `SIGKILL`, which
//! would end it before it ended the rest.

use std::cell::Cell;
use std::collections::VecDeque;
use std::ffi::{CString, OsStr, OsString, c_int, c_void};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

use super::stack::Stack;
use crate::run::sandbox::{self, ChildSteps, init};

/// Set once the kernel refused `CLONE_PIDFD`: every later spawn falls back.
static UNSUPPORTED: AtomicBool = AtomicBool::new(false);

/// A child that has exec'd: its pid, a pidfd for it (or a resident's
/// status pipe), and the parent's ends of its stdin, stdout and stderr pipes.
pub(super) struct Spawned {
    /// The process the host watches and signals (its group's id); 0 for
    /// a resident's call, which the host ends through the resident.
    pub pid: u32,
    /// The plugin's own pid, as the host sees it: `pid` unless that is
    /// the init of the plugin's PID namespace (0 in a resident's).
    pub plugin_pid: u32,
    /// A pidfd of `pid`; for a resident's call, the read end of its status
    /// pipe, readable once the resident reported the call's end.
    pub pidfd: OwnedFd,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// In a PID namespace, `pid` is the namespace's init: this pipe brings
    /// the plugin's wait status (4 bytes, written as the plugin ends).
    pub status: Option<OwnedFd>,
    /// `pid` is a reaping `plughost-init` (no PID namespace), ended with
    /// [`unix::END`](super::unix::END) rather than `SIGKILL`.
    pub reaps: bool,
    /// The call runs in a resident init (see `resident.rs`), which writes
    /// the plugin's status on `pidfd` once the plugin and all it started
    /// are gone.
    pub resident: Option<super::resident::Call>,
}

/// What the child does, built by the parent before `clone`. It owns what
/// its pointers and descriptors refer to, so it can move to a spawner thread
/// while its caller waits elsewhere (or gives up).
struct Plan {
    program: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    /// The child's ends of its pipes, at 3 or above.
    stdio: [RawFd; 3],
    sandbox: Option<ChildSteps>,
    /// The strings `argv` and `envp` point into.
    _strings: Vec<CString>,
    /// The descriptors `stdio` names, closed in the parent once the child
    /// has them (by a resident, for a call it runs: `None` then).
    child_ends: Option<[OwnedFd; 3]>,
    /// Keeps the ruleset and namespace descriptors `sandbox` names open.
    _confinement: Option<sandbox::Prepared>,
    /// A PID namespace of its own, under `plughost-init`.
    init: Option<InitPlan>,
}

/// What the namespace's first process needs: descriptors that stay open
/// across the spawn (the image and lifeline are the host's for good).
struct InitPlan {
    image: RawFd,
    lifeline: RawFd,
    /// The write end of the status pipe, which the init gets as descriptor 3.
    status: OwnedFd,
    /// A PID namespace of its own (the user namespace works); otherwise
    /// the init is a child subreaper in the host's.
    pid_namespace: bool,
}

// SAFETY: the raw pointers in `argv` and `envp` point into heap buffers the
// plan owns (`program`, `_strings`), which do not move when the plan does;
// the descriptors it names are owned by it too. Only one thread uses a
// plan at a time.
unsafe impl Send for Plan {}

/// The step of the child that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Step {
    Signals = 1,
    ProcessGroup,
    Stdio,
    CloseOnExec,
    Namespaces,
    Chdir,
    Sandbox,
    Exec,
    PidNamespace,
    Init,
}

impl Step {
    fn from_u32(n: u32) -> Step {
        match n {
            1 => Step::Signals,
            2 => Step::ProcessGroup,
            3 => Step::Stdio,
            4 => Step::CloseOnExec,
            5 => Step::Namespaces,
            6 => Step::Chdir,
            7 => Step::Sandbox,
            9 => Step::PidNamespace,
            10 => Step::Init,
            _ => Step::Exec,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Step::Signals => "cannot reset the signal handlers",
            Step::ProcessGroup => "cannot give the plugin a session of its own",
            Step::Stdio => "cannot connect the plugin's stdin, stdout and stderr",
            Step::CloseOnExec => "cannot keep the host's open files from the plugin",
            Step::Namespaces => "cannot enter the plugin's namespaces",
            Step::Chdir => "cannot enter the plugin's folder",
            Step::Sandbox => "cannot confine the plugin",
            Step::Exec => "cannot run the plugin",
            Step::PidNamespace => "cannot give the plugin a PID namespace of its own",
            Step::Init => "cannot start plughost-init in the plugin's PID namespace",
        }
    }
}

/// What the parent and the child share: the plan, and the failure the child
/// reports.
#[repr(C)]
struct Shared<'a> {
    plan: &'a Plan,
    errno: c_int,
    step: u32,
    /// With a PID namespace: the tops of the stacks its first process and
    /// the plugin run on before their `exec`, and the first process's pid
    /// (in the host's namespace), which the child learns.
    init_stack: *mut c_void,
    plugin_stack: *mut c_void,
    init_pid: c_int,
    /// Whether the init mounted a `/proc` of the namespace's own.
    own_proc: bool,
    /// The plugin's pid as the host sees it, where the init is in the
    /// host's PID namespace (a reaping init); -1 otherwise.
    plugin_pid: c_int,
    /// Set by the host when the call is gone: the child stops trying
    /// `exec` again (see [`confine_and_exec`]).
    given_up: AtomicBool,
}

impl<'a> Shared<'a> {
    fn new(plan: &'a Plan) -> Shared<'a> {
        Shared {
            plan,
            errno: 0,
            step: 0,
            init_stack: ptr::null_mut(),
            plugin_stack: ptr::null_mut(),
            init_pid: -1,
            own_proc: false,
            plugin_pid: -1,
            given_up: AtomicBool::new(false),
        }
    }
}

/// Starts `program` with `args`, exactly the environment `env`, in `cwd`, in a
/// process group of its own, with piped stdio, confined by `sandbox`.
///
/// `Ok(None)` when this kernel cannot spawn this way (no `CLONE_PIDFD`); the
/// caller uses the standard library instead. A failing step of the child is
/// an error carrying its errno (a failed `exec` keeps the bare errno, so
/// `ETXTBSY` and `ENOENT` read as they do from the standard library).
pub(super) async fn spawn(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(OsString, OsString)],
    sandbox: Option<&sandbox::Prepared>,
) -> io::Result<Option<Spawned>> {
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let program = resolve(program, env)?;
    let c = |s: &OsStr| {
        CString::new(s.as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{:?} contains a NUL byte", s),
            )
        })
    };
    let program = c(program.as_os_str())?;
    let args = args
        .iter()
        .map(|a| c(OsStr::new(a)))
        .collect::<io::Result<Vec<_>>>()?;
    let env = env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            c(&kv)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let argv = std::iter::once(&program)
        .chain(&args)
        .map(|s| s.as_ptr())
        .chain([ptr::null()])
        .collect();
    let envp = env
        .iter()
        .map(|s| s.as_ptr())
        .chain([ptr::null()])
        .collect();
    let mut strings = args;
    strings.extend(env);
    let (stdin_child, stdin) = pipe()?;
    let (stdout, stdout_child) = pipe()?;
    let (stderr, stderr_child) = pipe()?;
    let confinement = sandbox.filter(|s| !s.is_empty()).cloned();
    let mut steps = confinement.as_ref().map(sandbox::Prepared::child_steps);
    let joins_user = steps
        .and_then(|s| s.joins)
        .is_some_and(|joins| joins.user >= 0);
    if let Some(steps) = steps.as_mut().filter(|_| !joins_user) {
        // A `/proc` of its own is that of its PID namespace, and there is
        // none without the user namespace: mounted there, it would be the
        // host's whole `/proc`, readable.
        steps.own_proc = false;
    }
    let residents = confinement
        .as_ref()
        .and_then(sandbox::Prepared::kept)
        .and_then(sandbox::Kept::get::<super::resident::Residents>);
    let mut plan = Plan {
        program,
        argv,
        envp,
        cwd: c(cwd.as_os_str())?,
        stdio: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr_child.as_raw_fd(),
        ],
        sandbox: steps,
        _strings: strings,
        child_ends: Some([stdin_child, stdout_child, stderr_child]),
        _confinement: confinement,
        init: None,
    };
    // The threads that hold the seccomp program (the child inherits it),
    // chosen once: the plan no longer names the program afterwards.
    let spawner = filtered_spawner(&mut plan);
    // A per-call plugin in a PID namespace: a resident init's, if one is
    // free (see `resident.rs`). Only under Landlock, whose domain keeps the
    // plugin from tracing the resident, a process of the host's memory; and
    // through a spawner thread, whose program and pids cgroup a new
    // resident inherits.
    let resident = plan
        .sandbox
        .is_some_and(|s| joins_user && !s.own_proc && s.ruleset.is_some());
    if let (Some(spawner), Some(residents), Some(steps)) =
        (spawner, residents.filter(|_| resident), plan.sandbox)
    {
        // A free one is taken from here; a new one is made on a spawner
        // thread (it inherits that thread's program and pids cgroup).
        let claimed = match super::resident::claim(&residents) {
            Some(claimed) => Some(claimed),
            None => spawner.make_resident(residents, steps).await?,
        };
        if let Some(claimed) = claimed {
            let (read, write) = super::resident::status_pipe()?;
            match super::resident::start_in(claimed, ResidentJob::new(plan), write) {
                // The host signals a resident's call through it, never by
                // pid.
                Ok(call) => {
                    return Ok(Some(Spawned {
                        pid: 0,
                        plugin_pid: 0,
                        pidfd: read,
                        stdin,
                        stdout,
                        stderr,
                        status: None,
                        reaps: false,
                        resident: Some(call),
                    }));
                }
                Err(job) => plan = (*job).into_plan(),
            }
        }
    }
    let status = match init::get() {
        Ok(init) if plan.sandbox.is_some() => {
            let (read, write) = pipe()?;
            // Read once the init has exited, without waiting: one killed
            // before it wrote leaves nothing, and a child another spawn is
            // cloning may hold a copy of the write end for an instant.
            // SAFETY: F_SETFL sets flags on a descriptor we own.
            if unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
                return Err(io::Error::last_os_error());
            }
            plan.init = Some(InitPlan {
                image: init.image(),
                lifeline: init.lifeline(),
                status: write,
                pid_namespace: joins_user,
            });
            Some(read)
        }
        _ => None,
    };
    let reaps = plan.init.as_ref().is_some_and(|init| !init.pid_namespace);
    let spawned = match spawner {
        Some(spawner) => spawner.run(plan).await?,
        None => clone_and_exec(&plan)?,
    };
    let Some((pid, pidfd, known)) = spawned else {
        return Ok(None);
    };
    let plugin_pid = match known {
        Some(plugin) => plugin,
        None if status.is_some() => only_child(pid).unwrap_or(pid),
        None => pid,
    };
    Ok(Some(Spawned {
        pid,
        plugin_pid,
        pidfd,
        stdin,
        stdout,
        stderr,
        status,
        reaps,
        resident: None,
    }))
}

/// The one child of `pid` (an init that has started the plugin and nothing
/// else yet), from `/proc`; `None` if the plugin is already gone or this
/// kernel does not list children.
fn only_child(pid: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// Threads that spawn children which inherit their seccomp filter.
///
/// Attaching a seccomp filter compiles it (the kernel JITs every program it is
/// given, even the same one) and frees it when the process exits: about 80 µs
/// a spawn on these machines, more than the rest of the sandbox together. A
/// filter is per thread and inherited by the children a thread creates, so
/// each of these threads installs one program on itself once (they never
/// make a socket) and every child that must have that program is cloned
/// from one of them, already filtered. There is a set of threads per program
/// (the sandbox has two: no sockets, and TCP only for host grants).
///
/// The caller awaits the outcome without holding its runtime thread, which
/// goes on with other calls. A `CLONE_VFORK` spawn holds its spawner thread
/// until the child execs, so there is one thread per core (at most four): one
/// thread would make the spawns of concurrent calls wait in line. The jobs
/// wait in one queue, and a new job wakes one idle thread (a channel behind a
/// lock would also wake the thread waiting for that lock).
struct FilteredSpawner {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Every thread joined the plugins' pids cgroup: what they clone starts
    /// in it, and the children need not join it themselves.
    in_tasks_group: AtomicBool,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// Set when a thread could not install the program: the others end.
    closed: bool,
}

/// What a spawner thread is handed, and where its outcome goes.
enum Job {
    /// Clones the plan's child.
    Spawn {
        plan: Plan,
        done: tokio::sync::oneshot::Sender<io::Result<Option<Started>>>,
    },
    /// Takes a free resident init of `residents`, or makes one with
    /// `steps` if there is room (`None` when there is none).
    Resident {
        residents: std::sync::Arc<super::resident::Residents>,
        steps: ChildSteps,
        done: tokio::sync::oneshot::Sender<Option<super::resident::Claimed>>,
    },
}

/// A call's start in a resident: its plan, and what its plugin records
/// there if a step fails (see `resident::Job`).
struct ResidentJob {
    /// Points into `plan`, whose heap allocation lives as long as this.
    shared: Shared<'static>,
    plan: Box<Plan>,
}

// SAFETY: `Plan` is `Send` (see there), and `shared` only points into it;
// through a shared reference, both are only read.
unsafe impl Send for ResidentJob {}
// SAFETY: as above.
unsafe impl Sync for ResidentJob {}

impl ResidentJob {
    fn new(plan: Plan) -> Box<ResidentJob> {
        let plan = Box::new(plan);
        let at: *const Plan = &*plan;
        // SAFETY: the plan's allocation does not move with the box, and
        // is freed only with the job, after `shared` (which has no `Drop`)
        // is no longer read.
        let shared = Shared::new(unsafe { &*at });
        Box::new(ResidentJob { shared, plan })
    }

    fn into_plan(self) -> Plan {
        *self.plan
    }
}

impl super::resident::Job for ResidentJob {
    fn arg(&mut self) -> *mut c_void {
        (&raw mut self.shared).cast()
    }

    fn child_ends(&self) -> [RawFd; 3] {
        self.plan.stdio
    }

    fn give_up(&self) {
        self.shared.given_up.store(true, Ordering::SeqCst);
    }

    fn release_child_ends(&mut self) {
        for end in self.plan.child_ends.take().into_iter().flatten() {
            let _ = end.into_raw_fd();
        }
    }

    fn failure(&self, clone_error: c_int) -> Option<io::Error> {
        if clone_error != 0 {
            return Some(step_error(Step::PidNamespace, clone_error));
        }
        // SAFETY: a valid reference; the plugin wrote it, if at all, before
        // it exec'd or exited, which the resident reported (or died with).
        let (errno, step) = unsafe {
            (
                ptr::read_volatile(&raw const self.shared.errno),
                ptr::read_volatile(&raw const self.shared.step),
            )
        };
        (errno != 0).then(|| step_error(Step::from_u32(step), errno))
    }
}

/// A child started: its pid, a pidfd, and the plugin's pid where the
/// child is a reaping init that knows it (see [`Shared::plugin_pid`]).
type Child = (u32, OwnedFd, Option<u32>);

/// A child a spawner thread started, on its way to the call that asked for
/// it. If that call was dropped meanwhile (before or after the answer was
/// sent), nobody will take it over: dropped unclaimed, it is killed and
/// reaped, so it neither runs on unwatched nor stays a zombie.
struct Started {
    pid: u32,
    pidfd: Option<OwnedFd>,
    plugin_pid: Option<u32>,
}

impl Started {
    fn claim(mut self) -> Child {
        let pidfd = self.pidfd.take().expect("claimed once");
        (self.pid, pidfd, self.plugin_pid)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.pidfd.is_some() {
            // A reaping init is ended with END, the rest with SIGKILL.
            let signal = if self.plugin_pid.is_some() {
                super::unix::END
            } else {
                super::unix::SIGKILL
            };
            kill_and_reap(self.pid, signal);
        }
    }
}

/// The spawners started so far, one per program (a failed start is kept
/// as `None`, so it is not tried again). A handful at most: the sandbox's
/// programs are static.
static FILTERED_SPAWNERS: Mutex<Vec<(usize, Option<&'static FilteredSpawner>)>> =
    Mutex::new(Vec::new());

/// The spawner for `plan` when its child must install a seccomp program; the
/// plan then leaves that step to the inherited filter. `None`: the child
/// installs the program itself (no program, or no spawner thread here).
fn filtered_spawner(plan: &mut Plan) -> Option<&'static FilteredSpawner> {
    let steps = plan.sandbox.as_mut()?;
    if steps.own_proc {
        // Its init mounts a `/proc`, which the spawner threads' program
        // refuses: the child installs the program itself, after the mount.
        return None;
    }
    let program = steps.seccomp?;
    let key = program.as_ptr() as usize;
    let spawner = {
        let mut spawners = FILTERED_SPAWNERS.lock().unwrap_or_else(|e| e.into_inner());
        match spawners.iter().find(|(k, _)| *k == key) {
            Some((_, s)) => *s,
            None => {
                let started = FilteredSpawner::start(program);
                spawners.push((key, started));
                started
            }
        }
    }?;
    steps.seccomp = None;
    if spawner.in_tasks_group.load(Ordering::Relaxed) {
        steps.tasks_group = -1;
    }
    Some(spawner)
}

impl FilteredSpawner {
    /// Starts the threads and installs `program` on each; `None` if any fails.
    fn start(program: &'static [libc::sock_filter]) -> Option<&'static FilteredSpawner> {
        let spawner: &'static FilteredSpawner = Box::leak(Box::new(FilteredSpawner {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            wake: Condvar::new(),
            in_tasks_group: AtomicBool::new(true),
        }));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
        let (ready, installed) = mpsc::sync_channel(threads);
        let mut started = 0;
        for _ in 0..threads {
            let ready = ready.clone();
            let thread = std::thread::Builder::new()
                .name("plughost-spawner".into())
                .stack_size(256 * 1024)
                .spawn(move || {
                    let steps = ChildSteps {
                        joins: None,
                        ruleset: None,
                        proc_self: 0,
                        own_proc: false,
                        proc_whole: false,
                        seccomp: Some(program),
                        seccomp_namespaces: None,
                        tasks_group: -1,
                        drop_privileges: true,
                        tasks: 0,
                    };
                    if !sandbox::join_tasks_group() {
                        spawner.in_tasks_group.store(false, Ordering::Relaxed);
                    }
                    let ok = sandbox::enforce(&steps) == 0;
                    let _ = ready.send(ok);
                    if ok {
                        spawner.serve();
                    }
                });
            if thread.is_err() {
                break;
            }
            started += 1;
        }
        drop(ready);
        let all_installed =
            started == threads && (0..threads).all(|_| installed.recv() == Ok(true));
        if !all_installed {
            spawner.lock().closed = true;
            spawner.wake.notify_all();
            return None;
        }
        Some(spawner)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A spawner thread's loop: the next job, until the spawner is closed.
    fn serve(&self) {
        loop {
            let job = {
                let mut queue = self.lock();
                loop {
                    if queue.closed {
                        return;
                    }
                    if let Some(job) = queue.jobs.pop_front() {
                        break job;
                    }
                    queue = self.wake.wait(queue).unwrap_or_else(|e| e.into_inner());
                }
            };
            match job {
                Job::Spawn { plan, done } => {
                    let outcome = clone_and_exec(&plan).map(|spawned| {
                        spawned.map(|(pid, pidfd, plugin_pid)| Started {
                            pid,
                            pidfd: Some(pidfd),
                            plugin_pid,
                        })
                    });
                    drop(plan);
                    // Refused when the call is gone: the outcome is dropped here then.
                    let _ = done.send(outcome);
                }
                Job::Resident {
                    residents,
                    steps,
                    done,
                } => {
                    let claimed =
                        super::resident::claim_or_make(&residents, steps, resident_plugin_main);
                    // Refused when the call is gone: dropped here then, the
                    // resident is free again.
                    let _ = done.send(claimed);
                }
            }
        }
    }

    /// Queues `job` for the next free spawner thread; an error once the
    /// threads are gone.
    fn submit(&self, job: Job) -> io::Result<()> {
        {
            let mut queue = self.lock();
            if queue.closed {
                return Err(gone());
            }
            queue.jobs.push_back(job);
        }
        self.wake.notify_one();
        Ok(())
    }

    /// Spawns `plan` from a spawner thread.
    async fn run(&self, plan: Plan) -> io::Result<Option<Child>> {
        let (done, outcome) = tokio::sync::oneshot::channel();
        self.submit(Job::Spawn { plan, done })?;
        let started = outcome.await.map_err(|_| gone())??;
        Ok(started.map(Started::claim))
    }

    /// A free resident init of `residents`, or one made on a spawner thread
    /// (it inherits the thread's seccomp program and pids cgroup) for
    /// plugins confined by `steps`; `None` when there is none.
    async fn make_resident(
        &self,
        residents: std::sync::Arc<super::resident::Residents>,
        steps: ChildSteps,
    ) -> io::Result<Option<super::resident::Claimed>> {
        let (done, outcome) = tokio::sync::oneshot::channel();
        self.submit(Job::Resident {
            residents,
            steps,
            done,
        })?;
        outcome.await.map_err(|_| gone())
    }
}

/// The error of a spawn whose spawner threads are gone.
fn gone() -> io::Error {
    io::Error::other("the spawner thread is gone")
}

/// The path `exec` gets: a relative path is taken from the host's current
/// folder (not the child's), and a bare name is looked up in the `PATH` of
/// `env` (or the host's), as the standard library does.
fn resolve(program: &Path, env: &[(OsString, OsString)]) -> io::Result<PathBuf> {
    if program.is_absolute() {
        return Ok(program.to_owned());
    }
    if program.components().count() > 1 {
        return Ok(std::env::current_dir()?.join(program));
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

/// A pipe as (read end, write end), both close-on-exec and at descriptor 3
/// or above, so the child's `dup2` onto 0, 1 and 2 never overwrites one of
/// its own pipe ends (a host started with a closed stdin would get 0 here).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` is a valid array of two ints, which pipe2 fills.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two new descriptors that nothing else owns.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(r)?, above_stdio(w)?))
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates an open descriptor we own.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fcntl returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}

/// Clones a child that runs `plan` and returns once it has exec'd (its pid
/// and pidfd) or failed (reaped, the failing step as the error). `Ok(None)`:
/// the kernel does not know `CLONE_PIDFD`.
fn clone_and_exec(plan: &Plan) -> io::Result<Option<Child>> {
    // Each thread keeps its stacks for the next spawn: mapping and unmapping
    // one per spawn costs page faults and, in a multi-threaded host, a TLB
    // shootdown on every CPU. A thread spawns one child at a time (it waits
    // until the child has exec'd), so the stacks are free again on return.
    let stacks = if plan.init.is_some() { 3 } else { 1 };
    let mut spare = SPARE_STACKS.try_with(Cell::take).unwrap_or_default();
    while spare.len() < stacks {
        spare.push(Stack::new()?);
    }
    let spawned = clone_on(plan, &spare[..stacks]);
    let _ = SPARE_STACKS.try_with(|cell| cell.set(spare));
    spawned
}

thread_local! {
    static SPARE_STACKS: Cell<Vec<Stack>> = const { Cell::new(Vec::new()) };
}

/// Clones the child on `stacks[0]`. With three stacks (a PID namespace), the
/// child makes the namespace, clones its first process on `stacks[1]` as a
/// child of this process (`CLONE_PARENT`), which clones the plugin on
/// `stacks[2]`; the child exits once the first process has exec'd
/// `plughost-init`. What is returned is that first process; the child is
/// reaped here.
fn clone_on(plan: &Plan, stacks: &[Stack]) -> io::Result<Option<Child>> {
    let mut shared = Shared {
        init_stack: stacks.get(1).map_or(ptr::null_mut(), Stack::top),
        plugin_stack: stacks.get(2).map_or(ptr::null_mut(), Stack::top),
        ..Shared::new(plan)
    };
    // Every signal blocked in this thread across the clone: the child
    // inherits the mask, so no handler of the host can run on its stack
    // before it resets them.
    let mut all = MaybeUninit::<libc::sigset_t>::uninit();
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes `all`; pthread_sigmask reads `all` and
    // writes the previous mask into `old`.
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr());
    }
    let mut pidfd: c_int = -1;
    // SAFETY: `child_main` gets a pointer to `shared`, which lives until this
    // function returns; CLONE_VFORK suspends this thread until the child has
    // exec'd or exited, so the child's use of `shared`, `plan` and the stacks
    // ends before either is touched again or freed. The stack pointer is the
    // top of a mapping the child alone uses. With CLONE_PIDFD, clone(2)
    // stores the pidfd through the parent_tid argument, which is `pidfd`.
    let pid = unsafe {
        libc::clone(
            child_main,
            stacks[0].top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
            (&raw mut shared).cast(),
            &raw mut pidfd,
        )
    };
    let clone_error = io::Error::last_os_error();
    // SAFETY: `old` was initialized by the pthread_sigmask call above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), ptr::null_mut()) };
    if pid < 0 {
        if clone_error.raw_os_error() == Some(libc::EINVAL) {
            UNSUPPORTED.store(true, Ordering::Relaxed);
            return Ok(None);
        }
        return Err(clone_error);
    }
    // SAFETY: with CLONE_PIDFD the kernel stored a new descriptor we own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // The child has exec'd or exited (CLONE_VFORK); its writes to `shared`
    // happened before this thread was resumed.
    // SAFETY: `shared` is a valid local; volatile reads keep the compiler
    // from assuming the clone call left it unchanged.
    let (errno, step, init_pid, plugin_pid) = unsafe {
        (
            ptr::read_volatile(&raw const shared.errno),
            ptr::read_volatile(&raw const shared.step),
            ptr::read_volatile(&raw const shared.init_pid),
            ptr::read_volatile(&raw const shared.plugin_pid),
        )
    };
    if let Some(init) = &plan.init {
        let reaps = !init.pid_namespace;
        let end = if reaps {
            super::unix::END
        } else {
            super::unix::SIGKILL
        };
        // The child only made the namespace and its first process, and
        // exited; that process is ours (CLONE_PARENT).
        drop(pidfd);
        reap_failed(pid);
        if errno == 0 && init_pid > 0 {
            // Only this process can reap it, so its pid is still its own.
            // SAFETY: pidfd_open takes a pid and flags and returns a new
            // descriptor or -1.
            let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, init_pid, 0) };
            if raw >= 0 {
                // SAFETY: a descriptor we own, just returned by the kernel.
                let init_pidfd = unsafe { OwnedFd::from_raw_fd(raw as RawFd) };
                let plugin = (reaps && plugin_pid > 0).then_some(plugin_pid as u32);
                return Ok(Some((init_pid as u32, init_pidfd, plugin)));
            }
            let error = io::Error::last_os_error();
            kill_and_reap(init_pid as u32, end);
            return Err(error);
        }
        if init_pid > 0 {
            reap_failed(init_pid);
        }
        let errno = if errno == 0 { libc::ECHILD } else { errno };
        return Err(step_error(Step::from_u32(step), errno));
    }
    if errno == 0 {
        return Ok(Some((pid as u32, pidfd, None)));
    }
    reap_failed(pid);
    Err(step_error(Step::from_u32(step), errno))
}

/// The error of a child's failed step (a failed `exec` keeps the bare errno,
/// so `ETXTBSY` and `ENOENT` read as they do from the standard library).
fn step_error(step: Step, errno: c_int) -> io::Error {
    let error = io::Error::from_raw_os_error(errno);
    if step == Step::Exec {
        return error;
    }
    io::Error::new(error.kind(), format!("{}: {error}", step.describe()))
}

/// Ends the process group of a child nobody took over with `signal`
/// (`SIGKILL`, or END for a reaping init, which ends what it holds first),
/// and reaps it.
fn kill_and_reap(pid: u32, signal: i32) {
    // The group is the child's own (it called setsid()) and, unreaped,
    // its id cannot have been reused.
    super::unix::signal_group(pid, signal);
    reap_failed(pid as libc::pid_t);
}

/// Reaps a child that reported a failure and exited.
fn reap_failed(pid: libc::pid_t) {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only into `status`, a valid local.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Records the failing step and exits; the parent reports it.
///
/// # Safety
/// Only in the child, with `shared` the parent's [`Shared`].
unsafe fn fail(shared: *mut Shared<'_>, step: Step, errno: c_int) -> ! {
    // SAFETY: `shared` points to the parent's Shared, alive and not read by
    // the suspended parent until this process exits.
    unsafe {
        ptr::write_volatile(
            &raw mut (*shared).errno,
            if errno == 0 { libc::ECHILD } else { errno },
        );
        ptr::write_volatile(&raw mut (*shared).step, step as u32);
        libc::_exit(127)
    }
}

/// The calling thread's errno (in the child: the suspended parent thread's).
fn errno() -> c_int {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// The child, between `clone` and `exec`. See the module docs for what it
/// may do.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    let shared = arg.cast::<Shared<'_>>();
    // SAFETY: `arg` is the parent's `shared`, valid while the parent is
    // suspended, which it is until this process execs or exits.
    let plan = unsafe { (*shared).plan };
    // SAFETY: every call below is a libc wrapper of one system call, given
    // pointers into the parent's live data (the plan, its strings and
    // arrays, which the parent keeps alive) or to locals of this frame.
    unsafe {
        detach(shared, super::signals::all());
        // Namespaces before the folder: joining a mount namespace moves the
        // current folder to its root.
        if let Some(steps) = &plan.sandbox {
            let rc = sandbox::join(steps);
            if rc != 0 {
                fail(shared, Step::Namespaces, rc);
            }
        }
        let init_stack = (*shared).init_stack;
        if init_stack.is_null() {
            confine_and_exec(shared, plan.sandbox, 0);
        }
        // A PID namespace (this process stays in the host's; its children
        // are made in the new one), where the user namespace works. Its
        // first process must be this one's sibling, a child of the host
        // (CLONE_PARENT): this one exits below.
        if plan.init.as_ref().is_some_and(|init| init.pid_namespace)
            && libc::unshare(libc::CLONE_NEWPID) != 0
        {
            fail(shared, Step::PidNamespace, errno());
        }
        let init = libc::clone(
            init_main,
            init_stack,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT | libc::SIGCHLD,
            arg,
        );
        if init < 0 {
            fail(shared, Step::PidNamespace, errno());
        }
        // Resumed once the first process has exec'd or failed (it wrote
        // its step into `shared` then).
        ptr::write_volatile(&raw mut (*shared).init_pid, init);
        libc::_exit(0)
    }
}

/// The first process of the plugin's PID namespace, cloned by
/// [`child_main`]: a session of its own (the host signals its group), the
/// plugin as its child, then `plughost-init` with the plugin's pid.
extern "C" fn init_main(arg: *mut c_void) -> c_int {
    let shared = arg.cast::<Shared<'_>>();
    // SAFETY: `arg` is the host's `shared`, valid while the host thread is
    // suspended, which it is until `child_main`'s process exits, after this
    // one has exec'd or exited (CLONE_VFORK). Every call is a libc wrapper
    // of one system call on the plan, which the host keeps alive, or on
    // locals of this frame.
    unsafe {
        let plan = (*shared).plan;
        let Some(init) = &plan.init else {
            fail(shared, Step::Init, libc::EINVAL)
        };
        if libc::setsid() < 0 {
            fail(shared, Step::ProcessGroup, errno());
        }
        // Without a PID namespace, the orphans of the plugin's tree come
        // here instead of to the machine's init, for `plughost-init` to end.
        if !init.pid_namespace && libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            fail(shared, Step::Init, errno());
        }
        if init.pid_namespace && plan.sandbox.is_some_and(|steps| steps.own_proc) {
            ptr::write_volatile(&raw mut (*shared).own_proc, sandbox::mount_own_proc());
        }
        // The confinement of every process of the namespace, taken once
        // here and inherited by the plugin: no capability, no new
        // privileges, no namespace, the seccomp programs. Not the plugin's
        // Landlock domain, so the plugin cannot trace this process
        // (Landlock refuses tracing a process outside its domain).
        if let Some(steps) = &plan.sandbox {
            let rc = sandbox::enforce(&steps.for_init());
            if rc != 0 {
                fail(shared, Step::Sandbox, rc);
            }
        }
        // A reaping init ends the plugin's tree with one `kill(-1)`, which
        // only a domain that scopes signals keeps to that tree; without
        // one it kills its children one by one (`init/main.rs`).
        let scoped = !init.pid_namespace && sandbox::scope_signals();
        let plugin = libc::clone(
            plugin_main,
            (*shared).plugin_stack,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        );
        if plugin < 0 {
            fail(shared, Step::PidNamespace, errno());
        }
        if ptr::read_volatile(&raw const (*shared).errno) != 0 {
            // The plugin failed a step and said which; its namespace ends
            // with this process.
            libc::_exit(127);
        }
        if !init.pid_namespace {
            // In the host's PID namespace, the host's pid for the plugin.
            ptr::write_volatile(&raw mut (*shared).plugin_pid, plugin);
        }
        // The plugin has its stdio; the init has the status pipe as 3 and
        // the lifeline as 4, and nothing else (the rest is close-on-exec).
        // Each copied above 4 first: any of them may be at 3 or 4 already
        // (and be overwritten by the `dup2`s), and `dup2` onto the same
        // number would leave it close-on-exec.
        let status = libc::fcntl(init.status.as_raw_fd(), libc::F_DUPFD, 5);
        let lifeline = libc::fcntl(init.lifeline, libc::F_DUPFD, 5);
        let image = libc::fcntl(init.image, libc::F_DUPFD_CLOEXEC, 5);
        if status < 0
            || lifeline < 0
            || image < 0
            || libc::dup2(status, 3) < 0
            || libc::dup2(lifeline, 4) < 0
        {
            fail(shared, Step::Init, errno());
        }
        libc::close(status);
        libc::close(lifeline);
        for fd in 0..3 {
            libc::close(fd);
        }
        // argv: the name, and the plugin's pid in the namespace.
        let mut digits = [0u8; 12];
        let mut start = digits.len() - 1;
        let mut n = plugin as u32;
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let argv = [
            c"plughost-init".as_ptr(),
            digits[start..].as_ptr().cast(),
            if init.pid_namespace {
                ptr::null()
            } else if scoped {
                c"reap-scoped".as_ptr()
            } else {
                c"reap".as_ptr()
            },
            ptr::null(),
        ];
        let envp = [ptr::null::<libc::c_char>()];
        libc::syscall(
            libc::SYS_execveat,
            image,
            c"".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        );
        fail(shared, Step::Init, errno())
    }
}

/// The plugin in a PID namespace, cloned by [`init_main`].
extern "C" fn plugin_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the host's `shared`, valid while the host thread is
    // suspended, which it is until this process has exec'd or exited
    // (CLONE_VFORK, twice over).
    unsafe {
        let shared = arg.cast::<Shared<'_>>();
        // In the session of the init until now: one of its own again.
        if libc::setsid() < 0 {
            fail(shared, Step::ProcessGroup, errno());
        }
        let plan = (*shared).plan;
        let own_proc = ptr::read_volatile(&raw const (*shared).own_proc);
        confine_and_exec(
            shared,
            plan.sandbox.map(|steps| steps.after_init(own_proc)),
            0,
        )
    }
}

/// The plugin of a resident init (see `resident.rs`), cloned by it: what
/// [`child_main`] does for a spawn of its own (signals, session, stdio),
/// then the plugin's own confinement and `exec`.
extern "C" fn resident_plugin_main(arg: *mut c_void) -> c_int {
    let shared = arg.cast::<Shared<'_>>();
    // SAFETY: `arg` is the `shared` of the call's job, which the host keeps
    // until the resident has cloned this process, which returns once it
    // has exec'd or exited (CLONE_VFORK). Every call is a libc wrapper of
    // one system call.
    unsafe {
        // The resident handles only these; every other signal it left at
        // its default.
        detach(shared, super::resident::HANDLED.into_iter());
        let plan = (*shared).plan;
        // Nobody waits for this `exec` to retry it (see `process.rs`): an
        // entrypoint still open for writing is waited for here.
        let busy_retries = 20;
        confine_and_exec(
            shared,
            plan.sandbox.map(|steps| steps.after_init(false)),
            busy_retries,
        )
    }
}

/// A spawned child's first steps, whatever it runs: each of `signals` that
/// has a handler back to its default, a session of its own, the plan's
/// stdio, every other descriptor closed at `exec`.
///
/// # Safety
/// Only in a child, with `shared` the parent's [`Shared`].
unsafe fn detach(shared: *mut Shared<'_>, signals: impl Iterator<Item = c_int>) {
    // SAFETY: as in `child_main`: libc wrappers of single system calls on
    // the parent's live plan and locals of this frame.
    unsafe {
        let plan = (*shared).plan;
        // Signal handlers back to their defaults (the dispositions are this
        // process's own copy; see `signals.rs`).
        let rc = super::signals::to_defaults(signals);
        if rc != 0 {
            fail(shared, Step::Signals, rc);
        }
        // A session of its own, which is a process group of its own too:
        // no controlling terminal, so `/dev/tty` does not open and no
        // terminal of the user's can be typed into (TIOCSTI needs it to be
        // the caller's controlling terminal).
        if libc::setsid() < 0 {
            fail(shared, Step::ProcessGroup, errno());
        }
        for (target, &fd) in (0..).zip(&plan.stdio) {
            // The pipe ends are at 3 or above (see `pipe`), so dup2 never
            // lands on one; the copy it makes is inheritable.
            if libc::dup2(fd, target) < 0 {
                fail(shared, Step::Stdio, errno());
            }
        }
        // Every other descriptor the host let be inherited is closed at exec
        // (the flag is per descriptor table, and this one is the child's).
        // Kernels before 5.11 lack the flag; the host opens everything
        // close-on-exec anyway.
        let rc = libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
        if rc != 0 && !matches!(errno(), libc::ENOSYS | libc::EINVAL) {
            fail(shared, Step::CloseOnExec, errno());
        }
    }
}

/// The child's last steps: its folder, the confinement `steps` (the
/// plan's, or what is left of them under an init), `exec` (tried again
/// up to `busy_retries` times, 5 ms apart, while it fails with `ETXTBSY`:
/// only where every descriptor past stdio is the host's, closed at `exec`).
///
/// # Safety
/// Only in the child, with `shared` the parent's [`Shared`].
unsafe fn confine_and_exec(
    shared: *mut Shared<'_>,
    steps: Option<ChildSteps>,
    mut busy_retries: u32,
) -> ! {
    // SAFETY: as in `child_main`: libc wrappers of single system calls on
    // the parent's live plan and locals of this frame.
    unsafe {
        let plan = (*shared).plan;
        if libc::chdir(plan.cwd.as_ptr()) != 0 {
            fail(shared, Step::Chdir, errno());
        }
        if let Some(steps) = &steps {
            let rc = sandbox::enforce(steps);
            if rc != 0 {
                fail(shared, Step::Sandbox, rc);
            }
        }
        let mut none = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(none.as_mut_ptr());
        libc::sigprocmask(libc::SIG_SETMASK, none.as_ptr(), ptr::null_mut());
        loop {
            libc::execve(
                plan.program.as_ptr(),
                plan.argv.as_ptr(),
                plan.envp.as_ptr(),
            );
            if errno() != libc::ETXTBSY
                || busy_retries == 0
                || (*shared).given_up.load(Ordering::SeqCst)
            {
                break;
            }
            busy_retries -= 1;
            // The writer may be the host itself: this process holds copies
            // of the host's descriptors, which `exec` would close (none is
            // needed past it), and one may be the one writing.
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 5_000_000,
            };
            libc::nanosleep(&pause, ptr::null_mut());
        }
        fail(shared, Step::Exec, errno())
    }
}
