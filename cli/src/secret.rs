//! `plughost secret set NAME [--plugin P]…`, `secret list`, `secret rm NAME`:
//! the secret store (`plughost::secrets`). A value is read from the terminal
//! without echo, or from stdin when it is not a terminal; never from an
//! argument, which other users' `ps` and the shell's history would show.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use plughost::secrets::{Kept, MAX_VALUE_BYTES, SecretStore};

use super::Cli;
use super::terminal::say;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SecretCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SecretCommand {
    /// Set a secret: its value is asked on the terminal (no echo), or read
    /// from stdin.
    Set {
        /// Its name: the environment variable a plugin lists to get it.
        name: String,
        /// A plugin it reaches (repeatable); none: every plugin that lists it.
        #[arg(long = "plugin", value_name = "PLUGIN")]
        plugins: Vec<String>,
        /// How to keep the value in plughost's file: sealed with a key the
        /// system keyring (Secret Service) holds, or in the clear; by
        /// default sealed when a keyring answers unlocked on the session
        /// bus, else in the clear.
        #[arg(long = "in", value_name = "STORE")]
        keep_in: Option<Store>,
    },
    /// List the secrets: names and the plugins they reach, never values.
    List,
    /// Remove a secret.
    Rm {
        /// Its name.
        name: String,
    },
}

/// Where `secret set --in` keeps a value.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Store {
    /// Sealed with a key the system keyring (Secret Service) holds.
    Keyring,
    /// In the clear, in plughost's file in its state folder.
    File,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let store = SecretStore::new(cli.state_dir());
    match &args.command {
        SecretCommand::Set {
            name,
            plugins,
            keep_in,
        } => {
            let store = match keep_in {
                Some(Store::Keyring) => store.keeping_in(Kept::Keyring),
                Some(Store::File) => store.keeping_in(Kept::File),
                None => store,
            };
            // Where it goes is known before the value is asked for.
            store
                .where_set()
                .map_err(|e| format!("cannot keep {name} in the keyring: {e}; set it with --in file to keep it in plughost's file"))?;
            let value = read_value(&format!("value of {name}: "))?;
            let kept = store
                .set(name, &value, plugins)
                .map_err(|e| e.to_string())?;
            let reach = match plugins.as_slice() {
                [] => "every plugin that lists it in \"env\" or brokers it (\"secrets\"); name the plugins with --plugin to keep it to them".to_owned(),
                some => format!("plugin{} {}", plural(some.len()), some.join(", ")),
            };
            say!(
                "set {name}, for {reach}; kept in {}",
                kept_where(kept, &store)
            );
        }
        SecretCommand::List => {
            let listed = store.list().map_err(|e| e.to_string())?;
            if listed.is_empty() {
                say!("no secrets in {}", store.path().display());
            }
            // Where each is brokered: the plugins whose manifests bind it
            // to hosts (none when the plugins cannot be read).
            let listing = cli.host().map(|h| h.listing()).ok();
            for s in listed {
                let reach = match s.plugins.as_slice() {
                    [] => "every plugin that lists it or brokers it".to_owned(),
                    some => some.join(", "),
                };
                let kept = match s.kept {
                    Kept::Keyring => "sealed",
                    Kept::File => "clear",
                };
                say!("{}  {reach}  ({kept})", s.name);
                for p in listing.iter().flat_map(|l| &l.plugins) {
                    if let Some(hosts) = p.secrets.get(&s.name) {
                        say!("  brokered by {} to {}", p.name, hosts.join(", "));
                    }
                }
            }
        }
        SecretCommand::Rm { name } => {
            if !store.remove(name).map_err(|e| e.to_string())? {
                return Err(format!(
                    "no secret named {name}; plughost secret list shows them"
                ));
            }
            say!("removed {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The value: asked on the terminal without echo, or stdin whole (one
/// trailing newline dropped), at most 64 KiB.
pub fn read_value(prompt: &str) -> Result<String, String> {
    let stdin = std::io::stdin();
    let value = if stdin.is_terminal() {
        rpassword::prompt_password(prompt).map_err(|e| format!("cannot read the value: {e}"))?
    } else {
        let mut bytes = Vec::new();
        stdin
            .lock()
            .take(MAX_VALUE_BYTES as u64 + 2)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the value from stdin: {e}"))?;
        let mut text = String::from_utf8(bytes)
            .map_err(|_| "the value on stdin is not UTF-8 text".to_owned())?;
        if text.ends_with('\n') {
            text.pop();
            if text.ends_with('\r') {
                text.pop();
            }
        }
        text
    };
    Ok(value)
}

/// Where a value is, in words: the keyring, or the file's path.
pub fn kept_where(kept: Kept, store: &SecretStore) -> String {
    match kept {
        Kept::Keyring => format!("{}, sealed with the keyring's key", store.path().display()),
        Kept::File => store.path().display().to_string(),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
