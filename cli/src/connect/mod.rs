//! `plughost connect CLIENT`: writes plughost's entry into an MCP client's
//! user-level configuration, so the client starts `plughost serve` (or, with
//! `--http`, reaches a running one), with a preview, a confirmation, a
//! backup and `--undo`; `connect --list` shows where plughost is connected.
//!
//! `clients.rs` knows the clients (files, formats, entries), `doc.rs` edits
//! one entry of a file through `json.rs` or `toml.rs` without touching the
//! rest, `change.rs` runs a connect or an undo, `file.rs` writes atomically
//! and keeps the backup, `preview.rs` shows the diff and asks, `target.rs`
//! says what the entry runs.

mod change;
mod clients;
mod doc;
mod entry;
mod file;
mod json;
mod list;
mod preview;

pub(crate) use preview::confirm;
mod target;
mod toml;

use std::path::PathBuf;
use std::process::ExitCode;

use super::Cli;
use clients::{Client, Env, Target};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The client whose configuration gets plughost's entry.
    #[arg(value_enum, required_unless_present = "list")]
    client: Option<Client>,
    /// Show which clients are installed and whether plughost is in their configuration.
    #[arg(long, conflicts_with_all = ["client", "undo", "http", "config", "yes", "dry_run", "profile"])]
    list: bool,
    /// Take plughost's entry out again: the file as it was before, byte for byte.
    #[arg(long, conflicts_with_all = ["http", "profile"])]
    undo: bool,
    /// The entry's name among the client's servers.
    #[arg(long, value_name = "NAME", default_value = "plughost")]
    name: String,
    /// Reach a running `plughost serve --http` at this URL (or its ADDR)
    /// instead of having the client start plughost.
    #[arg(long, value_name = "URL")]
    http: Option<String>,
    /// The bearer token file for --http (default: STATE/http-token, created
    /// as serve creates it).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// The client's configuration file, instead of its usual place.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Write without asking (for scripts).
    #[arg(long)]
    yes: bool,
    /// Show the change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// The profile the client gets (profiles/NAME.json in the configuration
    /// folder): the entry starts `plughost serve --profile NAME`.
    #[arg(long, value_name = "NAME", conflicts_with = "http")]
    profile: Option<String>,
    /// Show the bearer token in the preview instead of `***`.
    #[arg(long)]
    show_token: bool,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let env = Env::from_process();
    let Some(client) = args.client else {
        return list::run(&env, &args.name, cli.json);
    };
    client.check_name(&args.name)?;
    let file = file::resolve(
        &args
            .config
            .clone()
            .unwrap_or_else(|| client.config_file(&env)),
    );
    let mut undo_command = format!("plughost connect {} --undo", client.id());
    if args.name != "plughost" {
        undo_command.push_str(&format!(" --name {}", args.name));
    }
    if let Some(config) = &args.config {
        undo_command.push_str(&format!(" --config {}", file::resolve(config).display()));
    }
    let request = change::Request {
        client,
        file,
        name: args.name.clone(),
        yes: args.yes,
        dry_run: args.dry_run,
        show_token: args.show_token,
        undo_command,
    };
    if args.undo {
        return change::undo(&request);
    }
    let (target, token_file) = match &args.http {
        None => (target::stdio(cli, args.profile.as_deref())?, None),
        Some(url) => {
            let (target, file) = target::http(cli, url, args.token_file.as_deref())?;
            (target, Some(file))
        }
    };
    let entry = client.entry(&target)?;
    let (code, written) = change::connect(&request, &entry)?;
    let (Some(token_file), Target::Http { url, .. }) = (&token_file, &target) else {
        if written {
            println!(
                "{} starts it the next time it starts its MCP servers (restart it if it is running)",
                client.title()
            );
        }
        return Ok(code);
    };
    if client == Client::Codex {
        println!(
            "Codex sends the token from the variable {var}: set it where Codex starts, e.g. in your shell's profile:\n  export {var}=\"$(cat {})\"",
            crate::shell::quote(&token_file.to_string_lossy()),
            var = clients::CODEX_TOKEN_VAR
        );
    }
    let given = args.token_file.as_ref().map(|_| token_file.as_path());
    match target::serve_command(cli, url, given) {
        Some(serve) => println!("{} reaches it while this runs: {serve}", client.title()),
        None => println!(
            "{} reaches it while plughost serve --http runs there (token in {})",
            client.title(),
            token_file.display()
        ),
    }
    Ok(code)
}
