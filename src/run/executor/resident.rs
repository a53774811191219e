//! Resident inits: PID namespaces kept from one call to the next.
//!
//! A per-call plugin at the namespace level runs as the second process of a
//! PID namespace of its own, so that nothing it starts outlives the call.
//! Made for each call, that namespace costs two processes more than the
//! plugin itself (the child that joins plughost's namespaces and makes the
//! PID namespace, and its first process, `plughost-init`) and a seccomp
//! program compiled again. A *resident* init is that first process kept:
//! it joins the plugin version's namespaces, takes the confinement every
//! process of the namespace shares (no capability, no new privileges, the
//! seccomp programs, the task limit) once, then starts one call's plugin
//! at a time. When the plugin ends, or the host ends the call, it kills
//! every other process of its namespace (`kill(-1, SIGKILL)` from a PID
//! namespace's first process reaches exactly the namespace), reaps them to
//! the last, reports the plugin's status and waits for the next call. So a
//! call still starts in an empty namespace, and leaves nothing behind.
//!
//! The resident is a process of the host's own memory and descriptor table
//! (`CLONE_VM | CLONE_FILES`, not a thread: a thread cannot be in another
//! user or PID namespace), like the child of every spawn between `clone`
//! and `exec`, but long-lived: so it reads the spawn's plan where the host
//! built it, and the plugin it clones copies the host's descriptors (its
//! pipes among them) as any spawned child does. It runs the raw system
//! calls of [`resident_main`] on a stack of its own, allocates nothing and
//! takes no lock. Its thread-local storage (`errno`) is that of the host
//! thread that made it, which from then on only waits for it to exit.
//! That thread is started by a spawner thread (`spawn_linux.rs`), so it and
//! the resident inherit the seccomp program and the pids cgroup that thread
//! holds: making a resident compiles only the namespace program.
//!
//! The plugin cannot reach it: its Landlock domain keeps it from tracing,
//! reading or signalling a process outside that domain, seccomp refuses
//! `ptrace`, `process_vm_*` and `pidfd_open` of process 1, and the kernel
//! drops the signals a namespace's first process has no handler for. So
//! residents serve only plugins with a Landlock domain.
//!
//! The host and a resident share a [`Slot`]: a state word both wait on
//! (futexes, private to the one address space), the call being started,
//! and the host's requests (end the call, pass `SIGTERM` on), numbered by
//! call so that a late request never reaches the next call.
//!
//! The host hands a call over and goes on without waiting for the
//! plugin's `exec` (waiting, it would be woken once more per call, which
//! cost about a tenth of a tiny call's time here). So:
//! - what the plugin is started from (its [`Job`]) stays with the call
//!   until the resident no longer reads it; a call dropped before then
//!   waits that long (the plugin's steps before `exec`: it stops waiting
//!   out a busy entrypoint once its call is gone);
//! - a resident claimed for a call that is dropped before it is handed the
//!   call is free again ([`Claimed`]);
//! - the resident closes the host's copies of the plugin's pipe ends once
//!   the plugin has its own;
//! - a step the plugin failed (its `exec`, say) is read from the job when
//!   the resident reports, and is the call's outcome then, as it would
//!   have been the spawn's;
//! - the plugin waits out an entrypoint still open for writing (`ETXTBSY`)
//!   itself.
//!
//! The report is one write on the call's status pipe: the plugin's wait
//! status and the errno of its clone.
//!
//! A resident ends after 30 s without a call, when its confinement is
//! dropped (a plugin reloaded or revoked) or the process exits (both wait
//! for it to be reaped, so that none is left to whoever adopts it), and
//! with the host however it ends: its parent-death signal is `SIGKILL`,
//! and its parent is the host thread that made it.

use std::ffi::{c_int, c_void};
use std::io;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::stack::Stack;
use crate::run::sandbox::{self, ChildSteps};

/// How many residents one plugin version keeps. Calls beyond them start a
/// PID namespace of their own, as before.
const RESIDENTS_PER_CONFINEMENT: usize = 32;

/// How many children a resident reaps before it looks at the host's
/// requests again.
const REAPS_PER_TURN: usize = 64;

