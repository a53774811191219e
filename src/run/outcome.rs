//! Turns a finished plugin process into a [`ToolOutcome`] or a [`CallError`],
//! with messages a plugin author understands.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::error::CallError;
use crate::plugins::catalog::{Plugin, ToolRef};
use crate::protocol::{Attachment, ToolError, parse_response};
use crate::run::executor::Finished;

/// A call that reached its plugin and got a response back. `is_error` is the
/// plugin's own verdict, not a host failure.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolOutcome {
    /// The tool called.
    pub tool: String,
    /// The plugin that answered.
    pub plugin: String,
    /// The text the agent sees.
    pub result: String,
    /// The plugin's own verdict: true when the tool itself failed, and
    /// `result` says how.
    pub is_error: bool,
    /// With `is_error`: the kind of failure the plugin reported, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// Files, images, audio or video the tool returned, each checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// Beside each attachment, its file as opened when it was checked (for
    /// images and audio): what is read to inline it, never its path.
    #[serde(skip)]
    #[cfg_attr(
        not(feature = "mcp-server"),
        expect(dead_code, reason = "read by the MCP front end")
    )]
    pub(crate) opened: Vec<super::attachments::Opened>,
    /// The machine-readable result, when the plugin gave one; it matches the
    /// tool's `output_schema` when the tool has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// The plugin's exit code; `None` when a persistent worker answered (it
    /// keeps running).
    pub exit_code: Option<i32>,
    /// How long the plugin took to answer, from the start of its process (or
    /// the request to its worker or MCP server); `duration_ms` in JSON.
    #[serde(serialize_with = "serialize_ms", rename = "duration_ms")]
    pub duration: Duration,
    /// The kept part of stderr, for diagnostics; never meant for the agent.
    pub stderr_tail: String,
    /// An MCP server's result as it sent it: its content blocks, in order,
    /// with their annotations, embedded resources and links (MCP's
    /// `content`). Empty for other plugins, whose answer is `result` and
    /// `attachments`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<Value>,
    /// An MCP server's `_meta` on its result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// What the plugin was refused during the call: connections the egress
    /// proxy refused, and permission errors its error result (or stderr)
    /// reports on targets its grants do not reach (see `Denial::evidence`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denials: Vec<crate::error::Denial>,
}

fn serialize_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e3)
}

/// How many bytes of bad stdout an `invalid_output` error shows.
const STDOUT_HEAD: usize = 200;

/// Interprets a process that ran to its own end.
pub(crate) fn interpret(
    tool_ref: &ToolRef,
    mut finished: Finished,
    data_dir: &Path,
) -> Result<ToolOutcome, CallError> {
    let tool = tool_ref.tool();
    let name = tool.spec.name.clone();
    let parsed = finished
        .parsed
        .take()
        .unwrap_or_else(|| parse_response(&finished.stdout));
    let mut mcp = finished.mcp.take();
    if let Some(status) = finished.status.filter(|s| !s.success()) {
        let mut reason = describe_status(status, &tool_ref.plugin);
        if let Ok(r) = &parsed
            && r.is_error
        {
            reason = format!("{reason}: {}", r.result_text());
        }
        return Err(CallError::Failed {
            tool: name,
            reason,
            denials: Vec::new(),
            exit_code: status.code(),
            stderr_tail: finished.stderr,
            cause: None,
        });
    }
    let response = parsed.map_err(|e| CallError::InvalidOutput {
        tool: name.clone(),
        reason: e.0,
        stdout_head: String::from_utf8_lossy(
            &finished.stdout[..finished.stdout.len().min(STDOUT_HEAD)],
        )
        .into_owned(),
        stderr_tail: finished.stderr.clone(),
    })?;
    if let (Some(validator), Some(structured)) = (&tool.output, &response.structured) {
        let problems: Vec<String> = validator
            .iter_errors(structured)
            .map(|e| format!("{}: {}", e.instance_path().as_str(), e.masked()))
            .collect();
        if !problems.is_empty() {
            return Err(CallError::InvalidOutput {
                tool: name,
                reason: format!(
                    "\"structured\" does not match the tool's output_schema: {}",
                    problems.join("; ")
                ),
                stdout_head: String::from_utf8_lossy(
                    &finished.stdout[..finished.stdout.len().min(STDOUT_HEAD)],
                )
                .into_owned(),
                stderr_tail: finished.stderr,
            });
        }
    }
    let (attachments, opened) = response
        .attachments
        .iter()
        .map(|a| super::attachments::check(a, &tool_ref.plugin, data_dir))
        .collect::<Result<(Vec<_>, Vec<_>), String>>()
        .map_err(|reason| CallError::InvalidOutput {
            tool: name.clone(),
            reason,
            stdout_head: String::new(),
            stderr_tail: String::new(),
        })?;
    Ok(ToolOutcome {
        tool: name,
        plugin: tool_ref.plugin.name().to_owned(),
        result: response.result_text(),
        is_error: response.is_error,
        // A kind only means something on the tool's own failure.
        error: response.error.filter(|_| response.is_error),
        attachments,
        opened,
        structured: response.structured,
        exit_code: finished.status.and_then(|s| s.code()),
        duration: finished.duration,
        stderr_tail: finished.stderr,
        content: mcp
            .as_mut()
            .map(|m| std::mem::take(&mut m.content))
            .unwrap_or_default(),
        meta: mcp.and_then(|m| m.meta),
        denials: Vec::new(),
    })
}

