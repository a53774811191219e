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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::plugins::catalog::Plugin;

/// The plugin's data folder, created when missing.
pub(super) fn data_dir(state_dir: &Path, plugin: &Plugin) -> std::io::Result<PathBuf> {
    let data = state_dir.join("data").join(plugin.name());
    if !data.is_dir() {
        std::fs::create_dir_all(&data)?;
    }
    Ok(data)
}

/// Empty temp folders ready for the next call, by plugin.
#[derive(Debug, Default)]
pub(super) struct TempPool {
    /// Emptied folders, by the plugin folder that holds them.
    free: Mutex<HashMap<PathBuf, Vec<PathBuf>>>,
    made: AtomicU64,
}

/// A pooled temp folder, given back (emptied) when dropped.
pub(super) struct TempDir {
    path: PathBuf,
    pool: Arc<TempPool>,
}

impl TempPool {
    /// The folder that holds `plugin`'s temp folders (made when missing).
    pub(super) fn root(state_dir: &Path, plugin: &str) -> PathBuf {
        state_dir
            .join("tmp")
            .join(std::process::id().to_string())
            .join(plugin)
    }

    /// A pooled folder for one call of `plugin`.
    pub(super) fn take(
        self: &Arc<Self>,
        state_dir: &Path,
        plugin: &str,
    ) -> std::io::Result<TempDir> {
        let root = Self::root(state_dir, plugin);
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
        self.fresh_in(&Self::root(state_dir, plugin))
    }

    fn fresh_in(&self, root: &Path) -> std::io::Result<PathBuf> {
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let tmp = root.join(n.to_string());
        std::fs::create_dir_all(&tmp)?;
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
        for (root, dirs) in free {
            for dir in dirs {
                let _ = std::fs::remove_dir(&dir);
            }
            let _ = std::fs::remove_dir(&root);
            if let Some(host) = root.parent() {
                let _ = std::fs::remove_dir(host);
            }
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
