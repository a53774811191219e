//! The folders of a call: the plugin's persistent data folder and a private
//! temp folder (`TMPDIR`).
//!
//! Temp folders of per-call processes are pooled: a call takes a folder no
//! other call is using, and gives it back emptied when it ends, so a call
//! never sees another call's files, yet the hot path costs one `statx` and one
//! directory read instead of a `mkdir` and an `rmdir` (each tens of
//! microseconds on a journaling file system). A worker gets a fresh folder of
//! its own for its whole life.
//!
//! Each plugin's temp folders live in a folder of its own,
//! `STATE/tmp/HOSTPID/PLUGIN/`, and are pooled per plugin: the sandbox allows
//! that folder once per plugin version rather than each call's folder, so a
//! plugin's processes could reach each other's temp folders (as they share its
//! data folder), never another plugin's.
//!
//! A read-only or full state folder stops only what needs a new folder in it.
//! A plugin whose data folder exists keeps running: its temp folders then live
//! in a private folder of the system's temp folder (`$TMPDIR/plughost-PID-HEX`,
//! made with `mkdir` mode 0700, so it is new and ours), chosen once per host
//! when `STATE/tmp/HOSTPID` cannot be made. A data folder that does not exist
//! and cannot be made fails the call with an error naming the folder and the fix.
//!
//! A plugin writes in its temp folders' folder and in its data folder, so it
//! can rename what is there or put a link in its place. Everything here is
//! therefore done through descriptors (`crate::fsat`): each temp folder is
//! held open from the `mkdirat` that made it and emptied through that
//! descriptor, never by its path; the data folder is opened beneath the state
//! folder with no link followed. A temp folder replaced by a link is removed
//! as a link, and the folder behind the link is never touched.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::fsat::{Dir, Folder, is_link_error};
use crate::plugins::catalog::Plugin;

/// The plugin's data folder, created when missing: `STATE/data/PLUGIN`,
/// opened beneath the state folder without following a link, so a data
/// folder (or `data`) replaced by a link fails the call instead of sending
/// the plugin, and plughost, elsewhere. The error names the folder and what
/// to do about it.
pub(super) fn data_dir(state_dir: &Path, plugin: &Plugin) -> std::io::Result<PathBuf> {
    let data = state_dir.join("data").join(plugin.name());
    let made = std::fs::create_dir_all(state_dir)
        .and_then(|()| Dir::open(state_dir))
        .and_then(|state| state.make_dirs(&Path::new("data").join(plugin.name()), 0o777));
    match made {
        Ok(_) => Ok(data),
        Err(e) if is_link_error(&e) => Err(std::io::Error::new(
            e.kind(),
            format!(
                "the plugin's data folder {} is a symbolic link, or is reached through one: plughost does not follow links in its state folder; remove the link (a plugin may have made it) and call again",
                data.display()
            ),
        )),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!(
                "cannot create the plugin's data folder {}: {e}; {}",
                data.display(),
                state_fix(state_dir, &e)
            ),
        )),
    }
}
/// What to do when a folder cannot be made in the state folder.
pub(super) fn state_fix(state_dir: &Path, e: &std::io::Error) -> String {
    let state = state_dir.display();
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => format!(
            "the file system of the state folder {state} is full: free some space, or choose another state folder"
        ),
        _ => format!(
            "make the state folder {state} writable, create the folder yourself, or choose another state folder"
        ),
    }
}

/// Empty temp folders ready for the next call, by plugin.
#[derive(Debug, Default)]
pub(super) struct TempPool {
    /// Emptied folders, by the plugin folder that holds them.
    free: Mutex<HashMap<PathBuf, Vec<Folder>>>,
    /// Every plugin folder opened, by its path, removed (when empty) with the
    /// pool: a worker's folder is not pooled, but its plugin folder is ours.
    roots: Mutex<HashMap<PathBuf, Arc<Dir>>>,
    made: AtomicU64,
    /// The folder that holds every plugin's temp folders, chosen at first use.
    base: std::sync::OnceLock<Base>,
}

