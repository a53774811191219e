//! An npm package's MCP server, installed into the plugin folder with npm
//! (`node_modules/`), started with node on the file its `bin` names.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::confined::{self, Confine};
use super::install::{self, Installed};
use super::source::Package;
use crate::shell;

/// Installs `package` into `stage` and writes nothing else; `bin` chooses
/// among several commands.
pub fn install(
    stage: &Path,
    package: &Package,
    bin: Option<&str>,
    confine: &Confine,
) -> Result<Installed, String> {
    let npm = install::on_path("npm")
        .ok_or("npm is not on PATH: install Node.js with npm to add npm packages".to_owned())?;
    let node = install::on_path("node")
        .ok_or("node is not on PATH: install Node.js to run npm packages".to_owned())?;
    let mut cmd = Command::new(&npm);
    // Install scripts run, in the sandbox (`confined.rs`); without one
    // (`--no-sandbox`) they would run unconfined, so they do not.
    cmd.args(["install", "--prefix", &stage.to_string_lossy()]);
    if confine.sandbox == plughost::SandboxMode::Off {
        cmd.arg("--ignore-scripts");
    }
    cmd.args([
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--loglevel=error",
        &package.requirement(),
    ]);
    let confine = configured(&mut cmd, &npm, &node, confine);
    confined::run(
        cmd,
        stage,
        &format!("npm:{}", package.requirement()),
        &confine,
    )?;
    let dir = stage.join("node_modules").join(&package.name);
    let text = std::fs::read_to_string(dir.join("package.json"))
        .map_err(|e| format!("npm installed {} without a package.json: {e}", package.name))?;
    let meta: Value = serde_json::from_str(&text)
        .map_err(|e| format!("the package.json of {} is not JSON: {e}", package.name))?;
    let version = meta["version"]
        .as_str()
        .ok_or_else(|| format!("the package.json of {} has no version", package.name))?
        .to_owned();
    let (command, file) = choose_bin(&package.name, &meta["bin"], bin)?;
    let file = file.trim_start_matches("./");
    let target = format!("\"$(dirname \"$0\")/node_modules/{}/{file}\"", package.name);
    let runs_on_node = [".js", ".mjs", ".cjs"].iter().any(|x| file.ends_with(x))
        || std::fs::read_to_string(dir.join(file)).is_ok_and(|t| {
            t.lines()
                .next()
                .is_some_and(|l| l.starts_with("#!") && l.contains("node"))
        });
    let exec = if runs_on_node {
        format!(
            "exec {} {target} \"$@\"",
            shell::quote(&node.to_string_lossy())
        )
    } else {
        format!("exec {target} \"$@\"")
    };
    let script = format!(
        "#!/bin/sh\n\
         # The MCP server of the npm package {} {version} (its command {command}),\n\
         # installed in node_modules/ by plughost add; plughost update installs a newer one.\n\
         {exec}\n",
        package.name
    );
    let mut env_vars = Vec::new();
    let mut kept_beside = Vec::new();
    for f in install::source_files(&dir, &["js", "mjs", "cjs"], &["node_modules"], 2000) {
        if let Ok(text) = std::fs::read_to_string(&f) {
            let mut here = Vec::new();
            install::env_reads(
                &text,
                &["process.env.", "process.env[", "process.env?.["],
                &mut here,
            );
            install::kept_beside(
                &text,
                &here,
                &["import.meta.url", "__dirname"],
                &mut kept_beside,
            );
            env_vars.extend(
                here.into_iter()
                    .filter(|v| !env_vars.contains(v))
                    .collect::<Vec<_>>(),
            );
        }
    }
    Ok(Installed {
        version,
        description: meta["description"].as_str().map(str::to_owned),
        program: node,
        files: vec![("server.sh", script)],
        env_vars,
        kept_beside,
    })
}

