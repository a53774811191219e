//! `plughost doctor`: what this machine enforces, the folders in use, and every
//! plugin with a problem (rejected, colliding, awaiting approval, or started
//! through a slow interpreter shim).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use plughost::approval::ApprovalState;
use plughost::manifest::Permission;
use plughost::sandbox;
use serde_json::json;

use super::Cli;

pub fn run(cli: &Cli) -> Result<ExitCode, String> {
    let host = cli.host()?;
    let catalog = host.catalog();
    let support = sandbox::support();
    let approvals = host.approvals().load();

    let mut problems: Vec<String> = Vec::new();
    for r in catalog.rejected() {
        problems.extend(r.to_string().lines().map(|l| format!("rejected: {l}")));
    }
    for c in catalog.collisions() {
        problems.push(format!("collision: {c}"));
    }
    for p in catalog.plugins() {
        if let Ok(a) = &approvals {
            let state = a.state(&p.manifest);
            if !matches!(state, ApprovalState::Automatic | ApprovalState::Approved) {
                problems.push(format!(
                    "{}: {}; run: plughost approve {}",
                    p.name(),
                    state.label(),
                    p.name()
                ));
            }
        }
        if let Some(note) = shim_note(&p.entrypoint) {
            problems.push(format!("{}: {note}", p.name()));
        }
    }
    if let Err(e) = &approvals {
        problems.push(format!("approvals: {e}"));
    }

    let advisory: Vec<&str> = [
        Permission::ShellExec,
        Permission::Clipboard,
        Permission::Notifications,
    ]
    .iter()
    .map(|p| p.as_str())
    .collect();
    if cli.json {
        super::print_json(&json!({
            "version": env!("CARGO_PKG_VERSION"),
            "plugins_dir": host.plugins_dir(),
            "plugins_dir_exists": host.plugins_dir().is_dir(),
            "state_dir": host.state_dir(),
            "plugins": catalog.plugins().count(),
            "rejected": catalog.rejected().count(),
            "sandbox": support,
            "advisory_permissions": advisory,
            "problems": problems,
        }));
        return Ok(ExitCode::SUCCESS);
    }

    println!("plughost {}", env!("CARGO_PKG_VERSION"));
    let exists = if host.plugins_dir().is_dir() {
        ""
    } else {
        " (missing: created by plughost watch/serve)"
    };
    println!("plugins folder  {}{exists}", host.plugins_dir().display());
    println!("state folder    {}", host.state_dir().display());
    println!(
        "plugins         {} loaded, {} rejected",
        catalog.plugins().count(),
        catalog.rejected().count()
    );
    println!("\nsandbox (Linux Landlock + seccomp, applied to plugin processes only)");
    match support.landlock_abi {
        Some(abi) => println!("  Landlock ABI {abi}"),
        None => println!(
            "  Landlock is not available: file system and TCP restrictions are NOT enforced"
        ),
    }
    let yes_no = |b: bool| if b { "enforced" } else { "NOT enforced" };
    println!(
        "  file reads and writes outside the plugin's folders  {}",
        yes_no(support.filesystem)
    );
    println!(
        "  TCP connect and bind without \"network\"              {}",
        yes_no(support.network_tcp)
    );
    println!(
        "  other sockets (UDP, unix, raw) without \"network\"    {}",
        yes_no(support.network_sockets)
    );
    println!(
        "  signals to processes outside the sandbox           {}",
        yes_no(support.scopes)
    );
    println!("  advisory only: {}", advisory.join(", "));
    for note in &support.notes {
        println!("  note: {note}");
    }
    if problems.is_empty() {
        println!("\nno plugin has a problem");
    } else {
        println!("\nproblems:");
        for p in &problems {
            println!("  {p}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A note when the entrypoint's `#!/usr/bin/env X` resolves to an interpreter
/// shim (pyenv, asdf, …): a shell script that costs tens of milliseconds per call.
fn shim_note(entrypoint: &Path) -> Option<String> {
    let head = std::fs::read(entrypoint).ok()?;
    let first = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(first).ok()?.strip_prefix("#!")?.trim();
    let mut words = line.split_whitespace();
    let program = match words.next()? {
        env if env.ends_with("/env") => words.find(|w| !w.starts_with('-'))?,
        _ => return None,
    };
    let resolved = which(program)?;
    let text = std::fs::read(&resolved).ok()?;
    let is_script = text.starts_with(b"#!");
    let looks_like_shim = resolved.components().any(|c| c.as_os_str() == "shims")
        || String::from_utf8_lossy(&text[..text.len().min(2048)]).contains("exec");
    (is_script && looks_like_shim).then(|| {
        format!(
            "\"#!/usr/bin/env {program}\" resolves to the shim {}, a script that adds tens of milliseconds to every call; point the #! line at the interpreter itself",
            resolved.display()
        )
    })
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}