/// Where a host's temp folders live.
#[derive(Debug)]
struct Base {
    path: PathBuf,
    /// The folder, held; `None` when it could not be made or opened.
    dir: Option<Arc<Dir>>,
    /// Why the state folder refused, for errors about the fallback.
    refused: Option<String>,
}

/// A pooled temp folder, given back (emptied) when dropped.
pub(super) struct TempDir {
    folder: Option<Folder>,
    pool: Arc<TempPool>,
}

impl TempPool {
    fn base(&self, state_dir: &Path) -> &Base {
        self.base.get_or_init(|| Base::choose(state_dir))
    }

    /// The folder that holds `plugin`'s temp folders:
    /// `STATE/tmp/HOSTPID/PLUGIN`, or its fallback in the system's temp folder
    /// when the state folder is read-only or full. It is made when a temp
    /// folder is first taken from it.
    pub(super) fn root(&self, state_dir: &Path, plugin: &str) -> PathBuf {
        self.base(state_dir).path.join(plugin)
    }

    /// The folder of `plugin`'s temp folders, held (made and opened beneath
    /// the base folder when missing, no link followed).
    fn root_dir(&self, state_dir: &Path, plugin: &str) -> std::io::Result<(PathBuf, Arc<Dir>)> {
        let base = self.base(state_dir);
        let root = base.path.join(plugin);
        let mut roots = self.roots.lock().expect("temp pool lock");
        if let Some(dir) = roots.get(&root) {
            return Ok((root, dir.clone()));
        }
        let dir = match &base.dir {
            Some(held) => Arc::new(held.make_dirs(Path::new(plugin), 0o777)?),
            None => return Err(self.cannot_make(&root, std::io::Error::other("it has no folder"))),
        };
        roots.insert(root.clone(), dir.clone());
        Ok((root, dir))
    }

    /// A pooled folder for one call of `plugin`.
    pub(super) fn take(
        self: &Arc<Self>,
        state_dir: &Path,
        plugin: &str,
    ) -> std::io::Result<TempDir> {
        let (root, dir) = self.root_dir(state_dir, plugin)?;
        let pooled = self
            .free
            .lock()
            .expect("temp pool lock")
            .get_mut(&root)
            .and_then(Vec::pop);
        let folder = match pooled {
            Some(tmp) if tmp.in_place() => tmp,
            // Renamed or replaced since it was given back: removed (a link
            // as a link), never handed out.
            Some(tmp) => {
                let _ = tmp.remove();
                self.fresh_in(&root, &dir)?
            }
            None => self.fresh_in(&root, &dir)?,
        };
        Ok(TempDir {
            folder: Some(folder),
            pool: self.clone(),
        })
    }

    /// A new folder for `plugin`, not pooled: the caller removes it.
    pub(super) fn fresh(&self, state_dir: &Path, plugin: &str) -> std::io::Result<Folder> {
        let (root, dir) = self.root_dir(state_dir, plugin)?;
        self.fresh_in(&root, &dir)
    }

    fn fresh_in(&self, root: &Path, dir: &Arc<Dir>) -> std::io::Result<Folder> {
        loop {
            let n = self.made.fetch_add(1, Ordering::Relaxed).to_string();
            match Folder::create(dir, root, OsStr::new(&n), 0o777) {
                Ok(folder) => return Ok(folder),
                // A name the plugin took first (it writes here): the next one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(self.cannot_make(&root.join(n), e)),
            }
        }
    }

    fn cannot_make(&self, tmp: &Path, e: std::io::Error) -> std::io::Error {
        let base = self.base.get();
        let why = match base.and_then(|b| b.refused.as_deref()) {
            Some(refused) => format!(" (the state folder refused too: {refused})"),
            None => String::new(),
        };
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot create a temp folder {}: {e}{why}; free some space or make that folder writable, or choose another state folder",
                tmp.display()
            ),
        )
    }

    fn put(&self, folder: Folder) {
        let root = folder
            .path()
            .parent()
            .map(Path::to_owned)
            .unwrap_or_default();
        self.free
            .lock()
            .expect("temp pool lock")
            .entry(root)
            .or_default()
            .push(folder);
    }

    /// Empties `folder` through its descriptor and returns it to the pool; a
    /// folder that cannot be emptied, or whose name no longer names it, is
    /// removed instead, never handed to another call.
    fn give_back(&self, folder: Folder) {
        if folder.empty().is_ok() && folder.in_place() {
            self.put(folder);
        } else {
            let _ = folder.remove();
        }
    }
}

