//! `plughost watch`: prints hot-reload events as they happen (`--json`: one
//! JSON object a line) until interrupted.

use std::io::Write;
use std::process::ExitCode;

use plughost::events::HostEvent;
use plughost::events::Notice;
use tokio::sync::broadcast::error::RecvError;

use super::Cli;

pub fn run(cli: &Cli) -> Result<ExitCode, String> {
    let host = cli.host()?;
    let mut events = host.events();
    let _watcher = host
        .watch()
        .map_err(|e| format!("cannot watch {}: {e}", host.plugins_dir().display()))?;
    let listing = host.listing();
    let watching = format!(
        "watching {}: {} plugins loaded, {} rejected",
        host.plugins_dir().display(),
        listing.plugins.len(),
        listing.rejected.len()
    );
    print_line(
        cli.json,
        serde_json::json!({"event": "notice", "notice": "watching", "message": watching}),
        &format!("note     {watching}"),
    );
    super::runtime().block_on(async {
        // Registered once: a signal between two events must not be missed (once
        // tokio handles a signal, the default action no longer ends the process).
        let stop = super::termination_signal();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                e = events.recv() => match e {
                    Ok(event) => emit(cli.json, &event),
                    Err(RecvError::Lagged(count)) => {
                        emit(cli.json, &HostEvent::Notice(Notice::EventsDropped { count }));
                    }
                    Err(RecvError::Closed) => break,
                },
                _ = &mut stop => break,
            }
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// One event: its words, or its JSON (a notice's words in `message`).
fn emit(json: bool, event: &HostEvent) {
    let mut value = serde_json::to_value(event).expect("events serialize");
    if let HostEvent::Notice(notice) = event {
        value["message"] = notice.to_string().into();
    }
    print_line(json, value, &event.to_string());
}

fn print_line(json: bool, value: serde_json::Value, text: &str) {
    let mut out = std::io::stdout().lock();
    // Events quote plugins' words (names, reasons, a server's log lines).
    let _ = if json {
        writeln!(out, "{}", super::terminal::json_line(&value))
    } else {
        writeln!(out, "{}", super::terminal::text(text))
    };
    let _ = out.flush();
}
