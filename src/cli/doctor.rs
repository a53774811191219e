//! `plughost doctor`: what this machine enforces, the folders in use, and every
//! plugin with a problem (rejected, colliding, awaiting approval, or started
//! through a slow interpreter shim).

use std::path::Path;
use std::process::ExitCode;

use plughost::approval::ApprovalState;
use plughost::plugins::manifest::Permission;
use plughost::run::sandbox;
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

/// A note when the entrypoint's `#!` line resolves, through `PATH`, to an
/// interpreter shim (pyenv, asdf, rbenv…): a script in a `shims` folder that
/// costs tens of milliseconds per call before the real interpreter starts.
fn shim_note(entrypoint: &Path) -> Option<String> {
    let line = plughost::plugins::shebang::read_line(entrypoint)?;
    let program = plughost::plugins::shebang::interpreter(&line)?;
    let dir = entrypoint.parent()?;
    let resolved =
        plughost::plugins::shebang::resolve(&program, std::env::var_os("PATH").as_ref(), dir)?;
    let in_shims = resolved
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "shims");
    let is_script = std::fs::read(&resolved).is_ok_and(|text| text.starts_with(b"#!"));
    (in_shims && is_script).then(|| {
        format!(
            "\"#!{line}\" resolves to the shim {}, a script that adds tens of milliseconds to every call; for speed, point the #! line at the interpreter itself (at the cost of portability)",
            resolved.display()
        )
    })
}
