//! What the host keeps for one plugin version under one grant, whatever
//! the transport its workers speak: which load and grant they were started
//! under (so a reload or a changed grant retires them), the backoff after
//! start-up deaths, the starts in progress, whether the entry was retired,
//! and the started and stopped events. A line-worker [`Pool`](super::pool::Pool)
//! and an MCP server [`Slot`](super::slot::Slot) each hold one, so these
//! rules are written once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::backoff::Backoff;
use super::load::{Entered, Starting, WorkerLoad};
use crate::events::{EventSink, HostEvent, WorkerStop};
use crate::plugins::catalog::Plugin;
use crate::plugins::manifest::Persistent;
use crate::run::executor::RunError;

/// One plugin version's workers under one grant: the parts every transport
/// shares.
pub(crate) struct Bookkeeping {
    pub(super) plugin: Arc<Plugin>,
    /// The grant the workers were started under (their sandbox depends on it).
    pub(super) grant: String,
    pub(super) settings: Persistent,
    pub(super) kill_grace: Duration,
    backoff: Mutex<Backoff>,
    starting: Starting,
    /// Set once the entry is retired: no worker is handed out or kept after.
    retired: Mutex<Option<WorkerStop>>,
    pub(super) report: Reporter,
    /// Where background stops run (a reload may come from the watcher thread).
    pub(super) runtime: tokio::runtime::Handle,
}

impl Bookkeeping {
    /// Must be called on the runtime the workers' background stops run on.
    pub(super) fn new(
        plugin: &Arc<Plugin>,
        grant: &str,
        kill_grace: Duration,
        events: EventSink,
    ) -> Bookkeeping {
        Bookkeeping {
            plugin: plugin.clone(),
            grant: grant.to_owned(),
            settings: plugin.manifest.worker_settings().unwrap_or_default(),
            kill_grace,
            backoff: Mutex::default(),
            starting: Starting::default(),
            retired: Mutex::new(None),
            report: Reporter {
                plugin: plugin.name().to_owned(),
                events,
            },
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// `Ok` when workers kept here may serve `plugin` under `grant`; else
    /// why they must be retired: the plugin was reloaded, or its grant changed.
    pub(super) fn serves(&self, plugin: &Plugin, grant: &str) -> Result<(), WorkerStop> {
        if self.plugin.generation != plugin.generation {
            Err(WorkerStop::PluginChanged)
        } else if self.grant != grant {
            Err(WorkerStop::ApprovalChanged)
        } else {
            Ok(())
        }
    }

    /// Marks the entry retired. A transport calls it under the lock that
    /// guards its idle workers, so that no worker is put back idle after.
    pub(super) fn retire(&self, reason: &WorkerStop) {
        *self.retired.lock().expect("retired lock") = Some(reason.clone());
    }

    /// Why the entry was retired, if it was.
    pub(super) fn retired(&self) -> Option<WorkerStop> {
        self.retired.lock().expect("retired lock").clone()
    }

    /// Counts a start in progress (until the guard drops), unless the
    /// plugin's workers keep dying at start-up and the backoff has not passed.
    pub(super) fn begin_start(&self) -> Result<Entered, RunError> {
        self.backoff.lock().expect("backoff lock").check()?;
        Ok(self.starting.enter())
    }

    /// Counts a worker that died before its first answer, and reports a
    /// streak of them once.
    pub(super) fn start_failed(&self, detail: &str, stderr: &str) {
        let notice =
            self.backoff
                .lock()
                .expect("backoff lock")
                .failed(&self.report.plugin, detail, stderr);
        if let Some(notice) = notice {
            (self.report.events)(HostEvent::Notice(notice));
        }
    }

    /// A worker answered: a streak of start-up deaths is over.
    pub(super) fn answered(&self) {
        self.backoff.lock().expect("backoff lock").succeeded();
    }

    /// How long a worker may wait for a call before it is stopped.
    pub(super) fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.settings.idle_timeout_secs)
    }

    /// The load figures, given how many workers run and how many are busy.
    pub(super) fn load(&self, running: usize, busy: usize) -> WorkerLoad {
        WorkerLoad {
            plugin: self.report.plugin.clone(),
            running,
            busy,
            starting: self.starting.count(),
            backing_off: self.backoff.lock().expect("backoff lock").waiting(),
        }
    }
}

/// Reports a plugin's workers starting and stopping; cheap to clone into a
/// background stop.
#[derive(Clone)]
pub(crate) struct Reporter {
    plugin: String,
    events: EventSink,
}

impl Reporter {
    pub(super) fn started(&self, pid: u32) {
        (self.events)(HostEvent::WorkerStarted {
            plugin: self.plugin.clone(),
            worker: pid,
        });
    }

    pub(super) fn stopped(&self, pid: u32, calls: u64, reason: WorkerStop) {
        (self.events)(HostEvent::WorkerStopped {
            plugin: self.plugin.clone(),
            worker: pid,
            reason,
            calls,
        });
    }
}
