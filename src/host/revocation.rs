//! Approvals that change under running workers: a revoke (from this process
//! or another `plughost`), a grant that changed, or an approvals file that
//! became unreadable stops the workers and MCP servers that ran under the old
//! grant within a second, rather than at their next call or idle timeout.
//!
//! One task per host, started with its first worker: four times a second it
//! compares the approvals file's identity (one `lstat`); when the file
//! changed, it reads it off the runtime's threads and checks every pool
//! against the approval view of now.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Inner;
use super::approve::blocking;
use crate::approval::ApprovalView;
use crate::events::{HostEvent, WorkerStop};
use crate::plugins::catalog::Plugin;
use crate::run::worker::Pool;

/// How often the approvals file's identity is compared.
const EVERY: Duration = Duration::from_millis(250);

impl Inner {
    /// The worker pool of `plugin` under the grant it runs under now; starts
    /// the watch that stops it when that grant goes away.
    pub(super) async fn pool_for(&self, plugin: &Arc<Plugin>) -> Arc<Pool> {
        self.watch_approvals();
        let key = self
            .current_view()
            .await
            .grant_key(plugin)
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
            .current_view()
            .await
            .grant_key(plugin)
            .unwrap_or_default();
        self.workers
            .servers
            .get(plugin, &key, self.config.limits.kill_grace)
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
                let now = inner.approvals.stamp();
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
                Ok(_) if view.grant_key(plugin).as_deref() != Some(key.as_str()) => {
                    self.workers.retire(&name, WorkerStop::ApprovalChanged);
                }
                Ok(_) => {}
            }
        }
    }
}
