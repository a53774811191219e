//! `plughost approve NAME [--yes]` and `plughost revoke NAME`.

use std::process::ExitCode;

use plughost::PluginHost;
use plughost::approval::TerminalApprover;
use plughost::approval::{Approval, ApproveError};

use super::Cli;
use super::terminal::{esay, say};

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
    let host = cli.host_with(|b| b.observer(std::sync::Arc::new(super::log::Notes)))?;
    let name = &args.name;
    let approval = if args.yes {
        super::runtime().block_on(host.approve(name))
    } else {
        let state = host.approval_state(name);
        let needs_asking = matches!(&state, Some(Ok(s)) if !s.allows_call());
        if needs_asking && !TerminalApprover::available() {
            return Err(format!(
                "no terminal to ask on; to approve without asking run: {} --yes",
                crate::remedy::approve_command(&host, name)
            ));
        }
        super::runtime().block_on(host.approve_with(name, &TerminalApprover))
    };
    match approval {
        Ok(Approval::NotNeeded) => {
            say!("{name} needs no approval: it asks for nothing beyond reading files")
        }
        Ok(Approval::AlreadyApproved) => say!("{name} is already approved"),
        Ok(Approval::Approved) => say!("approved {name}"),
        Ok(Approval::Declined) => {
            say!("not approved");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return not_done(&host, &e),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn revoke(cli: &Cli, args: &RevokeArgs) -> Result<ExitCode, String> {
    let host = cli.host()?;
    match host.revoke(&args.name) {
        Ok(true) => say!("revoked {}", args.name),
        Ok(false) => say!("{} was not approved", args.name),
        Err(e) => return not_done(&host, &e),
    }
    Ok(ExitCode::SUCCESS)
}

/// A plugin that does not exist or is rejected is the user's mistake (exit
/// 1); an unreadable approvals file is plughost's trouble (exit 2).
fn not_done(host: &PluginHost, e: &ApproveError) -> Result<ExitCode, String> {
    match e {
        ApproveError::Approvals(_) => Err(e.to_string()),
        _ => {
            esay!("plughost: {e}");
            if let Some(remedy) = e.remedy() {
                esay!("{}", crate::remedy::Folders::of(host).advice(&remedy));
            }
            Ok(ExitCode::from(1))
        }
    }
}