impl Base {
    /// `STATE/tmp/HOSTPID` when it can be made; otherwise a new private
    /// folder in the system's temp folder.
    fn choose(state_dir: &Path) -> Base {
        let own = state_dir.join("tmp").join(std::process::id().to_string());
        let refused = match std::fs::create_dir_all(&own).and_then(|()| Dir::open(&own)) {
            Ok(dir) => {
                sweep_dead_hosts(&state_dir.join("tmp"));
                return Base {
                    path: own,
                    dir: Some(Arc::new(dir)),
                    refused: None,
                };
            }
            Err(e) => format!("{}: {e}", own.display()),
        };
        match private_temp_folder() {
            // Kept until the pool goes; removed then, once empty.
            Ok(folder) => Base {
                path: folder.path().to_owned(),
                dir: folder.dir().try_clone().ok().map(Arc::new),
                refused: Some(refused),
            },
            // Calls fail naming both folders when they try to make one.
            Err(_) => Base {
                path: own,
                dir: None,
                refused: Some(refused),
            },
        }
    }
}

/// Removes the temp folders of hosts that are no longer running
/// (`STATE/tmp/PID` of a plughost that was killed): nothing else removes them.
/// A folder whose pid is running now is kept, even if another program got
/// that pid: it is left for later rather than taken from a live host. What
/// their plugins left there is removed through descriptors, links unfollowed.
fn sweep_dead_hosts(tmp: &Path) {
    let Ok(dir) = Dir::open(tmp) else {
        return;
    };
    for name in dir.entries().unwrap_or_default() {
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !crate::run::executor::process_exists(pid) {
            let _ = dir.remove(&name);
        }
    }
}

/// A new folder `plughost-PID-HEX` in the system's temp folder, mode 0700,
/// held open. `mkdirat` fails on an existing name (a link or folder planted
/// by someone else), so the folder returned is one this process made.
pub(super) fn private_temp_folder() -> std::io::Result<Folder> {
    let system = std::env::temp_dir();
    let parent = Arc::new(Dir::open(&system)?);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut last = None;
    for attempt in 0..16u32 {
        let name = format!(
            "plughost-{}-{:x}",
            std::process::id(),
            seed.wrapping_add(attempt.wrapping_mul(7919))
        );
        match Folder::create(&parent, &system, OsStr::new(&name), 0o700) {
            Ok(folder) => return Ok(folder),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

impl TempDir {
    pub(super) fn path(&self) -> &Path {
        self.folder.as_ref().expect("a folder until dropped").path()
    }
}

impl Drop for TempDir {
    /// Gives the folder back. One directory read when the plugin left it empty;
    /// when it left files, they are removed on a blocking thread, off the
    /// runtime's workers. Both look at the folder through its descriptor.
    fn drop(&mut self) {
        let Some(folder) = self.folder.take() else {
            return;
        };
        if folder.is_empty() {
            self.pool.put(folder);
            return;
        }
        let pool = self.pool.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(move || pool.give_back(folder))),
            Err(_) => pool.give_back(folder),
        }
    }
}

impl Drop for TempPool {
    /// Removes the pooled folders when the host goes away, and the folders
    /// that held them once empty.
    fn drop(&mut self) {
        let free = self.free.get_mut().map(std::mem::take).unwrap_or_default();
        for folder in free.into_values().flatten() {
            let _ = folder.remove();
        }
        let roots = self.roots.get_mut().map(std::mem::take).unwrap_or_default();
        if let Some(base) = self.base.get() {
            if let Some(dir) = &base.dir {
                for root in roots.keys() {
                    if let Some(name) = root.file_name() {
                        let _ = dir.remove_empty_dir(name);
                    }
                }
            }
            let _ = std::fs::remove_dir(&base.path);
        }
    }
}
