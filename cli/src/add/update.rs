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
use super::script::{in_data_folder, say_env, with_lines};
use super::source::Package;
use super::{UpdateArgs, confine, install_into, read_json, registry, staged, write_folder};

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
    let wanted = match manifest.get("registry").filter(|r| !r.is_null()) {
        Some(listed) => followed(name, listed, &current, args.version.as_deref())?,
        None => Package {
            version: args.version.clone(),
            ..current.clone()
        },
    };
    // The variables `add` set in server.sh (a registry server's, or asked).
    let exports = std::fs::read_to_string(dir.join("server.sh"))
        .map(|script| exports_of(&script))
        .unwrap_or_default();
    let stage = plugins.join(format!(".{name}.updating"));
    let installed = staged(&stage, |stage| {
        let mut installed = install_into(stage, &wanted, None, &confine(cli))?;
        if current.version.as_deref() == Some(installed.version.as_str()) {
            return Ok(installed);
        }
        // A file the new version keeps beside its code goes to the data
        // folder too, unless server.sh set the variable already.
        let kept: Vec<(String, String)> = installed
            .kept_beside
            .iter()
            .filter(|(var, _)| {
                !exports
                    .iter()
                    .any(|l| l.starts_with(&format!("export {var}=")))
            })
            .cloned()
            .collect();
        let mut lines = exports.clone();
        for (said, line) in in_data_folder(&kept, &given_env(&manifest), &[]) {
            say!("{said}");
            lines.push(line);
        }
        if let Some((_, script)) = installed.files.first_mut() {
            *script = with_lines(script, &lines);
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
    let given = given_env(&manifest);
    let script = installed.files.first().map_or("", |(_, s)| s.as_str());
    say_env(&installed.env_vars, &given, script);
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

/// The package the registry's server `listed` (the manifest's `registry`)
/// names at `version`, or at its latest: the same package as `current`, or
/// an error that says to add the new one.
fn followed(
    name: &str,
    listed: &serde_json::Value,
    current: &Package,
    version: Option<&str>,
) -> Result<Package, String> {
    let (Some(url), Some(server_name)) = (listed["url"].as_str(), listed["name"].as_str()) else {
        return Err(format!(
            "the \"registry\" of plugin \"{name}\" needs a url and a name; plughost validate says what is wrong"
        ));
    };
    let server = registry::server(url, server_name, version)?;
    let (spec, _) = registry::package(&server)?;
    let package = Package::parse(&spec)?;
    if package.ecosystem != current.ecosystem || package.name != current.name {
        return Err(format!(
            "{server_name} is now {spec} in {url}, not {}; add it as a new plugin: plughost add {server_name} --name NAME",
            current.name
        ));
    }
    say!(
        "{server_name} {} is {spec} (from {url})",
        server["version"].as_str().unwrap_or("?")
    );
    Ok(package)
}

/// The variables a manifest's `env` lists.
fn given_env(manifest: &serde_json::Value) -> Vec<String> {
    manifest["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// The `export NAME=VALUE` lines of a `server.sh`.
fn exports_of(script: &str) -> Vec<String> {
    script
        .lines()
        .filter(|l| l.starts_with("export "))
        .map(str::to_owned)
        .collect()
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
