//! `plughost new NAME --lang bash|python|node`: scaffolds a working plugin.

use std::path::PathBuf;
use std::process::ExitCode;

use super::scaffold::{self, Lang};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin's name (also its folder's name).
    name: String,
    /// The entrypoint's language.
    #[arg(long, value_enum, default_value = "bash")]
    lang: Lang,
    /// Where to create the folder (default: the plugins folder).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let parent = args.dir.clone().unwrap_or_else(|| cli.plugins_dir());
    let dir = scaffold::create(&parent, &args.name, args.lang)?;
    let tool = scaffold::tool_name(&args.name);
    let entry = std::fs::read_dir(&dir)
        .ok()
        .and_then(|mut it| {
            it.find_map(|e| {
                e.ok()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("main."))
            })
        })
        .unwrap_or_default();
    println!("created {}", dir.display());
    println!("\ntry it by hand:");
    println!(
        "  cd {} && echo '{{\"tool\":\"{tool}\",\"input\":{{\"text\":\"hi\"}},\"context\":{{}}}}' | ./{entry}",
        dir.display()
    );
    println!("then through plughost:");
    println!("  plughost validate {}", dir.display());
    println!(
        "  plughost --plugins-dir {} call {tool} '{{\"text\":\"hi\",\"shout\":true}}'",
        parent.display()
    );
    Ok(ExitCode::SUCCESS)
}
