//! `plughost schema NAME`: prints a schema; `--write DIR` writes all of them
//! (how `schemas/` is regenerated).

use std::path::PathBuf;
use std::process::ExitCode;

use plughost::schemas::SchemaName;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which schema to print.
    #[arg(
        required_unless_present = "write",
        value_parser = crate::choice(&SchemaName::ALL, SchemaName::name)
    )]
    name: Option<SchemaName>,
    /// Write every schema into this folder instead of printing one.
    #[arg(long, value_name = "DIR")]
    write: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<ExitCode, String> {
    if let Some(dir) = &args.write {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for name in SchemaName::ALL {
            let path = dir.join(name.file_name());
            std::fs::write(&path, name.render())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if let Some(name) = args.name {
        print!("{}", name.render());
    }
    Ok(ExitCode::SUCCESS)
}