/// The command to run: the one `bin` names, the only one, or the one named
/// like the package; its file in the package.
fn choose_bin(
    package: &str,
    bins: &Value,
    wanted: Option<&str>,
) -> Result<(String, String), String> {
    let unscoped = package.rsplit('/').next().unwrap_or(package);
    let all: Vec<(String, String)> = match bins {
        Value::String(file) => vec![(unscoped.to_owned(), file.clone())],
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
        _ => Vec::new(),
    };
    if all.is_empty() {
        return Err(format!(
            "the npm package {package} has no command (\"bin\" in its package.json) to start a server with"
        ));
    }
    let names = || {
        all.iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found = match wanted {
        Some(w) => all.iter().find(|(n, _)| n == w).ok_or_else(|| {
            format!(
                "the npm package {package} has no command \"{w}\"; it has: {}",
                names()
            )
        })?,
        None if all.len() == 1 => &all[0],
        None => all
            .iter()
            .find(|(n, _)| n == unscoped || n.ends_with(unscoped))
            .ok_or_else(|| {
                format!(
                    "the npm package {package} has several commands ({}); choose one with --bin",
                    names()
                )
            })?,
    };
    Ok(found.clone())
}

/// Installs the Node dependencies of the `package.json` files a package of
/// another ecosystem ships in `lib` (a Python package with a Node part, as
/// ReadabiliPy is): such a package would run `npm install` into its own
/// folder the first time it is used, and the plugin folder is read-only
/// then. Done now, in the sandbox, like any install; nothing when npm is
/// missing (the package then does without, as it would).
pub fn install_bundled(stage: &Path, lib: &Path, confine: &Confine) -> Result<(), String> {
    let (Some(npm), Some(node)) = (install::on_path("npm"), install::on_path("node")) else {
        return Ok(());
    };
    for manifest in bundled_manifests(lib, 0) {
        let dir = manifest.parent().expect("a file in a folder");
        let mut cmd = Command::new(&npm);
        cmd.args([
            "install",
            "--omit=dev",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]);
        let confine = configured(&mut cmd, &npm, &node, confine);
        let what = format!(
            "the Node dependencies in {}",
            dir.strip_prefix(stage).unwrap_or(dir).display()
        );
        println!("installing {what}");
        confined::run_in(cmd, stage, dir, &what, &confine)?;
    }
    Ok(())
}

/// The `package.json` files under `dir` (four levels at most, not in
/// `node_modules`) that list dependencies not installed beside them.
fn bundled_manifests(dir: &Path, depth: usize) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() && depth < 4 && e.file_name() != "node_modules" {
            found.extend(bundled_manifests(&path, depth + 1));
        } else if kind.is_file() && e.file_name() == "package.json" && depth > 0 {
            let wants = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|m| m["dependencies"].as_object().is_some_and(|d| !d.is_empty()));
            if wants && !dir.join("node_modules").exists() {
                found.push(path);
            }
        }
    }
    found
}

/// `cmd` (an npm install) given the registry and certificate authority the
/// user's npm configuration names (the installer does not read the user's
/// ~/.npmrc), and the confinement that lets it reach that registry and read
/// npm and node. npm's configuration is read outside the sandbox: that runs
/// no package code.
fn configured(cmd: &mut Command, npm: &Path, node: &Path, confine: &Confine) -> Confine {
    let registry = npm_config(npm, "registry")
        .filter(|s| s.contains("://"))
        .unwrap_or_else(|| "https://registry.npmjs.org/".to_owned());
    let mut confine = confine.clone();
    confine.hosts =
        vec![confined::host_of(&registry).unwrap_or_else(|| "registry.npmjs.org:443".to_owned())];
    confine.reads.extend(super::reads_for(&[npm, node]));
    cmd.env("npm_config_registry", registry);
    if let Some(cafile) = npm_config(npm, "cafile") {
        cmd.env("npm_config_cafile", cafile);
    }
    confine
}

/// npm's setting `key`, when it has one.
fn npm_config(npm: &Path, key: &str) -> Option<String> {
    Command::new(npm)
        .args(["config", "get", key])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty() && s != "null" && s != "undefined")
}
