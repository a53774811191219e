//! `plughost approve NAME [--yes]` and `plughost revoke NAME`.

use std::process::ExitCode;

use plughost::approval::{ApprovalState, prompt};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The plugin to approve.
    name: String,
    /// Approve without asking (for scripts).
    #[arg(long)]
    yes: bool,
}

#[derive(Debug, clap::Args)]
pub struct RevokeArgs {
    /// The plugin whose approval is withdrawn.
    name: String,
}

pub fn approve(cli: &Cli, args: &ApproveArgs) -> Result<ExitCode, String> {
    let host = cli.host()?;
    let catalog = host.catalog();
    let Some(plugin) = catalog.plugin(&args.name) else {
        return Err(match catalog.rejected_folder(&args.name) {
            Some(r) => format!("plugin \"{}\" is rejected, fix it first:\n{r}", args.name),
            None => format!(
                "no plugin named \"{}\" in {}",
                args.name,
                host.plugins_dir().display()
            ),
        });
    };
    let state = host
        .approvals()
        .state(&plugin.manifest)
        .map_err(|e| e.to_string())?;
    match state {
        ApprovalState::Automatic => {
            println!(
                "{} needs no approval: it asks for nothing beyond reading files",
                args.name
            );
            return Ok(ExitCode::SUCCESS);
        }
        ApprovalState::Approved => {
            println!("{} is already approved", args.name);
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    if !args.yes {
        if !prompt::is_interactive() {
            return Err(format!(
                "no terminal to ask on; to approve without asking run: {} --yes",
                host.approve_command(&args.name)
            ));
        }
        if !prompt::ask(&plugin.manifest, &state)
            .map_err(|e| format!("cannot ask on the terminal: {e}"))?
        {
            println!("not approved");
            return Ok(ExitCode::from(1));
        }
    }
    match host.approve(&args.name) {
        Some(Ok(())) => {
            println!("approved {}", args.name);
            Ok(ExitCode::SUCCESS)
        }
        Some(Err(e)) => Err(e.to_string()),
        None => Err(format!("plugin \"{}\" disappeared", args.name)),
    }
}

pub fn revoke(cli: &Cli, args: &RevokeArgs) -> Result<ExitCode, String> {
    let host = cli.host()?;
    if host.revoke(&args.name).map_err(|e| e.to_string())? {
        println!("revoked {}", args.name);
    } else {
        println!("{} was not approved", args.name);
    }
    Ok(ExitCode::SUCCESS)
}
