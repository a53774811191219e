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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::plugins::catalog::Plugin;

/// The plugin's data folder, created when missing. The error names the
/// folder and what to do about it.
pub(super) fn data_dir(state_dir: &Path, plugin: &Plugin) -> std::io::Result<PathBuf> {
    let data = state_dir.join("data").join(plugin.name());
    if !data.is_dir() {
        std::fs::create_dir_all(&data).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot create the plugin's data folder {}: {e}; {}",
                    data.display(),
                    state_fix(state_dir, &e)
                ),
            )
        })?;
    }
    Ok(data)
}

/// What to do when a folder cannot be made in the state folder.
pub(super) fn state_fix(state_dir: &Path, e: &std::io::Error) -> String {
    let state = state_dir.display();
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => format!(
            "the file system of the state folder {state} is full: free some space, or choose another state folder (--state-dir)"
        ),
        _ => format!(
            "make the state folder {state} writable, create the folder yourself, or choose another state folder (--state-dir)"
        ),
    }
}

/// Empty temp folders ready for the next call, by plugin.
#[derive(Debug, Default)]
pub(super) struct TempPool {
    /// Emptied folders, by the plugin folder that holds them.
    free: Mutex<HashMap<PathBuf, Vec<PathBuf>>>,
    /// Every plugin folder handed out, removed (when empty) with the pool:
    /// a worker's folder is not pooled, but its plugin folder is ours.
    roots: Mutex<std::collections::HashSet<PathBuf>>,
    made: AtomicU64,
    /// The folder that holds every plugin's temp folders, chosen at first use.
    base: std::sync::OnceLock<Base>,
}

/// Where a host's temp folders live.
#[derive(Debug)]
struct Base {
    path: PathBuf,
    /// Why the state folder refused, for errors about the fallback.
    refused: Option<String>,
}

/// A pooled temp folder, given back (emptied) when dropped.
pub(super) struct TempDir {
    path: PathBuf,
    pool: Arc<TempPool>,
}

impl TempPool {
    /// The folder that holds `plugin`'s temp folders (made when missing):
    /// `STATE/tmp/HOSTPID/PLUGIN`, or its fallback in the system's temp folder
    /// when the state folder is read-only or full.
    pub(super) fn root(&self, state_dir: &Path, plugin: &str) -> PathBuf {
        let root = self
            .base
            .get_or_init(|| Base::choose(state_dir))
            .path
            .join(plugin);
        let mut roots = self.roots.lock().expect("temp pool lock");
        if !roots.contains(&root) {
            roots.insert(root.clone());
        }
        root
    }

    /// A pooled folder for one call of `plugin`.
    pub(super) fn take(
        self: &Arc<Self>,
        state_dir: &Path,
        plugin: &str,
    ) -> std::io::Result<TempDir> {
        let root = self.root(state_dir, plugin);
        let pooled = self
            .free
            .lock()
            .expect("temp pool lock")
            .get_mut(&root)
            .and_then(Vec::pop);
        let path = match pooled {
            Some(tmp) if tmp.is_dir() => tmp,
            _ => self.fresh_in(&root)?,
        };
        Ok(TempDir {
            path,
            pool: self.clone(),
        })
    }

    /// A new folder for `plugin`, not pooled: the caller removes it.
    pub(super) fn fresh(&self, state_dir: &Path, plugin: &str) -> std::io::Result<PathBuf> {
        self.fresh_in(&self.root(state_dir, plugin))
    }

    fn fresh_in(&self, root: &Path) -> std::io::Result<PathBuf> {
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let tmp = root.join(n.to_string());
        std::fs::create_dir_all(&tmp).map_err(|e| {
            let base = self.base.get();
            let why = match base.and_then(|b| b.refused.as_deref()) {
                Some(refused) => format!(" (the state folder refused too: {refused})"),
                None => String::new(),
            };
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot create a temp folder {}: {e}{why}; free some space or make that folder writable, or choose another state folder (--state-dir)",
                    tmp.display()
                ),
            )
        })?;
        Ok(tmp)
    }

    fn put(&self, dir: PathBuf) {
        let root = dir.parent().map(Path::to_owned).unwrap_or_default();
        self.free
            .lock()
            .expect("temp pool lock")
            .entry(root)
            .or_default()
            .push(dir);
    }

    /// Empties `dir` and returns it to the pool; a folder that cannot be
    /// emptied is removed instead, never handed to another call.
    fn give_back(&self, dir: PathBuf) {
        let empty = std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_none());
        if empty || empty_folder(&dir).is_ok() {
            self.put(dir);
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

impl Base {
    /// `STATE/tmp/HOSTPID` when it can be made; otherwise a new private
    /// folder in the system's temp folder.
    fn choose(state_dir: &Path) -> Base {
        let own = state_dir.join("tmp").join(std::process::id().to_string());
        let refused = match std::fs::create_dir_all(&own) {
            Ok(()) => {
                sweep_dead_hosts(&state_dir.join("tmp"));
                return Base {
                    path: own,
                    refused: None,
                };
            }
            Err(e) => format!("{}: {e}", own.display()),
        };
        match private_temp_folder() {
            Ok(path) => Base {
                path,
                refused: Some(refused),
            },
            // Calls fail naming both folders when they try to make one.
            Err(_) => Base {
                path: own,
                refused: Some(refused),
            },
        }
    }
}

/// Removes the temp folders of hosts that are no longer running
/// (`STATE/tmp/PID` of a plughost that was killed): nothing else removes them.
/// A folder whose pid is running now is kept, even if another program got
/// that pid: it is left for later rather than taken from a live host.
fn sweep_dead_hosts(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !crate::run::executor::process_exists(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A new folder `plughost-PID-HEX` in the system's temp folder, mode 0700.
/// `mkdir` fails on an existing name (a link or folder planted by someone
/// else), so the folder returned is one this process made.
pub(super) fn private_temp_folder() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let system = std::env::temp_dir();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut last = None;
    for attempt in 0..16u32 {
        let path = system.join(format!(
            "plughost-{}-{:x}",
            std::process::id(),
            seed.wrapping_add(attempt.wrapping_mul(7919))
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

impl TempDir {
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    /// Gives the folder back. One directory read when the plugin left it empty;
    /// when it left files, they are removed on a blocking thread, off the
    /// runtime's workers.
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.path);
        let empty = std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none());
        if empty {
            self.pool.put(path);
            return;
        }
        let pool = self.pool.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(move || pool.give_back(path))),
            Err(_) => pool.give_back(path),
        }
    }
}

impl Drop for TempPool {
    /// Removes the pooled folders when the host goes away, and the folders
    /// that held them once empty.
    fn drop(&mut self) {
        let free = self.free.get_mut().map(std::mem::take).unwrap_or_default();
        for dir in free.into_values().flatten() {
            let _ = std::fs::remove_dir(&dir);
        }
        let roots = self.roots.get_mut().map(std::mem::take).unwrap_or_default();
        for root in roots {
            let _ = std::fs::remove_dir(&root);
        }
        if let Some(base) = self.base.get() {
            let _ = std::fs::remove_dir(&base.path);
        }
    }
}

fn empty_folder(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}
