//! `plughost stats`: calls, outcomes and durations per tool, read from an
//! audit log (the CLI runs one call per process, so the log is where its
//! metrics accumulate; a library embedder reads `PluginHost::metrics`).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use plughost::observe::{AuditRecord, ToolStats};

use super::Cli;
use super::terminal::{esay, say};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The audit log to read (default: the global --audit-log).
    file: Option<PathBuf>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let path = args
        .file
        .clone()
        .or_else(|| cli.audit_log.clone())
        .ok_or("name an audit log: plughost stats FILE (or --audit-log FILE)")?;
    let file =
        std::fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut tools: BTreeMap<String, ToolStats> = BTreeMap::new();
    let mut skipped = 0;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        match serde_json::from_str::<AuditRecord>(&line) {
            Ok(r) => tools.entry(r.tool).or_default().add(
                &r.outcome,
                Duration::from_secs_f64(r.duration_ms.max(0.0) / 1e3),
            ),
            Err(_) if line.trim().is_empty() => {}
            Err(_) => skipped += 1,
        }
    }
    if cli.json {
        super::print_json(&serde_json::json!({"tools": tools, "unreadable_lines": skipped}));
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        "{:<24} {:>7} {:>7} {:>8} {:>8} {:>10} {:>10}",
        "tool",
        "calls",
        "ok",
        "is_error",
        "host err",
        "avg ms",
        "max ms"
    );
    for (name, t) in &tools {
        let host_errors: u64 = t.host_errors.values().sum();
        say!(
            "{name:<24} {:>7} {:>7} {:>8} {:>8} {:>10.1} {:>10.1}",
            t.calls,
            t.ok,
            t.tool_errors,
            host_errors,
            t.total_ms / t.calls.max(1) as f64,
            t.max_ms
        );
    }
    if skipped > 0 {
        esay!(
            "{skipped} lines of {} were not audit records and were skipped",
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
