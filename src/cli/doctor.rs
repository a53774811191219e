//! `plughost doctor`: what this machine enforces, the folders in use, and every
//! plugin with a problem (rejected, colliding, awaiting approval, or started
//! through a slow interpreter shim), and a state folder that cannot be written.

use std::process::ExitCode;

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plugin: what the sandbox refused it recently, and the grants that allow it.
    name: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let host = cli.host()?;
    if let Some(name) = &args.name {
        return plugin(cli, &host, name);
    }
    let d = host.doctor();
    if cli.json {
        super::print_json(&d);
        return Ok(ExitCode::SUCCESS);
    }
    println!("plughost {}", d.version);
    let exists = if d.plugins_dir_exists {
        ""
    } else {
        " (missing: created by plughost watch/serve)"
    };
    println!("plugins folder  {}{exists}", d.plugins_dir.display());
    let writable = if d.state_dir_writable {
        ""
    } else {
        " (NOT writable: see problems)"
    };
    println!("state folder    {}{writable}", d.state_dir.display());
    println!(
        "plugins         {} loaded, {} rejected",
        d.plugins, d.rejected
    );
    let support = &d.sandbox;
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
    use plughost::sandbox::NetLevel;
    println!(
        "  network:HOST grants                                {}",
        match support.host_grants {
            NetLevel::Namespace =>
                "held by a network namespace: the egress proxy is the one way out",
            NetLevel::ProxyPort =>
                "held to the egress proxy's port only (Landlock TCP rule + seccomp; no user namespaces)",
            _ => "NOT enforced: plugins are only pointed at the egress proxy",
        }
    );
    println!(
        "  project .git/hooks and MCP configs under write grants  {}",
        if support.projects_read_only {
            "read-only (mount namespace)"
        } else {
            "NOT protected from writes (no user namespaces)"
        }
    );
    for note in &support.notes {
        println!("  note: {note}");
    }
    println!(
        "\nprotected paths ({}): no grant reaches them unless it names them",
        match d.protected_by {
            "landlock" if support.user_namespaces =>
                "kept out by Landlock; in a crowded folder, from writes by a read-only mount",
            "landlock" => "kept out by Landlock",
            _ => "NOT enforced: no Landlock here",
        }
    );
    use plughost::protect::Kind;
    for (kind, heading) in [
        (Kind::Secret, "secrets (neither read nor written)"),
        (Kind::RunsLater, "run later (never written)"),
        (Kind::Trust, "plughost's own (whatever a grant says)"),
    ] {
        println!("  {heading}:");
        let (here, absent): (Vec<_>, Vec<_>) = d
            .protected_paths
            .iter()
            .filter(|p| p.kind == kind)
            .partition(|p| kind == Kind::Trust || p.path.exists());
        for p in here {
            println!("    {}  ({})", p.path.display(), p.what);
        }
        if !absent.is_empty() {
            println!(
                "    and {} more that do not exist here (kept from being made too; --json lists them)",
                absent.len()
            );
        }
    }
    println!(
        "  also: .git/hooks and project MCP configurations in folders a plugin may write ({})",
        if support.projects_read_only {
            "read-only in a mount namespace"
        } else {
            "NOT protected here: no user namespaces"
        }
    );
    if let Some(list) = &d.protected_list {
        println!(
            "  add your own secrets, one path a line, in {}",
            list.display()
        );
    }
    if d.problems.is_empty() {
        println!("\nno plugin has a problem");
    } else {
        println!("\nproblems:");
        for p in &d.problems {
            println!("  {p}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `plughost doctor NAME`: the plugin's problems and its recent denials.
fn plugin(cli: &Cli, host: &plughost::PluginHost, name: &str) -> Result<ExitCode, String> {
    let listing = host.listing();
    let Some(p) = listing.plugins.iter().find(|p| p.name == name) else {
        return Err(format!(
            "no plugin named \"{name}\" in {}",
            host.plugins_dir().display()
        ));
    };
    let denials = host.recent_denials(name);
    if cli.json {
        super::print_json(&serde_json::json!({
            "plugin": name,
            "approval": p.approval,
            "notes": p.notes,
            "denials": denials,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    println!("{name} {}  ({})", p.version, p.approval);
    println!(
        "  permissions: {}",
        if p.permissions.is_empty() {
            "(none)".to_owned()
        } else {
            p.permissions.join(", ")
        }
    );
    for note in &p.notes {
        println!("  warning: {note}");
    }
    if denials.is_empty() {
        println!("  no recent sandbox denials");
    } else {
        println!("  recent sandbox denials (newest last):");
        for d in &denials {
            let by = if d.tool.is_empty() {
                "egress proxy"
            } else {
                d.tool.as_str()
            };
            println!("    [{}] {by}: {}", d.time, d.message);
        }
    }
    Ok(ExitCode::SUCCESS)
}
