//! What a call went through, timed as it happens: the wait for a call slot
//! (and a worker's turn), the start of its process, worker or server, and
//! the approval question. The call pipeline fills it in; the call's summary,
//! span and metrics read it when the call ends.

use std::time::{Duration, Instant};

/// The timed phases of one call.
#[derive(Debug)]
pub(crate) struct Phases {
    pub(crate) started: Instant,
    /// When the call got its slot (and its worker's turn): its plugin runs
    /// from then on. `None` for a call refused before that.
    pub(crate) admitted: Option<Instant>,
    /// The start of what runs the call, when one was started for it.
    pub(crate) start: Option<(Start, Step)>,
    /// The approval question, when one was asked; `ok` is the answer.
    pub(crate) approval: Option<Step>,
    /// The pid of the persistent worker or MCP server that served the call.
    pub(crate) worker: Option<u32>,
    /// Bytes of the call's input (compact JSON).
    pub(crate) bytes_in: usize,
}

/// What was started for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// A process for this call alone.
    Process,
    /// A persistent plugin's worker.
    Worker,
    /// An MCP server: its process, handshake and first listing.
    Server,
}

/// One timed step and whether it went well.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(feature = "otel"),
    expect(dead_code, reason = "read by the call's span")
)]
pub(crate) struct Step {
    pub(crate) start: Instant,
    pub(crate) end: Instant,
    pub(crate) ok: bool,
}

impl Step {
    /// A step that began at `start` and ends now.
    pub(crate) fn since(start: Instant, ok: bool) -> Step {
        Step {
            start,
            end: Instant::now(),
            ok,
        }
    }
}

impl Phases {
    pub(crate) fn new() -> Phases {
        Phases {
            started: Instant::now(),
            admitted: None,
            start: None,
            approval: None,
            worker: None,
            bytes_in: 0,
        }
    }

    /// From the call's start to its slot (the whole call when it never got one).
    pub(crate) fn wait(&self, ended: Instant) -> Duration {
        self.admitted.unwrap_or(ended).duration_since(self.started)
    }

    /// From the call's slot to its end.
    pub(crate) fn run(&self, ended: Instant) -> Option<Duration> {
        self.admitted.map(|at| ended.duration_since(at))
    }
}