/// The signals whose disposition a resident sets (`SIGPIPE` ignored, the
/// others handled); every other is at its default there, so its plugin
/// puts only these back before `exec`.
pub(super) const HANDLED: [c_int; 4] = [libc::SIGCHLD, libc::SIGUSR2, libc::SIGTERM, libc::SIGPIPE];

/// How long a resident waits for a call before it goes (seconds).
const IDLE_FOR: libc::time_t = 30;

// A slot's states, and who moves it there.
/// Being made (the thread, until the resident is ready or failed).
const STARTING: u32 = 0;
/// Waiting for a call (the resident).
const FREE: u32 = 1;
/// Taken for a call (the host, from `FREE`).
const CLAIMED: u32 = 2;
/// The call is in `job` (the host, from `CLAIMED`).
const JOB: u32 = 3;
/// The plugin has exec'd or failed, `job` is no longer read (the resident).
const STARTED: u32 = 4;
/// The resident has exited (its thread; the resident itself, from `FREE`,
/// when idle too long).
const GONE: u32 = 5;
/// Its confinement was dropped while it was free: it goes.
const QUIT: u32 = 6;

/// What the host and a resident share: its state, the call it runs, and
/// the host's requests about that call.
#[repr(C)]
pub(super) struct Slot {
    state: AtomicU32,
    /// The call being started, what `entry` gets (the spawn's plan), valid
    /// while the state is `JOB`.
    job: std::sync::atomic::AtomicPtr<c_void>,
    /// The host's copies of the plugin's pipe ends, which the resident
    /// closes (in the descriptor table it shares with the host) once the
    /// plugin has its own; -1 once closed. Whichever takes one closes it.
    child_ends: [AtomicI32; 3],
    /// The write end of the call's status pipe, the resident's to close.
    status_fd: AtomicI32,
    /// The number of the call being run, and the last call the host asked
    /// to end or to terminate.
    call: AtomicU64,
    kill: AtomicU64,
    term: AtomicU64,
    shutdown: AtomicBool,
    /// The resident's pid in the host's PID namespace.
    pid: AtomicI32,
    /// Held while the host signals the resident, and by its thread while
    /// it marks it gone, between its exit and its reaping: a zombie keeps
    /// its pid, so no signal reaches another process that got the pid.
    signalling: Mutex<()>,
    /// Why it could not start (an errno), 0 if it did.
    failed: AtomicI32,
    /// The confinement it takes; read by the resident as it starts.
    steps: ChildSteps,
    /// Its plugin's stack, and what the plugin runs there until `exec`,
    /// given `job`.
    plugin_stack: *mut c_void,
    entry: extern "C" fn(*mut c_void) -> c_int,
}

// SAFETY: every field the resident writes is an atomic; `steps` and
// `plugin_stack` are written once before the resident starts and only read.
unsafe impl Sync for Slot {}
// SAFETY: as above.
unsafe impl Send for Slot {}

/// The residents of one plugin version.
#[derive(Default)]
pub(crate) struct Residents {
    slots: Mutex<Vec<Resident>>,
    /// One could not be made here: its calls start namespaces of their own.
    broken: AtomicBool,
    /// Known to [`quit_all_at_exit`].
    registered: AtomicBool,
}

impl std::fmt::Debug for Residents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Residents")
    }
}

/// A resident, and the thread that made it and reaps it.
struct Resident {
    slot: Arc<Slot>,
    thread: std::thread::JoinHandle<()>,
}

