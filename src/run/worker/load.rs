//! What a plugin's workers (or its MCP server) are doing now, for metrics
//! and for anyone who asks ([`crate::PluginHost::worker_loads`], and the
//! per-worker [`WorkerInfo`] of listings):
//! how many run, serve a call, are being started, and whether starts wait
//! for a backoff. Starts are counted by a guard, so a start abandoned midway
//! (its call dropped) is uncounted all the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The workers of one plugin (or its MCP server) as they are now.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct WorkerLoad {
    /// The plugin's name.
    pub plugin: String,
    /// Running, idle or busy.
    pub running: usize,
    /// Serving a call (an MCP server: serving at least one).
    pub busy: usize,
    /// Being started (an MCP server: until its handshake and listing end).
    pub starting: usize,
    /// Its workers keep dying at start-up and the next start waits.
    pub backing_off: bool,
}

/// A running worker, for listings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerInfo {
    /// The worker's process id.
    pub pid: u32,
    /// How many calls it has answered.
    pub calls: u64,
    /// Seconds since it last answered; `None` while it is busy.
    pub idle_secs: Option<u64>,
}

/// The starts in progress.
#[derive(Debug, Default)]
pub(super) struct Starting(Arc<AtomicUsize>);

/// One start in progress, until dropped.
pub(super) struct Entered(Arc<AtomicUsize>);

impl Starting {
    pub(super) fn enter(&self) -> Entered {
        self.0.fetch_add(1, Ordering::Relaxed);
        Entered(self.0.clone())
    }

    pub(super) fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
