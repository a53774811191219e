//! The end of `add`: the new server's tools listed in its sandbox, shown,
//! and approved (asked on the terminal, or `--yes`).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use plughost::PluginHost;
use plughost::approval::TerminalApprover;
use plughost::approval::{Approval, ApproveError};
use plughost::manifest::MANIFEST_FILE;

use super::super::Cli;
use super::super::terminal::{esay, say};

/// Lists the new server's tools in its sandbox, shows them, and asks for
/// approval (or approves, with `--yes`).
pub(super) fn approve_new(
    cli: &Cli,
    name: &str,
    dir: &Path,
    yes: bool,
) -> Result<ExitCode, String> {
    let host = cli.host_with(|b| b.observer(Arc::new(super::super::log::Notes)))?;
    let runtime = super::super::runtime();
    let approve = cli.command_line(&format!("approve {name}"));
    let code = runtime.block_on(async {
        match host.list_server(name).await {
            Ok(tools) => {
                say!("\nits server lists {} tool{} (in the sandbox):", tools.len(), plural(tools.len()));
                for t in &tools {
                    let first = t.description.lines().next().unwrap_or_default();
                    say!("  {}  {}", t.name, clip(first, 90));
                }
            }
            Err(ApproveError::NeedsApprovalFirst { .. }) => say!(
                "\nits grants go beyond reading files (writing, the network, or a variable it is given): the server starts, and lists its tools, once they are approved"
            ),
            Err(e) => {
                esay!("plughost: {e}");
                say!(
                    "\nthe plugin stays in {}: fix its {MANIFEST_FILE} (a grant the message names, a variable), then run: {approve}",
                    dir.display()
                );
                return ExitCode::from(1);
            }
        }
        let approval = if yes {
            host.approve(name).await
        } else if TerminalApprover::available() {
            host.approve_with(name, &TerminalApprover).await
        } else {
            say!("\napprove it to use it: {approve} (add --yes to approve without a terminal)");
            return ExitCode::SUCCESS;
        };
        let code = match approval {
            Ok(Approval::Approved | Approval::AlreadyApproved | Approval::NotNeeded) => {
                say!("\napproved {name}");
                try_it(&host, name, cli);
                ExitCode::SUCCESS
            }
            Ok(Approval::Declined) => {
                say!("\nnot approved; approve it later with: {approve}");
                ExitCode::from(1)
            }
            Err(e) => {
                esay!("plughost: {e}");
                ExitCode::from(1)
            }
        };
        host.stop_workers().await;
        code
    });
    Ok(code)
}

fn try_it(host: &PluginHost, name: &str, cli: &Cli) {
    let tools: Vec<_> = host
        .tools()
        .into_iter()
        .filter(|t| t.plugin == name)
        .collect();
    // One that needs no input is the easiest first call.
    let no_input = tools.iter().find(|t| {
        t.input_schema["required"]
            .as_array()
            .is_none_or(|r| r.is_empty())
    });
    let example = match (no_input, tools.first()) {
        (Some(t), _) => Some((&t.name, "{}")),
        (None, Some(t)) => Some((&t.name, "{…}")),
        (None, None) => None,
    };
    if let Some((tool, input)) = example {
        say!(
            "try: {}",
            cli.command_line(&format!("call {tool} '{input}'"))
        );
    }
    say!(
        "and every MCP client of plughost serve sees its tools (plughost connect CLIENT adds plughost to one)"
    );
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
