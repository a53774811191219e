//! `plughost export --format …` prints the tool specs for an LLM provider;
//! `plughost parse-tool-call` turns a model's `<tool_call>` blocks back into calls.

use std::io::Read;
use std::process::ExitCode;

use plughost::export::{Format, export, parse_tool_calls};

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The provider's function-calling shape.
    #[arg(long, value_parser = crate::choice(&Format::ALL, Format::name))]
    format: Format,
}

pub fn run(cli: &Cli, args: &Args) -> Result<ExitCode, String> {
    let host = cli.host()?;
    match export(&host.tools(), args.format).map_err(|e| e.to_string())? {
        // Data for a model, quoting tool descriptions: as it is in a pipe.
        serde_json::Value::String(text) => print!("{}", super::terminal::data(&text)),
        value => super::print_json(&value),
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a model's reply on stdin and prints its tool calls as a JSON array of
/// `{"name", "arguments"}`. Exit 1 when a block is malformed (the reason on stderr).
pub fn run_parse() -> Result<ExitCode, String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    match parse_tool_calls(&text) {
        Ok(calls) => {
            super::print_json(&calls);
            Ok(ExitCode::SUCCESS)
        }
        Err(reason) => {
            eprintln!("error: {reason}");
            Ok(ExitCode::from(1))
        }
    }
}
