//! The one worker registry: a host's workers by plugin, whatever their
//! transport. Each plugin has at most one entry, for one plugin version under
//! one grant; asking for another version or grant retires the old entry
//! (its idle workers stop now, busy ones after their call). Retiring,
//! killing, stopping everything and the load figures are the same for every
//! transport and are written here; an [`Entry`] contributes only how its
//! workers are handed out, started, checked and stopped.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::bookkeeping::Bookkeeping;
use super::load::{WorkerInfo, WorkerLoad};
use crate::events::{EventSink, WorkerStop};
use crate::plugins::catalog::Plugin;

/// The workers of one plugin version under one grant, on one transport.
pub(crate) trait Entry: Send + Sync + Sized + 'static {
    /// A new entry, with no worker yet.
    fn new(book: Bookkeeping) -> Self;

    /// The bookkeeping every transport shares.
    fn book(&self) -> &Bookkeeping;

    /// Marks the entry retired and stops its idle workers in the background
    /// (stdin closed, a grace, then the group kill); busy ones stop after
    /// their call. Callable from any thread.
    fn retire(self: &Arc<Self>, reason: WorkerStop);

    /// Marks the entry retired and kills its idle workers' process groups
    /// before returning: a revoke, or a host shutting down with no runtime
    /// left to wait on.
    fn kill(self: &Arc<Self>, reason: WorkerStop);

    /// Marks the entry retired, stops its idle workers and waits until they
    /// are gone; busy ones stop after their call.
    fn stop_idle(self: Arc<Self>, reason: WorkerStop) -> impl Future<Output = ()> + Send;

    /// How many workers run, and how many of them are busy.
    fn counts(&self) -> (usize, usize);

    /// The running workers, for listings.
    fn running(&self) -> Vec<WorkerInfo>;
}

/// The entries of one transport, by plugin.
pub(crate) struct Registry<E> {
    entries: Mutex<HashMap<String, Arc<E>>>,
    events: EventSink,
}

impl<E: Entry> Registry<E> {
    pub(super) fn new(events: EventSink) -> Registry<E> {
        Registry {
            entries: Mutex::default(),
            events,
        }
    }

    /// The entry serving exactly this plugin version and grant. An entry of
    /// an older version, or under another grant, is retired.
    pub(crate) fn get(&self, plugin: &Arc<Plugin>, grant: &str, kill_grace: Duration) -> Arc<E> {
        let mut entries = self.entries.lock().expect("registry lock");
        if let Some(entry) = entries.get(plugin.name()) {
            match entry.book().serves(plugin, grant) {
                Ok(()) => return entry.clone(),
                Err(reason) => entry.retire(reason),
            }
        }
        let book = Bookkeeping::new(plugin, grant, kill_grace, self.events.clone());
        let entry = Arc::new(E::new(book));
        entries.insert(plugin.name().to_owned(), entry.clone());
        entry
    }

    /// Retires the entry of `plugin` (removed or changed).
    pub(crate) fn retire(&self, plugin: &str, reason: WorkerStop) {
        if let Some(entry) = self.remove(plugin) {
            entry.retire(reason);
        }
    }

    /// Retires the entry of `plugin` and kills its idle workers now.
    pub(crate) fn kill(&self, plugin: &str, reason: WorkerStop) {
        if let Some(entry) = self.remove(plugin) {
            entry.kill(reason);
        }
    }

    /// Retires every entry and kills every idle worker before returning.
    pub(crate) fn kill_all(&self, reason: WorkerStop) {
        for entry in self.drain() {
            entry.kill(reason.clone());
        }
    }

    /// Retires every entry, stops every idle worker and waits until they are
    /// gone; busy ones stop after their call.
    pub(crate) async fn stop_all(&self, reason: WorkerStop) {
        for entry in self.drain() {
            entry.stop_idle(reason.clone()).await;
        }
    }

    /// Each entry's plugin, its load (generation) and the grant key its
    /// workers were started under.
    pub(crate) fn grants(&self) -> Vec<(String, u64, String)> {
        let entries = self.entries.lock().expect("registry lock");
        entries
            .iter()
            .map(|(name, entry)| {
                let book = entry.book();
                (name.clone(), book.plugin.generation, book.grant.clone())
            })
            .collect()
    }

    /// Each plugin's workers as they are now (see [`WorkerLoad`]).
    pub(crate) fn loads(&self) -> Vec<WorkerLoad> {
        let entries = self.entries.lock().expect("registry lock");
        entries
            .values()
            .map(|entry| {
                let (running, busy) = entry.counts();
                entry.book().load(running, busy)
            })
            .collect()
    }

    /// The running workers, by plugin; plugins with none are left out.
    pub(crate) fn running(&self) -> HashMap<String, Vec<WorkerInfo>> {
        let entries = self.entries.lock().expect("registry lock");
        entries
            .iter()
            .map(|(name, entry)| (name.clone(), entry.running()))
            .filter(|(_, workers)| !workers.is_empty())
            .collect()
    }

    fn remove(&self, plugin: &str) -> Option<Arc<E>> {
        self.entries.lock().expect("registry lock").remove(plugin)
    }

    fn drain(&self) -> Vec<Arc<E>> {
        let mut entries = self.entries.lock().expect("registry lock");
        entries.drain().map(|(_, entry)| entry).collect()
    }
}
