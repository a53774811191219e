//! `plughost validate [DIR]`: checks one plugin folder (a folder holding a
//! `plugin.json`) or every plugin in a plugins folder. Exit 1 on any error.

use std::path::PathBuf;
use std::process::ExitCode;

use plughost::approval::ApprovalStore;
use plughost::plugins::catalog::{Catalog, Rejected};
use plughost::plugins::loader;
use plughost::plugins::manifest::MANIFEST_FILE;

use super::Cli;
use super::list::Listing;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plugin folder or a plugins folder (default: the plugins folder).
    dir: Option<PathBuf>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let dir = args.dir.clone().unwrap_or_else(|| cli.plugins_dir());
    let catalog = if dir.join(MANIFEST_FILE).exists() || !dir.is_dir() {
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        let result = if dir.is_dir() {
            loader::load_folder(&dir)
        } else {
            Err(loader::unreadable(
                &dir,
                &std::io::Error::other("not a folder"),
            ))
        };
        Catalog::new([(name, result)])
    } else {
        loader::scan(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?
    };
    let failed = catalog.rejected().next().is_some() || !catalog.collisions().is_empty();
    if cli.json {
        let listing = Listing::new(
            &catalog,
            dir.display().to_string(),
            &ApprovalStore::new(cli.state_dir()),
        );
        super::print_json(&serde_json::json!({ "ok": !failed, "report": listing }));
    } else {
        for p in catalog.plugins() {
            let n = p.tools.len();
            println!(
                "ok       {} {} ({n} tool{})",
                p.name(),
                p.manifest.version,
                if n == 1 { "" } else { "s" }
            );
        }
        for r in catalog.rejected() {
            print_rejected(r);
        }
        for c in catalog.collisions() {
            println!("error    {c}");
        }
        if catalog.plugins().next().is_none() && catalog.rejected().next().is_none() {
            println!("no plugin folders in {}", dir.display());
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_rejected(r: &Rejected) {
    println!("invalid  {}", r.folder);
    for line in r.to_string().lines() {
        println!("         {line}");
    }
}
