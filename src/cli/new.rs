//! `plughost new NAME --lang bash|python|node|rust [--persistent]`: scaffolds
//! a working plugin and says how to try it.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Cli;
use super::scaffold::{self, Lang};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin's name (also its folder's name).
    name: String,
    /// The entrypoint's language: python, node and rust use the plugin SDKs.
    #[arg(long, value_enum, default_value = "bash")]
    lang: Lang,
    /// Make it a long-lived worker that answers one request per line
    /// (`"persistent": {}` in plugin.json).
    #[arg(long)]
    persistent: bool,
    /// Where to create the folder (default: the plugins folder).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let parent = args.dir.clone().unwrap_or_else(|| cli.plugins_dir());
    let created = scaffold::create(&parent, &args.name, args.lang, args.persistent)?;
    let dir = created.dir.display();
    let tool = scaffold::tool_name(&args.name);
    println!("created {dir}");
    match args.lang {
        Lang::Python => println!("{}", scaffold::precompile_python(&created.dir)),
        Lang::Rust => {
            if !std::path::Path::new(scaffold::RUST_SDK_DIR)
                .join("Cargo.toml")
                .is_file()
            {
                println!(
                    "note: the Rust SDK is not at {} any more: point the plughost-plugin path in Cargo.toml at a plughost checkout's sdk/rust",
                    scaffold::RUST_SDK_DIR
                );
            }
            println!("\nbuild it first (cargo, release; about a minute the first time):");
            println!("  cd {dir} && ./build.sh");
        }
        Lang::Bash | Lang::Node => {}
    }
    println!("\ntry it by hand:");
    println!(
        "  cd {dir} && echo '{{\"tool\":\"{tool}\",\"input\":{{\"text\":\"hi\"}},\"context\":{{}}}}' | ./{}",
        created.entrypoint
    );
    println!("then through plughost:");
    println!("  plughost validate {dir}");
    println!(
        "  plughost --plugins-dir {} call {tool} '{{\"text\":\"hi\",\"shout\":true}}'",
        parent.display()
    );
    if args.lang != Lang::Bash {
        println!("after changing a tool, print plugin.json's new \"tools\" and check them:");
        println!("  ./{} --manifest-tools", created.entrypoint);
        println!("  plughost validate --with-code {dir}");
    }
    Ok(ExitCode::SUCCESS)
}
