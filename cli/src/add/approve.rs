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

/// What can be tried once when the new server does not start, given why:
/// `None` when it does not apply, else what it did.
pub(super) type Repair<'a> = &'a dyn Fn(&str) -> Result<Option<String>, String>;

/// Lists the new server's tools in its sandbox, shows them, and asks for
/// approval (or approves, with `--yes`). A server that does not start gets
/// `repair`, once, and is started again.
pub(super) fn approve_new(
    cli: &Cli,
    name: &str,
    dir: &Path,
    yes: bool,
    mut repair: Option<Repair>,
) -> Result<ExitCode, String> {
    let host = cli.host_with(|b| b.observer(Arc::new(super::super::log::Notes)))?;
    let runtime = super::super::runtime();
    let approve = cli.command_line(&format!("approve {name}"));
    let stays = || {
        say!(
            "\nthe plugin stays in {}: fix its {MANIFEST_FILE} (a grant the message names, a variable), then run: {approve}",
            dir.display()
        )
    };
    let listed = loop {
        match runtime.block_on(host.list_server(name)) {
            Ok(tools) => break Some(tools),
            Err(ApproveError::NeedsApprovalFirst { .. }) => break None,
            Err(e @ ApproveError::ServerFailed { .. })
                if repaired(&e, repair.take(), &runtime, &host)? => {}
            Err(e) => {
                esay!("plughost: {e}");
                stays();
                runtime.block_on(host.stop_workers());
                return Ok(ExitCode::from(1));
            }
        }
    };
    match &listed {
        Some(tools) => show_tools("\nits server lists", " (in the sandbox)", tools),
        None => say!(
            "\nits grants go beyond reading files (writing, the network, or a variable it is given): the server starts, and lists its tools, once they are approved"
        ),
    }
    let approval = loop {
        let approval = if yes {
            runtime.block_on(host.approve(name))
        } else if TerminalApprover::available() {
            runtime.block_on(host.approve_with(name, &TerminalApprover))
        } else {
            say!("\napprove it to use it: {approve} (add --yes to approve without a terminal)");
            return Ok(ExitCode::SUCCESS);
        };
        match approval {
            Err(ref e @ ApproveError::ServerFailed { .. })
                if repaired(e, repair.take(), &runtime, &host)? => {}
            approval => break approval,
        }
    };
    let code = match approval {
        Ok(Approval::Approved | Approval::AlreadyApproved | Approval::NotNeeded) => {
            say!("\napproved {name}");
            if listed.is_none() {
                let tools: Vec<_> = host
                    .tools()
                    .into_iter()
                    .filter(|t| t.plugin == name)
                    .collect();
                show_tools("its server lists", "", &tools);
            }
            try_it(&host, name, cli);
            ExitCode::SUCCESS
        }
        Ok(Approval::Declined) => {
            say!("\nnot approved; approve it later with: {approve}");
            ExitCode::from(1)
        }
        Err(e) => {
            esay!("plughost: {e}");
            if matches!(e, ApproveError::ServerFailed { .. }) {
                stays();
            }
            ExitCode::from(1)
        }
    };
    runtime.block_on(host.stop_workers());
    Ok(code)
}

/// Whether `repair` applied to why the server did not start, and ran.
fn repaired(
    e: &ApproveError,
    repair: Option<Repair>,
    runtime: &tokio::runtime::Runtime,
    host: &PluginHost,
) -> Result<bool, String> {
    let Some(repair) = repair else {
        return Ok(false);
    };
    runtime.block_on(host.stop_workers());
    let why = e.to_string();
    let Some(done) = repair(&why)? else {
        return Ok(false);
    };
    say!("{done}");
    Ok(true)
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

/// `HEAD N tools WHERE:`, then each tool with the first line of its description.
fn show_tools(head: &str, place: &str, tools: &[plughost::ToolInfo]) {
    say!("{head} {} tool{}{place}:", tools.len(), plural(tools.len()));
    for t in tools {
        let first = t.description.lines().next().unwrap_or_default();
        say!("  {}  {}", t.name, clip(first, 90));
    }
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
