//! Log lines for long-running commands: to stderr, and to a file when asked.
//! An observer, so every call and reload is logged without extra plumbing.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use plughost::events::HostEvent;
use plughost::observe::Observer;
use plughost::observe::{AuditRecord, CallInfo, CallSummary, Interests, ObserverResult};
use plughost::{CallError, ToolOutcome};

pub struct Log {
    file: Option<Arc<Mutex<File>>>,
    /// Put before every line (a tenant's name).
    tag: Option<String>,
    /// Whether catalog events are logged: several hosts of one plugins
    /// folder would log each of them once per host.
    events: bool,
}

impl Log {
    pub fn open(path: Option<&Path>) -> Result<Log, String> {
        let file = path
            .map(|p| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| format!("cannot open the log file {}: {e}", p.display()))
            })
            .transpose()?;
        Ok(Log {
            file: file.map(|f| Arc::new(Mutex::new(f))),
            tag: None,
            events: true,
        })
    }

    /// The same log with `tag` before each line; catalog events only with `events`.
    pub fn tagged(&self, tag: &str, events: bool) -> Log {
        Log {
            file: self.file.clone(),
            tag: Some(tag.to_owned()),
            events,
        }
    }

    /// One line to stderr (and the file): `message` is escaped and kept on
    /// one line, since events and errors quote plugins' words.
    pub fn line(&self, message: &str) {
        let tag = self
            .tag
            .as_deref()
            .map(|t| format!("[{t}] "))
            .unwrap_or_default();
        let line = format!(
            "{} plughost: {tag}{}\n",
            AuditRecord::time_of(std::time::SystemTime::now()),
            super::terminal::line(message)
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        if let Some(f) = &self.file
            && let Ok(mut f) = f.lock()
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

impl Observer for Log {
    fn interests(&self) -> Interests {
        Interests {
            events: true,
            calls: true,
            progress: false,
        }
    }

    fn event(&self, event: &HostEvent) -> ObserverResult {
        if !self.events {
            return Ok(());
        }
        let text = event.to_string();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        self.line(&lines.join("; "));
        Ok(())
    }

    fn call_ended(
        &self,
        call: &CallInfo,
        ended: &Result<ToolOutcome, CallError>,
        s: &CallSummary,
    ) -> ObserverResult {
        let ms = s.duration.as_secs_f64() * 1e3;
        self.line(&match ended {
            Ok(outcome) => {
                let kind = if outcome.is_error { "tool error" } else { "ok" };
                format!("call {} ({}): {kind} in {ms:.1} ms", call.tool, call.plugin)
            }
            Err(e) => format!("call {}: {} in {ms:.1} ms: {e}", call.tool, e.kind()),
        });
        Ok(())
    }
}

/// For one-shot commands (`call`, `approve`, `add`): what the host notices
/// while they run (a server started without a variable it needs, a worker
/// backing off) as `note:` lines on stderr.
pub struct Notes;

impl Observer for Notes {
    fn interests(&self) -> Interests {
        Interests {
            events: true,
            calls: false,
            progress: false,
        }
    }

    fn event(&self, event: &HostEvent) -> ObserverResult {
        if let HostEvent::Notice(n) = event {
            super::terminal::esay!("note: {}", super::terminal::line(&n.to_string()));
        }
        Ok(())
    }
}
