//! A host's workers: line workers of persistent plugins and MCP servers run
//! as plugins, each transport in its own [`Registry`]. What the host does to
//! a plugin's workers (retire, kill, stop, list) is done to both registries:
//! a plugin has workers of one kind only.

use std::collections::HashMap;

use super::load::{WorkerInfo, WorkerLoad};
use super::pool::Pool;
use super::registry::Registry;
use super::slot::Slot;
use crate::events::{EventSink, WorkerStop};

/// A host's workers: line workers of persistent plugins, and MCP servers
/// run as plugins. A plugin has workers of one kind only, so what is done
/// to a plugin is done to both registries.
pub(crate) struct Workers {
    /// Persistent plugins of the line protocol (`pool.rs`).
    pub(crate) lines: Registry<Pool>,
    /// MCP servers run as plugins, each shared by every call (`slot.rs`).
    pub(crate) servers: Registry<Slot>,
}

impl Workers {
    pub(crate) fn new(events: EventSink) -> Workers {
        Workers {
            lines: Registry::new(events.clone()),
            servers: Registry::new(events),
        }
    }

    /// Retires the workers of `plugin` (removed or changed): idle ones are
    /// told to finish in the background, busy ones after their call.
    pub(crate) fn retire(&self, plugin: &str, reason: WorkerStop) {
        self.servers.retire(plugin, reason.clone());
        self.lines.retire(plugin, reason);
    }

    /// Retires the workers of `plugin` and kills the idle ones' process
    /// groups before returning: for a revoked approval, which must not wait.
    pub(crate) fn kill(&self, plugin: &str, reason: WorkerStop) {
        self.servers.kill(plugin, reason.clone());
        self.lines.kill(plugin, reason);
    }

    /// Retires every plugin's workers and kills the idle ones before
    /// returning (host shutdown, which may happen with no runtime left to
    /// wait on).
    pub(crate) fn kill_all(&self, reason: WorkerStop) {
        self.servers.kill_all(reason.clone());
        self.lines.kill_all(reason);
    }

    /// Stops every idle worker and waits until they are gone; busy ones stop
    /// after their call.
    pub(crate) async fn stop_all(&self, reason: WorkerStop) {
        self.servers.stop_all(reason.clone()).await;
        self.lines.stop_all(reason).await;
    }

    /// Each plugin with workers, its load (generation) and the grant key its
    /// workers were started under.
    pub(crate) fn pools(&self) -> Vec<(String, u64, String)> {
        let mut all = self.lines.grants();
        all.extend(self.servers.grants());
        all
    }

    /// Each plugin's workers as they are now: running, busy, starting,
    /// backing off.
    pub(crate) fn loads(&self) -> Vec<WorkerLoad> {
        let mut loads = self.lines.loads();
        loads.extend(self.servers.loads());
        loads
    }

    /// The running workers of each plugin.
    pub(crate) fn running(&self) -> HashMap<String, Vec<WorkerInfo>> {
        let mut running = self.lines.running();
        running.extend(self.servers.running());
        running
    }
}