impl Residents {
    /// Ends its residents: a busy one after its call; a free one at once
    /// (the changed state wakes it even if it is only about to wait), and
    /// waits a little for those to be reaped, so that none is left to
    /// whoever adopts it when plughost exits (a container's first process
    /// may never reap). Without waiting for the lock when `now` (at exit,
    /// where a thread that holds it may never let it go).
    fn quit(&self, now: bool) {
        let mut slots = match self.slots.try_lock() {
            Ok(slots) => slots,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if now => return,
            Err(std::sync::TryLockError::WouldBlock) => {
                self.slots.lock().unwrap_or_else(|e| e.into_inner())
            }
        };
        let mut quitting = Vec::new();
        for resident in slots.drain(..) {
            let slot = &resident.slot;
            slot.shutdown.store(true, Ordering::SeqCst);
            let free = slot
                .state
                .compare_exchange(FREE, QUIT, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
            futex_wake(&slot.state);
            if free {
                quitting.push(resident.thread);
            }
        }
        drop(slots);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        for thread in quitting {
            while !thread.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Residents {
    fn drop(&mut self) {
        self.quit(false);
    }
}

/// Every pool that has made a resident, for [`quit_all_at_exit`].
static POOLS: Mutex<Vec<std::sync::Weak<Residents>>> = Mutex::new(Vec::new());

/// Run by the C library's `exit` (a return from `main` included): the
/// residents of pools still alive then (a host not dropped before the
/// process ends) are ended and reaped too.
extern "C" fn quit_all_at_exit() {
    let pools: Vec<_> = match POOLS.try_lock() {
        Ok(mut pools) => pools.drain(..).collect(),
        Err(_) => return,
    };
    for pool in pools.iter().filter_map(std::sync::Weak::upgrade) {
        pool.quit(true);
    }
}

/// Registers `residents` for [`quit_all_at_exit`] (and that, once).
fn register(residents: &Arc<Residents>) {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: atexit takes a function pointer that lives as long as the
    // program and does not unwind (it only takes locks it may skip).
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(quit_all_at_exit);
    });
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    pools.retain(|p| p.strong_count() > 0);
    pools.push(Arc::downgrade(residents));
}

/// A call's start as the host hands it to a resident, kept by its [`Call`]
/// until the resident no longer reads it (the plugin has exec'd, or
/// failed a step and exited).
pub(super) trait Job: Send + Sync {
    /// What the resident's `entry` gets for the plugin.
    fn arg(&mut self) -> *mut c_void;
    /// The host's copies of the plugin's pipe ends, which the resident
    /// closes once the plugin has its own (a copy left open in the host
    /// would keep the plugin's stdout from ever ending).
    fn child_ends(&self) -> [RawFd; 3];
    /// Gives those up without closing them: the resident closes them.
    fn release_child_ends(&mut self);
    /// Tells the plugin, not yet exec'd, that its call is gone: it stops
    /// waiting for its entrypoint (see `ETXTBSY` in the module docs).
    fn give_up(&self);
    /// The plugin's start as an error, if it failed: a step it recorded
    /// before it exited, or `clone_error`, the resident's errno from
    /// cloning it (0 if it did).
    fn failure(&self, clone_error: c_int) -> Option<io::Error>;
}

/// One call run by a resident, as its host side holds it.
pub(super) struct Call {
    slot: Arc<Slot>,
    number: u64,
    job: Box<dyn Job>,
    done: bool,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("slot", &self.slot)
            .field("number", &self.number)
            .finish()
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.end();
        // The job goes with this call: not while the resident may still
        // read it (it is cloning the plugin, which has not exec'd yet). The
        // plugin stops waiting out a busy entrypoint, so this is the time
        // of the steps before its `exec`.
        if self.slot.state.load(Ordering::SeqCst) == JOB
            && self.slot.call.load(Ordering::SeqCst) == self.number
        {
            self.job.give_up();
            loop {
                let state = self.slot.state.load(Ordering::SeqCst);
                if state != JOB || self.slot.call.load(Ordering::SeqCst) != self.number {
                    break;
                }
                futex_wait(&self.slot.state, state);
            }
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("pid", &self.pid.load(Ordering::Relaxed))
            .finish()
    }
}

impl Call {
    /// Asks the resident to end the call: it kills every process of its
    /// namespace, then reports.
    pub(super) fn end(&self) {
        self.ask(&self.slot.kill, libc::SIGUSR2);
    }

    /// The call's outcome once its status pipe (`status`) is readable: the
    /// resident has reported, or died (and its namespace with it), which
    /// reads as `SIGKILL`. An error if the plugin never started.
    pub(super) fn finished(&mut self, status: Option<RawFd>) -> io::Result<ExitStatus> {
        self.done = true;
        let mut report = [0u8; 8];
        let read = status.is_some_and(|fd| super::unix::read_report(fd, &mut report));
        let [wait, clone_error] = [0, 4].map(|at| {
            let bytes = report[at..at + 4].try_into().expect("4 bytes");
            c_int::from_ne_bytes(bytes)
        });
        if let Some(e) = self.job.failure(if read { clone_error } else { 0 }) {
            return Err(e);
        }
        Ok(ExitStatus::from_raw(if read {
            wait
        } else {
            libc::SIGKILL
        }))
    }

    /// Asks the resident to pass `SIGTERM` on to the plugin's group.
    pub(super) fn terminate(&self) {
        self.ask(&self.slot.term, libc::SIGTERM);
    }

    fn ask(&self, request: &AtomicU64, signal: c_int) {
        request.fetch_max(self.number, Ordering::SeqCst);
        let _unreaped = self
            .slot
            .signalling
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Only while it runs this call: once it has reported (free again,
        // or claimed for the next call), the call is over and the signal
        // would only wake it. Before `STARTED` it reads the request itself
        // (stored above) once it has cloned the plugin.
        if self.slot.call.load(Ordering::SeqCst) == self.number
            && self.slot.state.load(Ordering::SeqCst) == STARTED
        {
            // SAFETY: kill takes integers; the pid is the resident's, not
            // yet reaped (see `signalling`).
            unsafe { libc::kill(self.slot.pid.load(Ordering::SeqCst), signal) };
        }
    }
}

/// A resident taken for one call; free again if dropped before
/// [`start_in`] gave it the call (the call was dropped meanwhile, or could
/// not be prepared), rather than taken for good.
pub(super) struct Claimed(Option<Arc<Slot>>);

impl Drop for Claimed {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take()
            && slot
                .state
                .compare_exchange(CLAIMED, FREE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            futex_wake(&slot.state);
        }
    }
}

/// A free resident of `residents`, taken for one call (see [`start_in`]).
pub(super) fn claim(residents: &Residents) -> Option<Claimed> {
    let mut slots = residents.slots.lock().unwrap_or_else(|e| e.into_inner());
    slots.retain(|r| r.slot.state.load(Ordering::SeqCst) != GONE);
    slots
        .iter()
        .find(|r| {
            r.slot
                .state
                .compare_exchange(FREE, CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        })
        .map(|r| Claimed(Some(r.slot.clone())))
}

/// A free resident of `residents`, or a new one if none is free and there
/// is room, taken for one call: `None` when there is none. Made on the
/// calling thread, which must be a spawner thread (the resident inherits
/// its seccomp program and pids cgroup), with `steps` and `entry` for its
/// plugins.
pub(super) fn claim_or_make(
    residents: &Arc<Residents>,
    steps: ChildSteps,
    entry: extern "C" fn(*mut c_void) -> c_int,
) -> Option<Claimed> {
    if let Some(claimed) = claim(residents) {
        return Some(claimed);
    }
    let room = residents
        .slots
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .len()
        < RESIDENTS_PER_CONFINEMENT;
    if !room || residents.broken.load(Ordering::Relaxed) {
        return None;
    }
    let Some(resident) = make(steps, entry) else {
        residents.broken.store(true, Ordering::Relaxed);
        return None;
    };
    let slot = resident.slot.clone();
    // Free since it started, and nobody else knows it yet; unless it died
    // already (killed from outside), and its thread marked it gone.
    let claimed = slot
        .state
        .compare_exchange(FREE, CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    let mut slots = residents.slots.lock().unwrap_or_else(|e| e.into_inner());
    if !residents.registered.swap(true, Ordering::Relaxed) {
        register(residents);
    }
    slots.push(resident);
    claimed.then(|| Claimed(Some(slot)))
}

/// Hands `job` to `slot`'s resident, claimed for it, and the status
/// pipe's write end with it; does not wait for the plugin's `exec`: a step
/// the plugin failed, or its clone, is the call's outcome
/// ([`Call::finished`]). The job back if the resident died since it was
/// claimed (nothing of it was handed over then).
pub(super) fn start_in<J: Job + 'static>(
    mut claimed: Claimed,
    mut job: Box<J>,
    status: OwnedFd,
) -> Result<Call, Box<J>> {
    let slot = claimed.0.take().expect("taken only here");
    let number = {
        // Under the lock its thread marks it gone with: either it is gone
        // already, or all of the call is handed over before, and what the
        // resident leaves open at its end its thread closes.
        let _alive = slot.signalling.lock().unwrap_or_else(|e| e.into_inner());
        if slot.state.load(Ordering::SeqCst) != CLAIMED {
            return Err(job);
        }
        let number = slot.call.load(Ordering::SeqCst) + 1;
        slot.call.store(number, Ordering::SeqCst);
        slot.status_fd.store(status.into_raw_fd(), Ordering::SeqCst);
        for (end, fd) in slot.child_ends.iter().zip(job.child_ends()) {
            end.store(fd, Ordering::SeqCst);
        }
        slot.job.store(job.arg(), Ordering::SeqCst);
        slot.state.store(JOB, Ordering::SeqCst);
        job.release_child_ends();
        number
    };
    futex_wake(&slot.state);
    Ok(Call {
        slot,
        number,
        job,
        done: false,
    })
}

/// Makes a resident that takes `steps` and runs `entry` for each call's
/// plugin; `None` where one cannot be made.
fn make(steps: ChildSteps, entry: extern "C" fn(*mut c_void) -> c_int) -> Option<Resident> {
    let (tx, rx) = mpsc::sync_channel(1);
    let Ok(thread) = std::thread::Builder::new()
        .name("plughost-resident".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let stacks = match (Stack::new(), Stack::new(), Stack::new()) {
                (Ok(a), Ok(b), Ok(c)) => [a, b, c],
                _ => {
                    let _ = tx.send(None);
                    return;
                }
            };
            let slot = Arc::new(Slot {
                state: AtomicU32::new(STARTING),
                job: std::sync::atomic::AtomicPtr::new(ptr::null_mut()),
                child_ends: [AtomicI32::new(-1), AtomicI32::new(-1), AtomicI32::new(-1)],
                status_fd: AtomicI32::new(-1),
                call: AtomicU64::new(0),
                kill: AtomicU64::new(0),
                term: AtomicU64::new(0),
                shutdown: AtomicBool::new(false),
                pid: AtomicI32::new(-1),
                signalling: Mutex::new(()),
                failed: AtomicI32::new(0),
                steps,
                plugin_stack: stacks[2].top(),
                entry,
            });
            let pid = launch(&slot, &stacks);
            if pid <= 0 {
                let _ = tx.send(None);
                return;
            }
            slot.pid.store(pid, Ordering::SeqCst);
            loop {
                let state = slot.state.load(Ordering::SeqCst);
                if state != STARTING {
                    break;
                }
                futex_wait(&slot.state, state);
            }
            let ok = slot.failed.load(Ordering::SeqCst) == 0;
            let _ = tx.send(ok.then(|| slot.clone()));
            // Waits for the resident's end (leaving it a zombie, which
            // keeps its pid), marks it gone, then reaps it; only then may
            // its stacks and slot go (it ran on them).
            wait_for(pid, libc::WNOWAIT);
            {
                let _no_signals = slot.signalling.lock().unwrap_or_else(|e| e.into_inner());
                slot.state.store(GONE, Ordering::SeqCst);
            }
            futex_wake(&slot.state);
            wait_for(pid, 0);
            for fd in [&slot.status_fd]
                .into_iter()
                .chain(&slot.child_ends)
                .map(|fd| fd.swap(-1, Ordering::SeqCst))
                .filter(|&fd| fd >= 0)
            {
                // SAFETY: the status pipe's write end or a pipe end of the
                // plugin's, which the resident (gone now) was to close.
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
            }
            drop(stacks);
        })
    else {
        return None;
    };
    let slot = rx.recv().ok().flatten()?;
    Some(Resident { slot, thread })
}

/// Waits for the child `pid` to exit; `WNOWAIT` in `flags` leaves it
/// unreaped.
fn wait_for(pid: c_int, flags: c_int) {
    loop {
        // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes into `info`, a valid local.
        let rc = unsafe { libc::waitid(libc::P_PID, pid as u32, &mut info, libc::WEXITED | flags) };
        if rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// What the child that makes a resident needs.
struct Launch<'a> {
    slot: &'a Slot,
    resident_stack: *mut c_void,
    pid: c_int,
}

/// On the resident's thread, with every signal blocked: clones the child
/// that joins the namespaces and makes the PID namespace, whose first
/// process becomes the resident (a child of this thread: `CLONE_PARENT`).
/// Returns its pid, or -1.
fn launch(slot: &Slot, stacks: &[Stack; 3]) -> c_int {
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes `all`; pthread_sigmask reads it.
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), ptr::null_mut());
    }
    let mut launch = Launch {
        slot,
        resident_stack: stacks[1].top(),
        pid: -1,
    };
    // SAFETY: `launch_main` gets a pointer to `launch`, alive until this
    // returns; CLONE_VFORK suspends this thread until that child exits.
    let child = unsafe {
        libc::clone(
            launch_main,
            stacks[0].top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD,
            (&raw mut launch).cast(),
        )
    };
    if child < 0 {
        return -1;
    }
    let mut status = 0;
    // SAFETY: waitpid writes into `status`, a valid local.
    unsafe { libc::waitpid(child, &mut status, 0) };
    // SAFETY: written by the child before it exited.
    unsafe { ptr::read_volatile(&raw const launch.pid) }
}

