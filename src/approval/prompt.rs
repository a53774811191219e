//! The approval prompt on the user's terminal.
//!
//! The prompt opens `/dev/tty` for both reading and writing, never stdin or
//! stdout: `echo '{...}' | plughost call TOOL -` still asks on the terminal, and
//! a program reading plughost's stdout never sees the prompt. [`text`] is the
//! same words without a terminal, for MCP elicitation and for tests.
//!
//! Everything taken from the manifest is shown with control characters and
//! bidirectional-override characters escaped, so a plugin cannot redraw or
//! hide parts of its own prompt.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};

use super::{ApprovalState, SHELL_NETWORK_WARNING, shell_and_network};
use crate::plugins::manifest::{EnvVarName, Manifest, Permission, Protocol};

/// The controlling terminal.
pub(crate) const TTY: &str = "/dev/tty";

/// The question after the text; anything but `y` or `yes` (any case) is no.
pub(crate) const QUESTION: &str = "Approve? [y/N] ";

/// Longest plugin description shown, in characters.
const MAX_DESCRIPTION: usize = 400;
/// Longest tool description line shown, in characters.
const MAX_TOOL_LINE: usize = 160;
/// Longest author shown, in characters.
const MAX_AUTHOR: usize = 120;

/// Whether there is a terminal to ask on (`/dev/tty` opens for reading and writing).
pub(crate) fn is_interactive() -> bool {
    open_tty().is_ok()
}

fn open_tty() -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(TTY)
}

/// Shows the prompt for `manifest` on the terminal and reads the answer there.
/// `Ok(true)` only for `y` or `yes`; an empty answer or end of input is no.
/// Fails when there is no terminal (see [`is_interactive`]).
///
/// It blocks until the user answers: from async code run it with
/// `tokio::task::spawn_blocking`, and let only one prompt run at a time.
pub(crate) fn ask(manifest: &Manifest, state: &ApprovalState) -> io::Result<bool> {
    let tty = open_tty()?;
    let mut output = tty.try_clone()?;
    let mut input = BufReader::new(tty);
    ask_on(manifest, state, &mut input, &mut output)
}

