//! Log lines for long-running commands: to stderr, and to a file when asked.
//! An observer, so every call and reload is logged without extra plumbing.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use plughost::{
    AuditRecord, CallError, CallInfo, CallSummary, HostEvent, Interests, Observer, ObserverResult,
    ToolOutcome,
};

pub struct Log {
    file: Option<Mutex<File>>,
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
            file: file.map(Mutex::new),
        })
    }

    pub fn line(&self, message: &str) {
        let line = format!(
            "{} plughost: {message}\n",
            AuditRecord::time_of(std::time::SystemTime::now())
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
        let text = event.to_string();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        self.line(&lines.join("; "));
        Ok(())
    }

    fn call_finished(
        &self,
        call: &CallInfo,
        outcome: &ToolOutcome,
        s: &CallSummary,
    ) -> ObserverResult {
        let kind = if outcome.is_error { "tool error" } else { "ok" };
        self.line(&format!(
            "call {} ({}): {kind} in {:.1} ms",
            call.tool,
            call.plugin,
            s.duration.as_secs_f64() * 1e3
        ));
        Ok(())
    }
    fn call_failed(&self, call: &CallInfo, e: &CallError, s: &CallSummary) -> ObserverResult {
        self.line(&format!(
            "call {}: {} in {:.1} ms: {e}",
            call.tool,
            e.kind(),
            s.duration.as_secs_f64() * 1e3
        ));
        Ok(())
    }
}
