//! `plughost doctor`: what this machine enforces, the folders in use, and every
//! plugin with a problem (rejected, colliding, awaiting approval, or started
//! through a slow interpreter shim), and a state folder that cannot be written.

use std::process::ExitCode;

use super::Cli;
use super::terminal::{self, say};
use plughost::sandbox::Evidence;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plugin: what the sandbox refused it recently, what it reported it
    /// was refused, and the grants that allow it.
    name: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let host = cli.host()?;
    if let Some(name) = &args.name {
        return plugin(cli, &host, name);
    }
    let d = host.doctor();
    // Each problem as one sentence, its remedy as this command line says it.
    let folders = crate::remedy::Folders::of(&host);
    let problems: Vec<String> = d
        .problems
        .iter()
        .map(|p| match &p.remedy {
            Some(remedy) => format!("{}; {}", p.text, folders.advice(remedy)),
            None => p.text.clone(),
        })
        .collect();
    if cli.json {
        let mut json = serde_json::to_value(&d).expect("a doctor report serializes");
        json["problems"] = serde_json::json!(problems);
        super::print_json(&json);
        return Ok(ExitCode::SUCCESS);
    }
    say!("plughost {}", d.version);
    let exists = if d.plugins_dir_exists {
        ""
    } else {
        " (missing: created by plughost watch/serve)"
    };
    say!("plugins folder  {}{exists}", d.plugins_dir.display());
    let writable = if d.state_dir_writable {
        ""
    } else {
        " (NOT writable: see problems)"
    };
    say!("state folder    {}{writable}", d.state_dir.display());
    say!(
        "plugins         {} loaded, {} rejected",
        d.plugins,
        d.rejected
    );
    let store = plughost::secrets::SecretStore::new(&d.state_dir);
    match store.list() {
        Ok(s) => {
            let kept = if cli.sandbox_mode() == plughost::SandboxMode::Off {
                "plugins CAN read it: the sandbox is off (--no-sandbox)"
            } else if !d.sandbox.filesystem {
                "plugins CAN read it: files are not confined here"
            } else {
                "no plugin can read it"
            };
            let in_keyring = s
                .iter()
                .filter(|s| s.kept == plughost::secrets::Kept::Keyring)
                .count();
            say!(
                "secrets         {} in {} (mode 0600, not encrypted; {kept})",
                s.len() - in_keyring,
                store.path().display()
            );
            say!(
                "                {in_keyring} sealed with the keyring's key (reading one takes this file and that key, which the keyring gives processes of yours on the session bus while it is unlocked)"
            );
            let new = match store.where_set() {
                Ok(plughost::secrets::Kept::Keyring) => {
                    "new secrets are sealed with the keyring's key (Secret Service, unlocked)".to_owned()
                }
                Ok(plughost::secrets::Kept::File) => {
                    "new secrets go to the file in the clear: no Secret Service answers on this session bus"
                        .to_owned()
                }
                Err(e) => format!(
                    "new secrets cannot go to the keyring ({e}): plughost secret set --in file keeps one in the file"
                ),
            };
            say!("                {new}");
        }
        Err(e) => say!("secrets         {e}"),
    }
    // Brokered secrets: which plugins have them, and the authority that
    // signs what those plugins see of a bound host.
    let brokering: Vec<String> = host
        .listing()
        .plugins
        .iter()
        .filter(|p| !p.secrets.is_empty())
        .map(|p| p.name.clone())
        .collect();
    if !brokering.is_empty() {
        let authority = d.state_dir.join("egress");
        let key = if authority.join("ca.key.sealed").exists() {
            "its key sealed with the keyring's"
        } else {
            "its key in ca.key, mode 0600"
        };
        say!(
            "brokered        {} (placed on requests by the egress proxy; HTTPS through the authority in {}, {key}, trusted by these plugins alone)",
            brokering.join(", "),
            authority.display()
        );
    }
    let support = &d.sandbox;
    say!("\nsandbox (Linux Landlock + seccomp, applied to plugin processes only)");
    match support.landlock_abi {
        Some(abi) => say!("  Landlock ABI {abi}"),
        None => {
            say!("  Landlock is not available: file system and TCP restrictions are NOT enforced")
        }
    }
    let yes_no = |b: bool| if b { "enforced" } else { "NOT enforced" };
    say!(
        "  file reads and writes outside the plugin's folders  {}",
        yes_no(support.filesystem)
    );
    say!(
        "  TCP connect and bind without \"network\"              {}",
        yes_no(support.network_tcp)
    );
    say!(
        "  other sockets (UDP, unix, raw) without \"network\"    {}",
        yes_no(support.network_sockets)
    );
    say!(
        "  signals to processes outside the sandbox           {}",
        yes_no(support.scopes)
    );
    use plughost::sandbox::NetLevel;
    say!(
        "  network:HOST grants                                {}",
        match support.host_grants {
            NetLevel::Namespace =>
                "held by a network namespace: the egress proxy is the one way out",
            NetLevel::ProxyPort =>
                "held to the egress proxy's port only (Landlock TCP rule + seccomp; no user namespaces)",
            _ => "NOT enforced: plugins are only pointed at the egress proxy",
        }
    );
    say!(
        "  project .git and MCP configs under write grants    {}",
        if support.projects_read_only {
            "read-only (mount namespace)"
        } else {
            "NOT protected from writes (no user namespaces)"
        }
    );
    say!(
        "  processes a plugin leaves behind                   {}",
        if support.processes_contained && support.user_namespaces {
            "killed with the call, even one that left its session, and when plughost exits (a PID namespace per process)"
        } else if support.processes_contained {
            "killed with the call, even one that left its session, and when plughost exits (plughost-init reaps and kills what the plugin leaves; Landlock keeps the plugin from signalling it)"
        } else {
            "killed with its process group when the call ends; NOT held: one that leaves its session (setsid) outlives the call, and every one outlives plughost killed (SIGKILL) mid-call"
        }
    );
    say!(
        "  mode, owner and times of files it may not write    {}",
        if support.metadata_confined {
            "unchangeable (every other mount read-only in its mount namespace)"
        } else {
            "NOT protected: Landlock has no right for chmod, chown, utime or setxattr, so a plugin can change them on any file its user owns (no user namespaces)"
        }
    );
    say!(
        "  processes and threads of all plugins together      {}",
        match support.plugin_tasks {
            Some(n) => format!("at most {n} (a fork bomb stops there)"),
            None if support.user_namespaces =>
                "NOT limited: the kernel holds no root process to RLIMIT_NPROC, and plughost cannot make a pids cgroup here".to_owned(),
            None => "NOT limited: no user namespaces".to_owned(),
        }
    );
    for note in &support.notes {
        say!("  note: {note}");
    }
    say!(
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
        say!("  {heading}:");
        let (here, absent): (Vec<_>, Vec<_>) = d
            .protected_paths
            .iter()
            .filter(|p| p.kind == kind)
            .partition(|p| kind == Kind::Trust || p.path.exists());
        for p in here {
            say!("    {}  ({})", p.path.display(), p.what);
        }
        if !absent.is_empty() {
            say!(
                "    and {} more that do not exist here (kept from being made too; --json lists them)",
                absent.len()
            );
        }
    }
    say!(
        "  also: .git folders and project MCP configurations in folders a plugin may write ({})",
        if support.projects_read_only {
            "read-only in a mount namespace"
        } else {
            "NOT protected here: no user namespaces"
        }
    );
    if let Some(list) = &d.protected_list {
        say!(
            "  add your own secrets, one path a line, in {}",
            list.display()
        );
    }
    if problems.is_empty() {
        say!("\nno plugin has a problem");
    } else {
        say!("\nproblems:");
        for p in &problems {
            say!("  {p}");
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
    let brokered = host.recent_brokered(name);
    if cli.json {
        super::print_json(&serde_json::json!({
            "plugin": name,
            "approval": p.approval,
            "notes": p.notes,
            "denials": denials,
            "brokered": brokered,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    say!("{name} {}  ({})", p.version, p.approval);
    say!(
        "  permissions: {}",
        if p.permissions.is_empty() {
            "(none)".to_owned()
        } else {
            p.permissions.join(", ")
        }
    );
    for (secret, hosts) in &p.secrets {
        say!(
            "  brokered secret {secret}: placed on its requests to {} (the plugin holds a placeholder)",
            hosts.join(", ")
        );
    }
    for note in &p.notes {
        say!("  warning: {note}");
    }
    // The sandbox's refusals (plughost saw them) apart from what the
    // plugin's own output claimed: its words are never shown as the sandbox's.
    let (recorded, reported): (Vec<_>, Vec<_>) = denials
        .iter()
        .partition(|d| d.evidence == Evidence::Recorded);
    if recorded.is_empty() {
        say!("  no recent sandbox denials");
    } else {
        say!("  recent sandbox denials, recorded by plughost (newest last):");
        for d in &recorded {
            let by = if d.tool.is_empty() {
                "egress proxy"
            } else {
                d.tool.as_str()
            };
            say!("    [{}] {by}: {}", d.time, terminal::line(&d.message));
        }
    }
    if !brokered.is_empty() {
        say!("  recent brokered requests (the secret's value is never shown; newest last):");
        for b in &brokered {
            say!(
                "    [{}] {} to {}: {}",
                b.time,
                b.secret,
                terminal::line(&b.target),
                b.outcome
            );
        }
    }
    if !reported.is_empty() {
        say!(
            "  permission errors the plugin reported on what its grants do not reach (its own words, newest last):"
        );
        for d in &reported {
            say!(
                "    [{}] {}: {}",
                d.time,
                terminal::line(&d.tool),
                terminal::line(&d.message)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
