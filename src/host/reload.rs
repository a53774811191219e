//! Applying a reload to the host: re-read the changed folders, swap the
//! snapshot, publish the events to subscribers and observers. And ranking
//! the snapshot by the approvals of now: who keeps a tool name two plugins
//! claim depends on what the user approved (`plugins::catalog`), so a
//! snapshot ranked by other approvals is ranked again before it is read.

use std::sync::Arc;

use super::Inner;
use super::diff::diff;
use crate::approval::{ApprovalError, Approvals, Standing};
use crate::events::{HostEvent, Notice, WorkerStop};
use crate::plugins::catalog::Catalog;
use crate::plugins::catalog::FolderResult;
use crate::plugins::loader::{is_plugin_folder, load_guarded, plugin_folders};
use crate::plugins::watcher::{Reload, WatchNews};

impl Inner {
    pub(super) fn set_catalog(&self, catalog: Catalog) -> Arc<Catalog> {
        let catalog = Arc::new(catalog);
        *self.catalog.write().expect("catalog lock") = catalog.clone();
        catalog
    }

    /// The current snapshot, ranked by `approvals` (the approvals of now):
    /// when they differ from those it was ranked by, it is ranked again,
    /// swapped in, and the collisions that changed are published. While a
    /// reload runs, the snapshot is returned as it is (the reload ranks its
    /// own by the approvals it reads).
    pub(super) fn ranked(&self, approvals: &Result<Arc<Approvals>, ApprovalError>) -> Arc<Catalog> {
        let current = self.catalog.read().expect("catalog lock").clone();
        let standing = Standing::new(approvals.clone());
        if standing.same_as(current.approved_claims()) {
            return current;
        }
        let Ok(_one_at_a_time) = self.update.try_lock() else {
            return current;
        };
        let latest = self.catalog.read().expect("catalog lock").clone();
        if standing.same_as(latest.approved_claims()) {
            return latest;
        }
        let new = self.set_catalog(latest.ranked(Arc::new(standing)));
        self.publish(&diff(&latest, &new, &[]));
        new
    }

    /// Applies one reload and publishes its events. Reloads are serialized;
    /// calls are never blocked by one (they read the previous snapshot).
    pub(super) fn apply(&self, reload: Reload) -> Vec<HostEvent> {
        let _one_at_a_time = self.update.lock().expect("update lock");
        let root = &self.config.plugins_dir;
        let old = self.catalog.read().expect("catalog lock").clone();
        let folders = match reload {
            Reload::News(news) => {
                let notice = match news {
                    WatchNews::Created(path) => Notice::PluginsDirCreated { path },
                    WatchNews::Removed(path) => Notice::PluginsDirRemoved { path },
                    WatchNews::Back(path) => Notice::PluginsDirBack { path },
                    WatchNews::Failed { reason, polling } => {
                        Notice::WatchingFailed { reason, polling }
                    }
                };
                let events = vec![HostEvent::Notice(notice)];
                self.publish(&events);
                return events;
            }
            Reload::Folders(folders) => folders,
            Reload::All => {
                let mut all: Vec<String> = old.folders().map(str::to_owned).collect();
                all.extend(plugin_folders(root).unwrap_or_default());
                all.sort();
                all.dedup();
                all
            }
        };
        let changes: Vec<_> = folders
            .iter()
            .map(|f| {
                (
                    f.clone(),
                    is_plugin_folder(root, f).then(|| self.load_folder(&root.join(f))),
                )
            })
            .collect();
        let standing = Standing::new(self.approvals.current());
        let new = old.with_folders(changes);
        let new = match standing.same_as(new.approved_claims()) {
            true => new,
            false => new.ranked(Arc::new(standing)),
        };
        let new = self.set_catalog(new);
        // A folder that was read again may hold new code even when its manifest
        // did not change: its workers stop, the next call starts the new code.
        for folder in &folders {
            if let Some(before) = old.plugin(folder) {
                let reason = match new.plugin(folder) {
                    Some(_) => WorkerStop::PluginChanged,
                    None => WorkerStop::PluginRemoved,
                };
                self.workers.retire(before.name(), reason);
                self.forget_confinement(before.generation);
                self.forget_outlet(before.generation);
            }
        }
        let events = diff(&old, &new, &folders);
        self.publish(&events);
        events
    }

    /// One plugin folder as the catalog holds it: an MCP server's tools come
    /// from its cached listing.
    fn load_folder(&self, dir: &std::path::Path) -> FolderResult {
        crate::plugins::mcp_plugin::attach_cached(load_guarded(dir), &self.config.state_dir)
    }

    fn publish(&self, events: &[HostEvent]) {
        for e in events {
            self.bus.publish(e.clone());
        }
    }
}
