//! `plughost watch`: prints hot-reload events as they happen (`--json`: one
//! JSON object a line) until interrupted.

use std::io::Write;
use std::process::ExitCode;

use plughost::HostEvent;
use tokio::sync::broadcast::error::RecvError;

use super::Cli;

pub fn run(cli: &Cli) -> Result<ExitCode, String> {
    let host = cli.host()?;
    let mut events = host.events();
    let _watcher = host
        .watch()
        .map_err(|e| format!("cannot watch {}: {e}", host.plugins_dir().display()))?;
    let listing = host.listing();
    emit(
        cli.json,
        &HostEvent::Notice {
            message: format!(
                "watching {}: {} plugins loaded, {} rejected",
                host.plugins_dir().display(),
                listing.plugins.len(),
                listing.rejected.len()
            ),
        },
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
                    Err(RecvError::Lagged(n)) => emit(cli.json, &HostEvent::Notice { message: format!("{n} events were dropped; run plughost list for the current state") }),
                    Err(RecvError::Closed) => break,
                },
                _ = &mut stop => break,
            }
        }
    });
    Ok(ExitCode::SUCCESS)
}

fn emit(json: bool, event: &HostEvent) {
    let mut out = std::io::stdout().lock();
    let _ = if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(event).expect("events serialize")
        )
    } else {
        writeln!(out, "{event}")
    };
    let _ = out.flush();
}
