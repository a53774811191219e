//! `plughost validate [DIR] [--with-code]`: checks one plugin folder (a folder
//! holding a `plugin.json`) or every plugin in a plugins folder. Exit 1 on any
//! error.

use std::path::PathBuf;
use std::process::ExitCode;

use plughost::manifest::MANIFEST_FILE;

use super::terminal::say;
use super::{Cli, with_code};

/// Checks manifests without running any plugin code, unless --with-code.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plugin folder, a plugins folder, or the name of a plugin in the
    /// plugins folder (default: the whole plugins folder).
    dir: Option<PathBuf>,
    /// Also run each SDK-based plugin's entrypoint with --manifest-tools and
    /// report where plugin.json's tools differ from its code's.
    ///
    /// A plugin is SDK-based when its folder holds plughost_plugin.py or
    /// plughost_plugin.mjs, or a Cargo.toml depending on plughost-plugin. The
    /// entrypoint runs in the plugin folder with stdin closed, a 10 s limit,
    /// only the environment allowlist, and confined as a plugin granted
    /// nothing (unless --no-sandbox). Without this
    /// flag validate runs no plugin code at all, so checking a folder you were
    /// sent is always safe.
    #[arg(long)]
    with_code: bool,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let dir = match &args.dir {
        None => cli.plugins_dir(),
        // `plughost validate weather` from anywhere: the plugin of that name.
        Some(d) if !d.exists() && d.components().count() == 1 => {
            let named = cli.plugins_dir().join(d);
            if named.exists() { named } else { d.clone() }
        }
        Some(d) => d.clone(),
    };
    let host = cli.host()?;
    let validation = host.validate(&dir);
    // (plugin, differences) for every SDK-based plugin that loaded.
    let code: Vec<(String, Vec<String>)> = if args.with_code {
        validation
            .report
            .plugins
            .iter()
            .filter(|p| with_code::uses_sdk(&p.dir))
            .map(|p| (p.name.clone(), with_code::check(&host, &p.dir)))
            .collect()
    } else {
        Vec::new()
    };
    let code_ok = code.iter().all(|(_, errors)| errors.is_empty());
    if cli.json {
        let mut value = serde_json::to_value(&validation).expect("a validation serializes");
        if args.with_code {
            value["ok"] = (validation.ok && code_ok).into();
            value["code"] = code
                .iter()
                .map(|(plugin, errors)| serde_json::json!({"plugin": plugin, "errors": errors}))
                .collect();
        }
        super::print_json(&value);
    } else if args.dir.is_some()
        && validation.report.plugins.is_empty()
        && validation.report.rejected.len() == 1
        && dir.is_dir()
        && !dir.join(MANIFEST_FILE).exists()
    {
        say!(
            "{} has no {MANIFEST_FILE}: a plugin folder needs one (plughost new NAME creates a plugin)",
            dir.display()
        );
    } else {
        let report = &validation.report;
        for p in &report.plugins {
            let n = p.tools.len();
            say!(
                "ok       {} {} ({n} tool{})",
                p.name,
                p.version,
                if n == 1 { "" } else { "s" }
            );
            for note in &p.notes {
                say!("warning  {}: {note}", p.name);
            }
        }
        for r in &report.rejected {
            say!("invalid  {}", r.folder);
            for line in r.to_string().lines() {
                say!("         {line}");
            }
        }
        for c in &report.collisions {
            say!("error    {c}");
        }
        if report.plugins.is_empty() && report.rejected.is_empty() {
            say!("no plugin folders in {}", dir.display());
        }
        print_code(args.with_code, &code);
    }
    Ok(if validation.ok && code_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The `--with-code` lines: one per SDK-based plugin, each difference below it.
fn print_code(with_code: bool, code: &[(String, Vec<String>)]) {
    if with_code && code.is_empty() {
        say!("code     no SDK-based plugins to compare with their code");
    }
    for (plugin, errors) in code {
        if errors.is_empty() {
            say!("code     {plugin}: {MANIFEST_FILE} matches the tools in its code");
        } else {
            say!("invalid  {plugin}: {MANIFEST_FILE} differs from its code");
            for e in errors {
                say!("         {e}");
            }
        }
    }
}