extern "C" fn launch_main(arg: *mut c_void) -> c_int {
    let launch = arg.cast::<Launch<'_>>();
    // SAFETY: the host's `launch`, valid while its thread is suspended.
    unsafe {
        let slot = (*launch).slot;
        if sandbox::join(&slot.steps) != 0 || libc::unshare(libc::CLONE_NEWPID) != 0 {
            libc::_exit(1);
        }
        let pid = libc::clone(
            resident_main,
            (*launch).resident_stack,
            libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_PARENT | libc::SIGCHLD,
            (slot as *const Slot).cast_mut().cast(),
        );
        ptr::write_volatile(&raw mut (*launch).pid, pid);
        libc::_exit(0)
    }
}

extern "C" fn nothing(_: c_int) {}

/// The resident: the first process of its PID namespace.
extern "C" fn resident_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the slot, kept alive by the thread that waits for
    // this process. Every call below is a libc wrapper of one system call.
    unsafe {
        let slot = &*arg.cast::<Slot>();
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 || libc::setsid() < 0 {
            return started(slot, errno());
        }
        // None of the host's handlers (see `signals.rs`); then its own:
        // these three handled, so that the host's signals reach the first
        // process of a PID namespace (taken only with sigtimedwait), and a
        // status nobody reads any more (the call was dropped) fails to write
        // rather than ending this process.
        let rc = super::signals::to_defaults(super::signals::all());
        if rc != 0 {
            return started(slot, rc);
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        for signal in HANDLED {
            action.sa_sigaction = if signal == libc::SIGPIPE {
                libc::SIG_IGN
            } else {
                nothing as *const () as usize
            };
            libc::sigaction(signal, &action, ptr::null_mut());
        }
        let rc = sandbox::enforce(&slot.steps.for_init());
        if rc != 0 {
            return started(slot, rc);
        }
        slot.state.store(FREE, Ordering::SeqCst);
        futex_wake(&slot.state);
        let mut waited: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut waited);
        for signal in [libc::SIGCHLD, libc::SIGUSR2, libc::SIGTERM] {
            libc::sigaddset(&mut waited, signal);
        }
        loop {
            let state = slot.state.load(Ordering::SeqCst);
            if state == QUIT || (state == FREE && slot.shutdown.load(Ordering::SeqCst)) {
                libc::_exit(0);
            }
            if state != JOB {
                if !futex_wait_for(&slot.state, state, IDLE_FOR) {
                    continue;
                }
                // Idle that long: it goes, unless the host claimed it
                // meanwhile.
                if slot
                    .state
                    .compare_exchange(FREE, GONE, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    libc::_exit(0);
                }
                continue;
            }
            let number = slot.call.load(Ordering::SeqCst);
            let plugin = libc::clone(
                slot.entry,
                slot.plugin_stack,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                slot.job.load(Ordering::SeqCst),
            );
            let clone_error = if plugin < 0 { errno() } else { 0 };
            for end in &slot.child_ends {
                let fd = end.swap(-1, Ordering::SeqCst);
                if fd >= 0 {
                    libc::close(fd);
                }
            }
            slot.state.store(STARTED, Ordering::SeqCst);
            futex_wake(&slot.state);
            let status = if plugin > 0 {
                run(slot, number, plugin, &waited)
            } else {
                0
            };
            end_all();
            // Free before the report: the host may start its next call as
            // soon as it has read this one's status.
            let fd = slot.status_fd.swap(-1, Ordering::SeqCst);
            slot.state.store(FREE, Ordering::SeqCst);
            if fd >= 0 {
                // One write, which a pipe keeps whole: the plugin's wait
                // status, then the errno of its clone.
                let report: [c_int; 2] = [status, clone_error];
                libc::write(fd, report.as_ptr().cast(), 8);
                libc::close(fd);
            }
        }
    }
}

