//! Watches the plugins folder and reloads only the plugin folders that changed.
//!
//! notify (through notify-debouncer-full) reports file events; this module maps
//! them to plugin folders and waits until a folder has been quiet for
//! [`SETTLE`] before reloading it, so a `cp -r`, a `git pull` or an editor's
//! write-and-rename is one reload, not one per file.
//!
//! The parent of the plugins folder is watched too (not recursively), and the
//! folder's existence is checked on every tick, so deleting and recreating the
//! plugins folder itself is noticed. When the platform watcher cannot start, or
//! runs out of watches, the watcher falls back to polling and says so once.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::ModifyKind;
use notify::{EventKind, PollWatcher, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{
    DebounceEventResult, Debouncer, NoCache, RecommendedCache, new_debouncer, new_debouncer_opt,
};

/// How long the debouncer gathers raw events.
const DEBOUNCE: Duration = Duration::from_millis(40);
/// How long a plugin folder must be quiet before it is reloaded.
pub(crate) const SETTLE: Duration = Duration::from_millis(100);
/// How often the loop wakes up to check settled folders and the root.
const TICK: Duration = Duration::from_millis(20);
/// Polling interval of the fallback watcher.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// What the watcher asks its owner to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reload {
    /// Re-read these plugin folders (by name).
    Folders(Vec<String>),
    /// Re-read the whole plugins folder.
    All,
    /// Tell people something about the watcher itself.
    News(WatchNews),
}

/// What the watcher has to say about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchNews {
    /// The plugins folder did not exist and was created.
    Created(PathBuf),
    /// The plugins folder was removed; the watch waits for it.
    Removed(PathBuf),
    /// The plugins folder is back.
    Back(PathBuf),
    /// Change notification is unavailable or failed: the folder is polled
    /// instead (`polling`), or no longer watched.
    Failed { reason: String, polling: bool },
}

/// A running watcher; dropping it stops the watch.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Watcher {
    /// Starts watching `root`, polling from the start when `polling` is set
    /// (for file systems without change notification, such as some network
    /// mounts). `apply` is called on the watcher's thread for each reload; it
    /// returns false when its owner is gone, which ends the watch. A missing
    /// `root` is created first, and that is reported.
    pub(crate) fn start(
        root: &Path,
        polling: bool,
        mut apply: impl FnMut(Reload) -> bool + Send + 'static,
    ) -> std::io::Result<Watcher> {
        let root = std::path::absolute(root)?;
        if !root.exists() {
            std::fs::create_dir_all(&root)?;
            apply(Reload::News(WatchNews::Created(root.clone())));
            apply(Reload::All);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = channel::<DebounceEventResult>();
        let native = if polling {
            Err("polling was asked for".to_owned())
        } else {
            Backend::native(tx.clone(), &root)
        };
        let backend = match native {
            Ok(b) => b,
            Err(reason) => {
                apply(Reload::News(WatchNews::Failed {
                    reason,
                    polling: true,
                }));
                Backend::polling(tx.clone(), &root)?
            }
        };
        let stop_flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("plughost-watcher".into())
            .spawn(move || {
                Loop {
                    root,
                    backend,
                    tx,
                    pending: BTreeMap::new(),
                    root_exists: true,
                }
                .run(rx, &stop_flag, &mut apply)
            })?;
        Ok(Watcher {
            stop,
            thread: Some(thread),
        })
    }
}

/// The platform watcher, or the polling fallback.
enum Backend {
    Native(Debouncer<RecommendedWatcher, RecommendedCache>),
    Polling(Debouncer<PollWatcher, NoCache>),
}

type Sender = std::sync::mpsc::Sender<DebounceEventResult>;

impl Backend {
    fn native(tx: Sender, root: &Path) -> Result<Backend, String> {
        let mut b = Backend::Native(new_debouncer(DEBOUNCE, None, tx).map_err(|e| e.to_string())?);
        b.watch_root(root).map_err(|e| e.to_string())?;
        Ok(b)
    }

    fn polling(tx: Sender, root: &Path) -> std::io::Result<Backend> {
        let config = notify::Config::default().with_poll_interval(POLL_INTERVAL);
        let d = new_debouncer_opt::<_, PollWatcher, NoCache>(DEBOUNCE, None, tx, NoCache, config)
            .map_err(std::io::Error::other)?;
        let mut b = Backend::Polling(d);
        b.watch_root(root).map_err(std::io::Error::other)?;
        Ok(b)
    }

    fn is_polling(&self) -> bool {
        matches!(self, Backend::Polling(_))
    }

