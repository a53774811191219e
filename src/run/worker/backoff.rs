//! Start-up failures in a row, and when to try again: a worker (or an MCP
//! server) that keeps dying before its first answer is started again with
//! backoff, never in a tight loop, and the streak is reported once.

use std::time::{Duration, Instant};

use crate::events::Notice;
use crate::run::executor::RunError;

/// First wait after a worker died at start-up; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The start-up failures of one plugin version's workers.
#[derive(Debug, Default)]
pub(super) struct Backoff {
    /// Workers that died before their first answer, in a row.
    failures: u32,
    retry_at: Option<Instant>,
    last_failure: String,
}

impl Backoff {
    /// `Err` while the wait after the last failure has not passed.
    pub(super) fn check(&self) -> Result<(), RunError> {
        match self.retry_at {
            Some(at) if at > Instant::now() => Err(RunError::Backoff(format!(
                "its worker exited before answering {} time{} in a row ({}); the next start is in {:.1}s",
                self.failures,
                if self.failures == 1 { "" } else { "s" },
                self.last_failure,
                at.duration_since(Instant::now()).as_secs_f64()
            ))),
            _ => Ok(()),
        }
    }

    /// Counts a worker of `plugin` that died before its first answer; the
    /// second in a row is reported (the returned notice), once a streak.
    pub(super) fn failed(&mut self, plugin: &str, detail: &str, stderr: &str) -> Option<Notice> {
        self.failures += 1;
        let wait = FIRST_BACKOFF
            .saturating_mul(1 << (self.failures - 1).min(16))
            .min(MAX_BACKOFF);
        self.retry_at = Some(Instant::now() + wait);
        self.last_failure = match crate::error::last_chars(stderr.trim(), 300) {
            "" => detail.to_owned(),
            tail => format!("{detail}; stderr ends with: {tail}"),
        };
        (self.failures == 2).then(|| Notice::WorkerBackoff {
            plugin: plugin.to_owned(),
            failure: self.last_failure.clone(),
            max_backoff_secs: MAX_BACKOFF.as_secs(),
        })
    }

    /// Whether the next start waits for the backoff to pass.
    pub(super) fn waiting(&self) -> bool {
        self.retry_at.is_some_and(|at| at > Instant::now())
    }

    /// A worker answered: the streak is over.
    pub(super) fn succeeded(&mut self) {
        self.failures = 0;
        self.retry_at = None;
    }
}
