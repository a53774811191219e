//! A pids cgroup for all the plugins of one host, where plughost may make
//! one: the limit on their processes and threads that holds when
//! `RLIMIT_NPROC` does not (root, whom the kernel does not hold to it, and
//! Landlock alone, where there is no user namespace to count in).
//!
//! The group is a child of plughost's own pids cgroup, named after its pid
//! (`plughost-PID`), with `pids.max` set to [`PLUGIN_TASKS`]. The threads
//! that spawn confined children join it once (cgroup v1 moves single
//! threads), so each child starts in it; elsewhere a confined child moves
//! itself into it first thing (it writes `0` to the group's `cgroup.procs`,
//! opened once here). Either way everything it and the plugin start is
//! counted there from the start: no fork can happen outside it.
//!
//! Made only where the pids controller's folder is writable (as root, or
//! in a delegated cgroup v2 subtree); elsewhere there is no group and
//! `doctor` says what holds instead. A group left by a plughost that was
//! killed is empty (its plugins died with it) and is removed by the next.

use std::fs;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The most processes and threads the plugins of one host may have at once,
/// together: `RLIMIT_NPROC` in its user namespace where plughost is not root,
/// this group's `pids.max` where it is. A fork bomb stops there instead of
/// taking the user's whole allowance (or the machine's), and with it the
/// host's own next spawn and the user's session.
pub(crate) const PLUGIN_TASKS: u64 = 2048;

/// The group, made on first use; `None` where plughost cannot make one.
static GROUP: OnceLock<Option<PidsGroup>> = OnceLock::new();

/// plughost's pids cgroup for its plugins.
struct PidsGroup {
    /// Its folder, removed when plughost exits.
    dir: PathBuf,
    /// `cgroup.procs` of the group, open for writing.
    procs: File,
    /// `tasks` of the group (cgroup v1, which moves single threads), open
    /// for writing.
    tasks: Option<File>,
}

/// The descriptor a confined child writes `0` to, to join the group; `None`
/// where there is no group.
pub(crate) fn procs_fd() -> Option<RawFd> {
    GROUP
        .get_or_init(PidsGroup::make)
        .as_ref()
        .map(|g| g.procs.as_raw_fd())
}

/// Moves the calling thread into the group (cgroup v1), so that every
/// process it clones starts there and need not move itself: moving a
/// process between groups takes a lock the whole machine shares, which
/// costs the spawns of a busy host milliseconds at their tail. Whether the
/// thread is in the group now.
pub(crate) fn join_thread() -> bool {
    GROUP
        .get_or_init(PidsGroup::make)
        .as_ref()
        .and_then(|g| g.tasks.as_ref())
        // `0` is the writer: the calling thread, for `tasks`.
        .is_some_and(|mut tasks| tasks.write_all(b"0").is_ok())
}

/// The limit the group holds all plugins to together, if there is a group.
pub(crate) fn limit() -> Option<u64> {
    procs_fd().map(|_| PLUGIN_TASKS)
}

impl PidsGroup {
    fn make() -> Option<PidsGroup> {
        let own = own_pids_folder(&fs::read_to_string("/proc/self/cgroup").ok()?)?;
        // Moving a process between groups takes write access to their
        // common parent's `cgroup.procs` (cgroup v2; v1 asks for root).
        let parent = fs::OpenOptions::new()
            .write(true)
            .open(own.join("cgroup.procs"));
        if parent.is_err() {
            return None;
        }
        remove_stale(&own);
        let dir = own.join(format!("plughost-{}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        let made = (|| {
            fs::write(dir.join("pids.max"), PLUGIN_TASKS.to_string()).ok()?;
            let procs = fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .ok()?;
            let tasks = fs::OpenOptions::new()
                .write(true)
                .open(dir.join("tasks"))
                .ok();
            Some(PidsGroup {
                dir: dir.clone(),
                procs,
                tasks,
            })
        })();
        match made {
            Some(group) => {
                // SAFETY: registers a plain function without arguments.
                unsafe { libc::atexit(remove_at_exit) };
                Some(group)
            }
            None => {
                let _ = fs::remove_dir(&dir);
                None
            }
        }
    }
}

/// Removes the group when plughost exits normally, if it is empty by then
/// (a worker still ending keeps it; the next plughost removes it then).
extern "C" fn remove_at_exit() {
    if let Some(Some(group)) = GROUP.get() {
        let _ = fs::remove_dir(&group.dir);
    }
}

/// plughost's own folder in the pids hierarchy: the cgroup v1 `pids`
/// controller's, or the cgroup v2 one when its subtree has the controller.
fn own_pids_folder(cgroups: &str) -> Option<PathBuf> {
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            let dir = Path::new("/sys/fs/cgroup/pids").join(path);
            return dir.join("cgroup.procs").exists().then_some(dir);
        }
        if controllers.is_empty() {
            let dir = Path::new("/sys/fs/cgroup").join(path);
            let subtree = fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
            if subtree.split_whitespace().any(|c| c == "pids") {
                return Some(dir);
            }
        }
    }
    None
}

/// Removes the groups of plughost processes that are gone (each is empty:
/// its plugins' namespaces died with it, or the kernel moved nothing in).
fn remove_stale(own: &Path) {
    let Ok(entries) = fs::read_dir(own) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("plughost-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::own_pids_folder;

    #[test]
    fn finds_the_v1_pids_line_among_the_others() {
        let got = own_pids_folder("9:name=systemd:/\n8:pids:/\n4:memory:/a/b\n0::/\n");
        // Named only where the folder exists: the v1 hierarchy's root here.
        let v1 = std::path::Path::new("/sys/fs/cgroup/pids/cgroup.procs").exists();
        assert_eq!(got, v1.then(|| "/sys/fs/cgroup/pids".into()));
    }

    #[test]
    fn no_pids_line_no_folder() {
        assert_eq!(own_pids_folder("4:memory:/a\n1:cpu:/\n"), None);
    }
}
