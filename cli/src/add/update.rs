//! `plughost update NAME`: another version of an added package, installed
//! the same way and swapped in; changed tools are withheld until approved.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use plughost::approval::ApprovalState;
use plughost::manifest::MANIFEST_FILE;
use serde_json::json;

use super::super::Cli;
use super::super::terminal::say;
use super::source::Package;
use super::{UpdateArgs, confine, install_into, read_json, say_env, staged, write_folder};

pub fn update(cli: &Cli, args: &UpdateArgs) -> Result<ExitCode, String> {
    let plugins = cli.plugins_dir();
    let name = &args.name;
    let dir = plugins.join(name);
    let path = dir.join(MANIFEST_FILE);
    if !path.is_file() {
        return Err(format!(
            "no plugin named \"{name}\" in {}",
            plugins.display()
        ));
    }
    let mut manifest = read_json(&path)?;
    let Some(recorded) = manifest["source"].as_str() else {
        return Err(format!(
            "plugin \"{name}\" was not added from a package (its {MANIFEST_FILE} has no \"source\"); plughost update works on plugins made by plughost add"
        ));
    };
    let current = Package::parse(recorded)
        .map_err(|e| format!("the \"source\" of plugin \"{name}\" cannot be read: {e}"))?;
    let wanted = Package {
        version: args.version.clone(),
        ..current.clone()
    };
    let stage = plugins.join(format!(".{name}.updating"));
    let installed = staged(&stage, |stage| {
        let installed = install_into(stage, &wanted, None, &confine(cli))?;
        if current.version.as_deref() == Some(installed.version.as_str()) {
            return Ok(installed);
        }
        manifest["version"] = json!(installed.version);
        manifest["source"] = json!(current.at(&installed.version).to_string());
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes") + "\n";
        write_folder(stage, &installed, &text)?;
        keep_own_files(&dir, stage)?;
        Ok(installed)
    })?;
    if current.version.as_deref() == Some(installed.version.as_str()) {
        let _ = std::fs::remove_dir_all(&stage);
        say!(
            "{name} is at {} already: nothing to update",
            installed.version
        );
        return Ok(ExitCode::SUCCESS);
    }
    swap(&dir, &stage, &plugins.join(format!(".{name}.old")))?;
    say!(
        "updated {name}: {} {} -> {}",
        current.name,
        current.version.as_deref().unwrap_or("?"),
        installed.version
    );
    say_env(&installed.env_vars);
    let host = cli.host_with(|b| b.observer(Arc::new(super::super::log::Notes)))?;
    let runtime = super::super::runtime();
    if let Err(e) = runtime.block_on(host.list_server(name)) {
        say!("its tools are listed when it starts: {e}");
        return Ok(ExitCode::SUCCESS);
    }
    match host.approval_state(name) {
        Some(Ok(ApprovalState::ToolsChanged { tools })) => {
            say!("withheld until approved again ({} changed):", tools.len());
            for t in &tools {
                say!("  {}: {}", t.tool, t.change);
            }
            say!(
                "review them and run: {}",
                cli.command_line(&format!("approve {name}"))
            );
        }
        Some(Ok(ApprovalState::Approved)) => say!("its tools and prompts are unchanged"),
        Some(Ok(state)) if !state.allows_call() => say!(
            "it is not approved: {}; run: {}",
            state.label(),
            cli.command_line(&format!("approve {name}"))
        ),
        _ => {}
    }
    runtime.block_on(host.stop_workers());
    Ok(ExitCode::SUCCESS)
}

/// Moves the files a user added to the old folder into the new one: all but
/// what an install writes.
fn keep_own_files(old: &Path, new: &Path) -> Result<(), String> {
    const OURS: &[&str] = &[
        "node_modules",
        "package.json",
        "package-lock.json",
        "lib",
        "server.sh",
        "server.py",
        MANIFEST_FILE,
    ];
    let entries =
        std::fs::read_dir(old).map_err(|e| format!("cannot read {}: {e}", old.display()))?;
    for e in entries.flatten() {
        let file = e.file_name();
        if OURS.iter().any(|o| file == *o) {
            continue;
        }
        std::fs::rename(e.path(), new.join(&file))
            .map_err(|err| format!("cannot keep {}: {err}", e.path().display()))?;
    }
    Ok(())
}

/// Puts `new` in the place of `dir`, through `old`.
fn swap(dir: &Path, new: &Path, old: &Path) -> Result<(), String> {
    if old.exists() {
        let _ = std::fs::remove_dir_all(old);
    }
    std::fs::rename(dir, old).map_err(|e| format!("cannot move {} aside: {e}", dir.display()))?;
    if let Err(e) = std::fs::rename(new, dir) {
        let _ = std::fs::rename(old, dir);
        return Err(format!(
            "cannot move the new install into {}: {e}",
            dir.display()
        ));
    }
    let _ = std::fs::remove_dir_all(old);
    Ok(())
}