/// Waits for the call `number`'s plugin to end (or the host to end the
/// call); its wait status.
///
/// # Safety
/// Only in the resident.
unsafe fn run(slot: &Slot, number: u64, plugin: c_int, waited: &libc::sigset_t) -> c_int {
    // SAFETY: libc wrappers of single system calls on locals.
    unsafe {
        let mut alive = true;
        let mut termed = false;
        let mut status = libc::SIGKILL;
        loop {
            // A bounded batch, so that a plugin making children of this
            // process as fast as it can does not keep it from the host's
            // requests.
            let mut more = false;
            for _ in 0..REAPS_PER_TURN {
                let mut s = 0;
                let pid = libc::waitpid(-1, &mut s, libc::WNOHANG | libc::__WALL);
                if pid <= 0 {
                    more = false;
                    break;
                }
                more = true;
                // Only an exit or a killing signal ends it: a plugin that
                // had this process trace it (`PTRACE_TRACEME`) and stopped
                // is still running.
                if pid == plugin && (libc::WIFEXITED(s) || libc::WIFSIGNALED(s)) {
                    alive = false;
                    status = s;
                }
            }
            if !alive || slot.kill.load(Ordering::SeqCst) >= number {
                return status;
            }
            if !termed && slot.term.load(Ordering::SeqCst) >= number {
                // The plugin is unreaped, so its group is still its own.
                libc::kill(-plugin, libc::SIGTERM);
                termed = true;
            }
            if !more {
                libc::sigtimedwait(waited, ptr::null_mut(), ptr::null());
            }
        }
    }
}