/// "exited with code 3", "was killed by signal 11 (SIGSEGV)", with a hint for
/// the shell's "command not found" codes.
fn describe_status(status: ExitStatus, plugin: &Plugin) -> String {
    if let Some(code) = status.code() {
        let hint = match code {
            127 => match shebang(&plugin.entrypoint) {
                Some(line) => format!(
                    " (command not found: is the interpreter on the entrypoint's first line, \"{line}\", installed?)"
                ),
                None => " (command not found)".to_owned(),
            },
            126 => " (a command could not be executed: check its permissions)".to_owned(),
            _ => String::new(),
        };
        return format!("the plugin exited with code {code}{hint}");
    }
    match status.signal() {
        Some(sig) => format!(
            "the plugin was killed by signal {sig}{}",
            signal_name(sig)
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ),
        None => format!("the plugin ended abnormally ({status})"),
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}

/// The entrypoint's `#!` line as written (`#!/usr/bin/env python3`), for messages.
fn shebang(entrypoint: &Path) -> Option<String> {
    crate::plugins::shebang::read_line(entrypoint).map(|line| format!("#!{line}"))
}

/// A spawn failure in words: missing entrypoint, missing interpreter, not executable.
pub(crate) fn explain_spawn_error(plugin: &Plugin, err: &io::Error) -> String {
    let ep = plugin.entrypoint.display();
    // A file changed since it was loaded: its first line may be why.
    let first = crate::plugins::shebang::first_line(&plugin.entrypoint);
    if let Some(problem) = crate::plugins::shebang::explain(&first, &plugin.manifest.entrypoint) {
        return problem;
    }
    match err.raw_os_error() {
        Some(libc::ENOENT) if !plugin.entrypoint.exists() => {
            format!(
                "the entrypoint {ep} no longer exists; was the plugin changed since it was loaded?"
            )
        }
        Some(libc::ENOENT) => match shebang(&plugin.entrypoint) {
            Some(line) => format!(
                "the interpreter named on the entrypoint's first line, \"{line}\", does not exist"
            ),
            None => format!("cannot start {ep}: {err}"),
        },
        Some(libc::EACCES) => format!("the entrypoint {ep} is not executable; run: chmod +x {ep}"),
        Some(libc::ENOEXEC) => format!(
            "the entrypoint {ep} is neither a binary for this machine nor a script with a #! line"
        ),
        _ => format!("cannot start {ep}: {err}"),
    }
}
