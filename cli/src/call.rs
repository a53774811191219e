//! `plughost call TOOL [JSON | -]`: one call. The result text goes to stdout.
//! Exit 0 on success, 1 when the tool reported `is_error`, 2 on a host error
//! (its kind and message on stderr).
//!
//! Everything the plugin wrote that reaches a terminal (progress messages,
//! its stderr, errors quoting it, the result when stdout is a terminal) is
//! escaped by `terminal`; the result piped to a program is left as it is.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use plughost::approval::Approver;
use plughost::approval::TerminalApprover;
use plughost::protocol::TraceContext;
use plughost::protocol::{Invocation, Scope, Source};
use plughost::{CallError, CallOptions, PluginHost, Progress};
use serde_json::{Value, json};

use super::Cli;
use super::terminal::{self, esay};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tool to call.
    tool: String,
    /// The input as a JSON object, or `-` to read it from stdin (default: `{}`).
    input: Option<String>,
    /// The conversation or agent session the call belongs to (the request's
    /// `context.session_id`; what --session-budget counts).
    #[arg(long, value_name = "ID")]
    session_id: Option<String>,
    /// Who the call runs for (the request's `context.actor`).
    #[arg(long, value_name = "NAME")]
    actor: Option<String>,
    /// Nobody waits for the answer (`context.scope` is `background`).
    #[arg(long)]
    background: bool,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let max = cli
        .max_input_bytes
        .unwrap_or(plughost::Limits::default().max_input);
    let input = match read_input(args.input.as_deref(), max) {
        Ok(input) => input,
        Err(message) => {
            // Same shape as a host error: nothing was spawned.
            if cli.json {
                super::print_json(&json!({"error": {"kind": "invalid_args", "message": message}}));
            } else {
                eprintln!("error: invalid_args: {message}");
            }
            return Ok(ExitCode::from(2));
        }
    };
    let runtime = super::runtime();
    let traces = super::traces::Traces::from_env(cli.otlp_endpoint.as_deref(), runtime.handle())?;
    let host = cli.host_with(|b| {
        super::traces::Traces::apply(traces.as_ref(), b)
            .observer(std::sync::Arc::new(super::log::Notes))
    })?;
    let progress_on_terminal = std::io::stderr().is_terminal();
    let options = CallOptions {
        invocation: Invocation {
            source: Some(Source::Cli),
            scope: Some(if args.background {
                Scope::Background
            } else {
                Scope::Foreground
            }),
            session_id: args.session_id.clone(),
            actor: args.actor.clone(),
            // A script's trace goes on through the call, as OpenTelemetry
            // passes a trace to a child process.
            trace: std::env::var("TRACEPARENT").ok().and_then(|parent| {
                TraceContext::parse(&parent, std::env::var("TRACESTATE").ok().as_deref())
            }),
            ..Invocation::default()
        },
        on_progress: progress_on_terminal
            .then(|| Arc::new(show_progress) as Arc<dyn Fn(Progress) + Send + Sync>),
        // Asks on the terminal, even when the input comes from stdin.
        approver: TerminalApprover::available()
            .then(|| Arc::new(TerminalApprover) as Arc<dyn Approver>),
        ..CallOptions::default()
    };
    let call = host.call_with(&args.tool, input, options);
    let (result, signal) = runtime.block_on(async {
        tokio::pin!(call);
        let ended = tokio::select! {
            r = &mut call => (r, None),
            n = super::termination_signal() => {
                // Kill the plugin's process tree, then report how the call ended.
                host.shutdown();
                (call.await, Some(n))
            }
        };
        // A persistent plugin's worker lives as long as this one call.
        host.stop_workers().await;
        ended
    });
    drop(traces);
    if let Some(n) = signal {
        if let Err(e) = &result {
            esay!("error: {}: {}", e.kind(), terminal::line(&e.to_string()));
        }
        return Ok(ExitCode::from(128 + n as u8));
    }
    if progress_on_terminal {
        eprint!("\r\x1b[K");
    }
    Ok(match result {
        Ok(outcome) => {
            if !cli.json {
                for d in &outcome.denials {
                    esay!("note: {}", terminal::line(&d.to_string()));
                }
            }
            if cli.json {
                super::print_json(&outcome);
            } else {
                let result = terminal::data(&outcome.result);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(result.as_bytes());
                if !outcome.result.ends_with('\n') {
                    let _ = out.write_all(b"\n");
                }
                let _ = out.flush();
                drop(out);
                if let Some(note) = unprinted(&outcome) {
                    esay!("note: {}", terminal::line(&note));
                }
            }
            ExitCode::from(if outcome.is_error { 1 } else { 0 })
        }
        Err(err) => {
            report_error(cli, &host, &err);
            ExitCode::from(2)
        }
    })
}

