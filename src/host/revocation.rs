//! Approvals that change under running workers: a revoke (from this process
//! or another `plughost`), a grant that changed, or an approvals file that
//! became unreadable stops the workers and MCP servers that ran under the old
//! grant within a second, rather than at their next call or idle timeout. A
//! secret a worker was given that changed, was removed or rebound retires it
//! the same way (its key holds a digest of them).
//!
//! One task per host, started with its first worker: four times a second it
//! compares the approvals file's identity (one `lstat`); when the file
//! changed, it reads it off the runtime's threads and checks every pool
//! against the approval view of now.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use super::Inner;
use super::approve::blocking;
use crate::approval::ApprovalView;
use crate::events::{HostEvent, WorkerStop};
use crate::plugins::catalog::Plugin;
use crate::run::worker::Pool;
use crate::secrets::SecretStore;

/// The identity of the secret store's file (one `lstat`): what changes
/// when it is written.
fn secrets_stamp(state_dir: &std::path::Path) -> Option<(u64, i64, i64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(state_dir.join(crate::secrets::SECRETS_FILE)).ok()?;
    Some((m.ino(), m.mtime(), m.mtime_nsec(), m.len()))
}

/// How often the approvals file's identity is compared.
const EVERY: Duration = Duration::from_millis(250);

impl Inner {
    /// The worker pool of `plugin` under the grant it runs under now; starts
    /// the watch that stops it when that grant goes away.
    pub(super) async fn pool_for(&self, plugin: &Arc<Plugin>) -> Arc<Pool> {
        self.watch_approvals();
        let key = self
            .worker_key(&self.current_view().await, plugin)
            .unwrap_or_default();
        self.workers
            .lines
            .get(plugin, &key, self.config.limits.kill_grace)
    }

    /// The MCP server slot of `plugin` under the grant it runs under now;
    /// starts the watch that stops it when that grant goes away.
    pub(super) async fn slot_for(&self, plugin: &Arc<Plugin>) -> Arc<crate::run::worker::Slot> {
        self.watch_approvals();
        let key = self
            .worker_key(&self.current_view().await, plugin)
            .unwrap_or_default();
        self.workers
            .servers
            .get(plugin, &key, self.config.limits.kill_grace)
    }

    /// What a worker of `plugin` runs under: its grant, and the secrets it
    /// is given (a digest under a key of this process), so that a changed,
    /// removed or rebound secret starts new workers as a changed grant does;
    /// for a remote server, its sign-in too (a new sign-in, a sign-out or a
    /// refresh starts a new bridge, in this process or another).
    fn worker_key(&self, view: &ApprovalView, plugin: &Plugin) -> Option<String> {
        let grant = view.grant_key(plugin)?;
        #[cfg(feature = "mcp-server")]
        let sign_in = plugin
            .manifest
            .remote
            .as_ref()
            .map(|_| super::sign_in::sign_in_secret(plugin.name()));
        #[cfg(not(feature = "mcp-server"))]
        let sign_in: Option<String> = None;
        if plugin.manifest.env.is_empty() && sign_in.is_none() {
            return Some(grant);
        }
        let wanted = plugin
            .manifest
            .env
            .iter()
            .map(|e| e.0.as_str())
            .chain(sign_in.as_deref());
        let tag = match SecretStore::new(&self.config.state_dir).versions_for(plugin.name(), wanted)
        {
            Ok(secrets) => {
                static KEY: OnceLock<RandomState> = OnceLock::new();
                format!("{:x}", KEY.get_or_init(RandomState::new).hash_one(&secrets))
            }
            Err(_) => "unreadable".to_owned(),
        };
        Some(format!("{grant}|secrets {tag}"))
    }

    /// Starts the watch unless it runs (a worker is about to start).
    pub(super) fn watch_approvals(&self) {
        if self.approvals_watched.swap(true, Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.approvals_watched.store(false, Ordering::Relaxed);
            return;
        };
        let (me, stop) = (self.me.clone(), self.shutdown.clone());
        runtime.spawn(async move {
            let mut seen = None;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(EVERY) => {}
                    _ = stop.cancelled() => return,
                }
                let Some(inner) = Weak::upgrade(&me) else {
                    return;
                };
                let now = (
                    inner.approvals.stamp(),
                    secrets_stamp(&inner.config.state_dir),
                );
                if seen == Some(now) {
                    continue;
                }
                seen = Some(now);
                inner.enforce_approvals().await;
            }
        });
    }

    /// Stops the workers of every pool whose grant no longer holds: killed
    /// at once when the plugin lost its approval (or the approvals cannot be
    /// read), retired (idle ones now, busy ones after their call) when the
    /// grant changed.
    pub(super) async fn enforce_approvals(&self) {
        let pools = self.workers.pools();
        if pools.is_empty() {
            return;
        }
        let store = self.approvals.clone();
        let approvals = blocking(move || store.current()).await;
        let catalog = self.catalog.read().expect("catalog lock").clone();
        let view = ApprovalView::new(catalog, approvals);
        for (name, generation, key) in pools {
            let Some(plugin) = view.catalog().plugin(&name) else {
                continue;
            };
            if plugin.generation != generation {
                continue; // a reload retires it
            }
            match view.state(plugin) {
                Err(_) => self.workers.kill(&name, WorkerStop::ApprovalsUnreadable),
                Ok(state) if !state.allows_call() => {
                    self.workers.kill(&name, WorkerStop::ApprovalRevoked);
                    self.bus.publish(HostEvent::ApprovalRevoked {
                        plugin: name.clone(),
                    });
                }
                Ok(_) if self.worker_key(&view, plugin).as_deref() != Some(key.as_str()) => {
                    self.workers.retire(&name, WorkerStop::ApprovalChanged);
                }
                Ok(_) => {}
            }
        }
    }
}
