//! `plughost new NAME --lang bash|python|node|rust [--persistent]`: scaffolds
//! a working plugin and says how to try it. `plughost new NAME --mcp --
//! COMMAND ARGS…` wraps an installed MCP server instead.

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
    /// Wrap an installed MCP server: its command and arguments follow `--`
    /// (plughost new files --mcp -- node /opt/mcp-files/dist/index.js ~/projects).
    #[arg(long, conflicts_with_all = ["lang", "persistent"])]
    mcp: bool,
    /// The MCP server's command and arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let parent = args.dir.clone().unwrap_or_else(|| cli.plugins_dir());
    if args.mcp {
        return run_mcp(cli, args, &parent);
    }
    if !args.command.is_empty() {
        return Err("a command after -- is for wrapping an MCP server: add --mcp".into());
    }
    let created = scaffold::create(&parent, &args.name, args.lang, args.persistent)?;
    let dir = created.dir.display();
    let tool = scaffold::tool_name(&args.name);
    println!("created {dir}");
    match args.lang {
        Lang::Python => println!("{}", scaffold::precompile_python(&created.dir)),
        Lang::Rust => {
            let sdk = scaffold::rust_sdk_dir();
            if !sdk.join("Cargo.toml").is_file() {
                println!(
                    "note: the Rust SDK is not at {} any more: point the plughost-plugin path in Cargo.toml at a plughost checkout's sdk/rust",
                    sdk.display()
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

fn run_mcp(cli: &Cli, args: &Args, parent: &std::path::Path) -> Result<ExitCode, String> {
    let created = scaffold::mcp::create(parent, &args.name, &args.command)?;
    let dir = created.dir.display();
    println!(
        "created {dir}: server.sh runs {}",
        created.command.display()
    );
    for (grant, why) in &created.grants {
        println!("  granted {grant} ({why})");
    }
    println!(
        "the sandbox keeps the server to its own folder, the system and what plugin.json grants:
         add filesystem:write:PATH for a folder it should change, network if it needs one."
    );
    let name = &args.name;
    // A folder given with --dir is the plugins folder to use.
    let plugins = args.dir.as_deref().or(cli.plugins_dir.as_deref());
    let approve = cli.command_line_in(plugins, &format!("approve {name}"));
    println!(
        "
next, approve it: that starts the server once, lists its tools and pins them:"
    );
    println!("  {approve}");
    println!(
        "then its tools are offered as {}_TOOL:
  plughost list",
        name.replace('-', "_")
    );
    Ok(ExitCode::SUCCESS)
}