    /// Watches the root recursively and its parent (for the root's own removal
    /// and re-creation) non-recursively.
    fn watch_root(&mut self, root: &Path) -> notify::Result<()> {
        if let Some(parent) = root.parent() {
            let _ = self.watch(parent, RecursiveMode::NonRecursive);
        }
        if root.exists() {
            self.watch(root, RecursiveMode::Recursive)
        } else {
            Ok(())
        }
    }

    fn unwatch(&mut self, path: &Path) -> notify::Result<()> {
        match self {
            Backend::Native(d) => d.unwatch(path),
            Backend::Polling(d) => d.unwatch(path),
        }
    }

    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        match self {
            Backend::Native(d) => d.watch(path, mode),
            Backend::Polling(d) => d.watch(path, mode),
        }
    }
}

struct Loop {
    root: PathBuf,
    backend: Backend,
    tx: Sender,
    /// Folders with unapplied changes, and when each last changed.
    pending: BTreeMap<String, Instant>,
    root_exists: bool,
}

impl Loop {
    fn run(
        mut self,
        rx: Receiver<DebounceEventResult>,
        stop: &AtomicBool,
        apply: &mut dyn FnMut(Reload) -> bool,
    ) {
        while !stop.load(Ordering::Relaxed) {
            match rx.recv_timeout(TICK) {
                Ok(Ok(events)) => {
                    let now = Instant::now();
                    let mut folder_renamed = false;
                    // Reading a manifest is an access event too: ignoring those keeps a
                    // reload from triggering the next one.
                    for event in events
                        .iter()
                        .filter(|e| !matches!(e.kind, EventKind::Access(_)))
                    {
                        for path in &event.paths {
                            if let Some(folder) = self.folder_of(path) {
                                self.pending.insert(folder, now);
                            }
                            folder_renamed |=
                                matches!(event.kind, EventKind::Modify(ModifyKind::Name(_)))
                                    && path.parent() == Some(self.root.as_path());
                        }
                    }
                    if folder_renamed {
                        self.rewatch_root();
                    }
                }
                Ok(Err(errors)) => {
                    if !self.backend.is_polling() {
                        let reason = errors
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ");
                        if !self.switch_to_polling(&reason, apply) {
                            return;
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if !self.check_root(apply) || !self.flush_settled(apply) {
                return;
            }
        }
    }

    /// inotify keeps reporting a renamed folder's events under its old path, so
    /// after a plugin folder is renamed the recursive watch is set up afresh.
    fn rewatch_root(&mut self) {
        let _ = self.backend.unwatch(&self.root);
        let _ = self.backend.watch(&self.root, RecursiveMode::Recursive);
    }

    fn switch_to_polling(&mut self, reason: &str, apply: &mut dyn FnMut(Reload) -> bool) -> bool {
        match Backend::polling(self.tx.clone(), &self.root) {
            Ok(b) => {
                self.backend = b;
                apply(Reload::News(WatchNews::Failed {
                    reason: reason.to_owned(),
                    polling: true,
                })) && apply(Reload::All)
            }
            Err(e) => apply(Reload::News(WatchNews::Failed {
                reason: format!("{reason}; polling could not start either: {e}"),
                polling: false,
            })),
        }
    }

    /// Notices the plugins folder itself disappearing or coming back.
    fn check_root(&mut self, apply: &mut dyn FnMut(Reload) -> bool) -> bool {
        let exists = self.root.is_dir();
        if exists == self.root_exists {
            return true;
        }
        self.root_exists = exists;
        self.pending.clear();
        if exists {
            // inotify dropped the old watch with the old folder: watch the new one.
            let _ = self.backend.watch(&self.root, RecursiveMode::Recursive);
            apply(Reload::News(WatchNews::Back(self.root.clone()))) && apply(Reload::All)
        } else {
            apply(Reload::News(WatchNews::Removed(self.root.clone()))) && apply(Reload::All)
        }
    }

    fn flush_settled(&mut self, apply: &mut dyn FnMut(Reload) -> bool) -> bool {
        let now = Instant::now();
        let settled: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, at)| now.duration_since(**at) >= SETTLE)
            .map(|(f, _)| f.clone())
            .collect();
        if settled.is_empty() {
            return true;
        }
        for f in &settled {
            self.pending.remove(f);
        }
        // A folder that is gone may have been renamed just before, and inotify
        // can report the new name's events under the old one: compare the
        // whole folder with the catalog instead (one listing of the root).
        if settled.iter().any(|f| !self.root.join(f).exists()) {
            return apply(Reload::All);
        }
        apply(Reload::Folders(settled))
    }

    /// The plugin folder a changed path belongs to: the first component below the root.
    fn folder_of(&self, path: &Path) -> Option<String> {
        match path.strip_prefix(&self.root).ok()?.components().next()? {
            Component::Normal(name) => name
                .to_str()
                .filter(|n| !n.starts_with('.'))
                .map(str::to_owned),
            _ => None,
        }
    }
}
