//! `plughost validate [DIR]`: checks one plugin folder (a folder holding a
//! `plugin.json`) or every plugin in a plugins folder. Exit 1 on any error.

use std::path::PathBuf;
use std::process::ExitCode;

use plughost::manifest::MANIFEST_FILE;

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plugin folder, a plugins folder, or the name of a plugin in the
    /// plugins folder (default: the whole plugins folder).
    dir: Option<PathBuf>,
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
    if cli.json {
        super::print_json(&validation);
    } else if args.dir.is_some()
        && validation.report.plugins.is_empty()
        && validation.report.rejected.len() == 1
        && dir.is_dir()
        && !dir.join(MANIFEST_FILE).exists()
    {
        println!(
            "{} has no {MANIFEST_FILE}: a plugin folder needs one (plughost new NAME creates a plugin)",
            dir.display()
        );
    } else {
        let report = &validation.report;
        for p in &report.plugins {
            let n = p.tools.len();
            println!(
                "ok       {} {} ({n} tool{})",
                p.name,
                p.version,
                if n == 1 { "" } else { "s" }
            );
            for note in &p.notes {
                println!("warning  {}: {note}", p.name);
            }
        }
        for r in &report.rejected {
            println!("invalid  {}", r.folder);
            for line in r.to_string().lines() {
                println!("         {line}");
            }
        }
        for c in &report.collisions {
            println!("error    {c}");
        }
        if report.plugins.is_empty() && report.rejected.is_empty() {
            println!("no plugin folders in {}", dir.display());
        }
    }
    Ok(if validation.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