/// Kills every other process of the namespace and reaps them to the last.
fn end_all() {
    // SAFETY: kill and waitpid take integers and a valid local.
    unsafe {
        // Every process of the namespace descends from this one, and an
        // orphan comes to it: with no child left, the namespace is empty
        // (and `kill(-1)`, which walks every process of the machine, is
        // spared).
        let mut s = 0;
        if libc::waitpid(-1, &mut s, libc::WNOHANG | libc::__WALL) < 0 && errno() == libc::ECHILD {
            return;
        }
        libc::kill(-1, libc::SIGKILL);
        loop {
            let mut s = 0;
            if libc::waitpid(-1, &mut s, libc::__WALL) < 0 && errno() != libc::EINTR {
                break;
            }
        }
    }
}

/// Reports how the resident's start went, and exits if it failed.
fn started(slot: &Slot, error: c_int) -> c_int {
    slot.failed.store(error, Ordering::SeqCst);
    slot.state.store(FREE, Ordering::SeqCst);
    futex_wake(&slot.state);
    // SAFETY: _exit takes an integer.
    unsafe { libc::_exit(1) }
}

fn errno() -> c_int {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn futex_wait(word: &AtomicU32, value: u32) {
    // SAFETY: FUTEX_WAIT on a valid, aligned word of memory this process
    // shares with the resident (the same address space).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            value,
            ptr::null::<libc::timespec>(),
        )
    };
}

/// [`futex_wait`] for at most `seconds`; whether that time ran out.
fn futex_wait_for(word: &AtomicU32, value: u32, seconds: libc::time_t) -> bool {
    let timeout = libc::timespec {
        tv_sec: seconds,
        tv_nsec: 0,
    };
    // SAFETY: as in `futex_wait`, with a valid local timeout.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            value,
            &timeout as *const libc::timespec,
        )
    };
    rc != 0 && errno() == libc::ETIMEDOUT
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as in `futex_wait`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// The call's status pipe, read once the resident reported.
pub(super) fn status_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: descriptors we own, just returned by the kernel.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