/// [`ask`] on any reader and writer.
pub(crate) fn ask_on(
    manifest: &Manifest,
    state: &ApprovalState,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> io::Result<bool> {
    write!(output, "\n{}\n{QUESTION}", text(manifest, state))?;
    output.flush()?;
    let mut answer = String::new();
    let read = input.read_line(&mut answer)?;
    if read == 0 {
        // End of input: answer no, and end the line the question left open.
        writeln!(output)?;
    }
    let yes = is_yes(&answer);
    writeln!(
        output,
        "{}",
        if yes {
            format!("Approved \"{}\".", manifest.name)
        } else {
            format!("Not approved: \"{}\" will not run.", manifest.name)
        }
    )?;
    output.flush()?;
    Ok(yes)
}

/// Whether an answer means yes: `y` or `yes`, any case, surrounding blanks ignored.
pub(crate) fn is_yes(answer: &str) -> bool {
    let a = answer.trim();
    a.eq_ignore_ascii_case("y") || a.eq_ignore_ascii_case("yes")
}

/// The prompt's text, without the question: what the plugin is, its tools,
/// what each permission grants, the variables it will receive, the warning for
/// `shell:exec` with `network`, and for a re-approval what is new.
pub(crate) fn text(manifest: &Manifest, state: &ApprovalState) -> String {
    let (new_permissions, new_env, new_secrets): (&[Permission], &[EnvVarName], &[String]) =
        match state {
            ApprovalState::NeedsReapproval {
                new_permissions,
                new_env,
                new_secrets,
            } => (new_permissions, new_env, new_secrets),
            _ => (&[], &[], &[]),
        };
    let reapproval = matches!(state, ApprovalState::NeedsReapproval { .. });
    let new_mark = |is_new: bool| if is_new { "  (new)" } else { "" };

    let mut t = String::new();
    if reapproval {
        let mut news: Vec<String> = new_permissions.iter().map(|p| p.to_string()).collect();
        news.extend(new_env.iter().map(|e| format!("env {}", e.0)));
        news.extend(new_secrets.iter().map(|s| format!("secret {s}")));
        let _ = writeln!(
            t,
            "Plugin \"{}\" now asks for more than you approved: {}.",
            manifest.name,
            news.join(", ")
        );
    } else {
        let _ = writeln!(t, "Plugin \"{}\" asks for your approval.", manifest.name);
    }
    let _ = writeln!(t);
    let _ = writeln!(t, "  Plugin:       {} {}", manifest.name, manifest.version);
    let author = manifest
        .author
        .as_deref()
        .map(|a| one_line(a, MAX_AUTHOR))
        .unwrap_or_else(|| "(not given)".to_owned());
    let _ = writeln!(t, "  Author:       {author}");
    let _ = writeln!(
        t,
        "  Description:  {}",
        one_line(&manifest.description, MAX_DESCRIPTION)
    );

    let _ = writeln!(t, "\nTools:");
    match (manifest.protocol, state) {
        (_, ApprovalState::ToolsChanged { tools }) => {
            let _ = writeln!(
                t,
                "  The MCP server offers tools that differ from the ones you approved:"
            );
            for w in tools {
                let _ = writeln!(
                    t,
                    "  {}: {}  ({})",
                    one_line(&w.tool, MAX_TOOL_LINE),
                    one_line(&w.description, MAX_DESCRIPTION),
                    w.change.short()
                );
            }
        }
        (Protocol::Mcp, _) if manifest.remote.is_some() => {
            let url = manifest.remote.as_deref().unwrap_or_default();
            let _ = writeln!(
                t,
                "  This plugin is the remote MCP server at {}. plughost connects to it once\n  you approve, and its tools are listed then; a tool it later adds or changes\n  waits for your approval again.",
                one_line(url, MAX_TOOL_LINE)
            );
        }
        (Protocol::Mcp, _) => {
            let command = std::iter::once(manifest.entrypoint.as_str())
                .chain(manifest.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            let _ = writeln!(
                t,
                "  This plugin is the MCP server {}. It starts once you approve, with the\n  permissions below, and its tools are listed then; a tool it later adds or\n  changes waits for your approval again.",
                one_line(&command, MAX_TOOL_LINE)
            );
        }
        (Protocol::StdioJson, _) => {
            for tool in &manifest.tools {
                let first = tool.description.lines().next().unwrap_or("");
                let _ = writeln!(t, "  {}: {}", tool.name, one_line(first, MAX_TOOL_LINE));
            }
        }
    }

    let mut permissions = manifest.granted();
    permissions.sort();
    permissions.dedup();
    let _ = writeln!(t, "\nPermissions:");
    if permissions.is_empty() {
        let _ = writeln!(t, "  (none)");
    }
    for p in &permissions {
        let _ = writeln!(
            t,
            "  {}: {}{}",
            p,
            p.grants(),
            new_mark(new_permissions.contains(p))
        );
        if let Some(note) = super::protected_note(p) {
            let _ = writeln!(t, "    {note}");
        }
    }

    let mut env = manifest.env.clone();
    env.sort();
    env.dedup();
    if !env.is_empty() {
        let _ = writeln!(
            t,
            "\nEnvironment variables it will receive (they may hold secrets):"
        );
        for e in &env {
            let _ = writeln!(t, "  {}{}", e.0, new_mark(new_env.contains(e)));
        }
    }

    if !manifest.secrets.is_empty() {
        let _ = writeln!(
            t,
            "\nSecrets it uses without holding them (it gets a placeholder; plughost puts\nthe value on its requests to these hosts, and only to them):"
        );
        for (name, binding) in &manifest.secrets {
            let _ = writeln!(
                t,
                "  {name}: {}{}",
                binding.hosts.join(", "),
                new_mark(new_secrets.contains(name))
            );
            if let Some(headers) = &binding.headers {
                let names: Vec<&str> = headers.iter().map(|h| h.0.as_str()).collect();
                let _ = writeln!(t, "    in the headers {} alone", names.join(", "));
            }
            if binding.plain_http {
                let _ = writeln!(
                    t,
                    "    also over plain HTTP, where anyone on the way can read it"
                );
            }
        }
    }

    if shell_and_network(manifest) {
        let _ = writeln!(t, "\n{SHELL_NETWORK_WARNING}");
    }
    let here = crate::run::sandbox::support_here();
    let hosts = !permissions.contains(&Permission::Network) && !manifest.host_grants().is_empty();
    if hosts {
        let _ = writeln!(
            t,
            "\nIt reaches those hosts through plughost's egress proxy and no others (names\nare resolved by plughost; loopback and private addresses only when granted\nas addresses). On this machine that is {}.",
            here.host_grants.describe()
        );
    }
    if permissions
        .iter()
        .any(|p| p.writes() && p.scope().is_none())
    {
        let _ = writeln!(
            t,
            "\nEven so, it cannot change plughost's own state and plugins, your secrets\n(SSH keys, credentials), shell start-up files, MCP client configurations,\nautostart entries or git hooks: a grant must name those (plughost doctor lists them)."
        );
    }
    if permissions.iter().any(Permission::writes) && !here.projects_read_only {
        let _ = writeln!(
            t,
            "On this machine (no user namespaces), the .git folders and MCP configurations of\nprojects in the folders it may write are NOT protected from its writes."
        );
    }
    t
}

/// `s` on one line, at most `max` characters, with control and bidi characters escaped.
fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (count, c) in s.trim().chars().enumerate() {
        if count >= max {
            out.push('…');
            break;
        }
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() || is_bidi_control(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// Characters that reorder the text around them on a terminal.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}
