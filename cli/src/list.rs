//! `plughost list`: plugins, their tools, rejected plugins and collisions.
//! Every line goes through `terminal`: names, descriptions and reasons are
//! the plugins' words.

use std::process::ExitCode;

use plughost::manifest::Protocol;
use plughost::report::Listing;

use super::Cli;
use super::terminal::say;

pub fn run(cli: &Cli) -> Result<ExitCode, String> {
    let host = cli.host()?;
    let listing = host.listing();
    if cli.json {
        super::print_json(&listing);
    } else {
        print_text(&listing);
    }
    Ok(ExitCode::SUCCESS)
}

/// The listing as text; `validate` prints the same for a folder.
pub fn print_text(l: &Listing) {
    say!(
        "{}: {} plugin{}, {} rejected",
        l.plugins_dir.display(),
        l.plugins.len(),
        if l.plugins.len() == 1 { "" } else { "s" },
        l.rejected.len()
    );
    for p in &l.plugins {
        let mut facts = vec![if p.permissions.is_empty() {
            "no permissions".to_owned()
        } else {
            p.permissions.join(", ")
        }];
        facts.push(p.approval.clone());
        if p.protocol == Protocol::Mcp {
            facts.push("MCP server".to_owned());
        }
        if let Some(w) = p.persistent {
            facts.push(format!(
                "persistent: up to {} worker{}, stopped after {}s idle",
                w.max_workers,
                if w.max_workers == 1 { "" } else { "s" },
                w.idle_timeout_secs
            ));
        }
        say!(
            "\n{} {}  ({})\n  {}",
            p.name,
            p.version,
            facts.join("; "),
            super::terminal::line(&p.description)
        );
        for note in &p.notes {
            say!("  warning: {note}");
        }
        for w in &p.workers {
            let state = match w.idle_secs {
                Some(s) => format!("idle {s}s"),
                None => "busy".to_owned(),
            };
            say!("  worker pid {}: {} calls, {state}", w.pid, w.calls);
        }
        let width = p.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &p.tools {
            let skipped = match &t.not_offered {
                Some(why) => format!("  [not offered: {why}]"),
                None => String::new(),
            };
            say!(
                "  - {:width$}  {}{skipped}",
                t.name,
                first_line(&t.description)
            );
        }
    }
    if !l.rejected.is_empty() {
        say!("\nrejected:");
        for r in &l.rejected {
            for line in r.to_string().lines() {
                say!("  {line}");
            }
        }
    }
    if !l.collisions.is_empty() {
        say!("\ncollisions:");
        for c in &l.collisions {
            say!("  {c}");
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}