/// What the text mode leaves out of a result: its attachments, or an MCP
/// server's blocks other than text. `None` when it printed everything.
fn unprinted(outcome: &plughost::ToolOutcome) -> Option<String> {
    let kinds: Vec<String> = if outcome.content.is_empty() {
        outcome
            .attachments
            .iter()
            .map(|a| match &a.mime_type {
                Some(m) => format!("{} ({m})", a.media_type),
                None => a.media_type.to_string(),
            })
            .collect()
    } else {
        outcome
            .content
            .iter()
            .filter(|c| c["type"] != "text")
            .map(|c| {
                let kind = c["type"].as_str().unwrap_or("block");
                match c["mimeType"]
                    .as_str()
                    .or(c["resource"]["mimeType"].as_str())
                {
                    Some(m) => format!("{kind} ({m})"),
                    None => kind.to_owned(),
                }
            })
            .collect()
    };
    if kinds.is_empty() {
        return None;
    }
    let n = kinds.len();
    Some(format!(
        "the result also holds {n} {} not printed here: {}; see {} with --json",
        if n == 1 { "item" } else { "items" },
        kinds.join(", "),
        if n == 1 { "it" } else { "them" },
    ))
}

fn read_input(arg: Option<&str>, max: usize) -> Result<Value, String> {
    let text = match arg {
        None => return Ok(json!({})),
        Some("-") => {
            // Read one byte past the limit: enough to know it is too large.
            let mut s = String::new();
            std::io::stdin()
                .take(max as u64 + 1)
                .read_to_string(&mut s)
                .map_err(|e| format!("cannot read the input from stdin: {e}"))?;
            if s.len() > max {
                return Err(format!(
                    "the input is larger than the limit of {max} bytes; send less, or raise the limit (--max-input-bytes)"
                ));
            }
            s
        }
        Some(s) => s.to_owned(),
    };
    serde_json::from_str(&text).map_err(|e| format!("the input is not valid JSON: {e}"))
}

fn report_error(cli: &Cli, host: &PluginHost, err: &CallError) {
    // What fixes the error, when one action does: the command that does it.
    let folders = crate::remedy::Folders::of(host);
    let remedy = err.remedy().and_then(|r| folders.command(&r));
    if cli.json {
        // With --json, only the JSON: a program reads stdout, nothing else.
        super::print_json(&json!({"error": {
            "kind": err.kind(),
            "message": err.to_string(),
            "remedy": remedy,
            "stderr_tail": err.stderr_tail(),
        }}));
        return;
    }
    // One line: a plugin's words in the message cannot start one of their own.
    let message = err.to_string();
    let message = terminal::line(&message);
    match remedy {
        Some(command) => esay!("error: {}: {message}; run: {command}", err.kind()),
        None => esay!("error: {}: {message}", err.kind()),
    }
    // invalid_output already shows the stderr tail in its message.
    if let Some(tail) = err.stderr_tail().map(str::trim).filter(|t| !t.is_empty())
        && !matches!(err, CallError::InvalidOutput { .. })
    {
        eprintln!("plugin stderr (tail):");
        let lines: Vec<&str> = tail.lines().collect();
        for line in &lines[lines.len().saturating_sub(20)..] {
            esay!("  {}", terminal::line(line));
        }
    }
}

fn show_progress(p: Progress) {
    let amount = match p.total {
        Some(t) if t > 0.0 => format!("{:.0}%", 100.0 * p.progress / t),
        _ => format!("{}", p.progress),
    };
    // plughost's own sequence clears the line; the plugin's message is text.
    let message = p.message.unwrap_or_default();
    eprint!("\r\x1b[K[{amount}] {}", terminal::line(&message));
    let _ = std::io::stderr().flush();
}
