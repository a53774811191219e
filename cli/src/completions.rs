//! `plughost completions SHELL` and `plughost man`: generated from the same
//! command-line definition, so they never drift from it.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell: bash, zsh, fish, powershell or elvish.
    #[arg(value_enum)]
    shell: Shell,
}

pub fn run(args: &Args) -> Result<ExitCode, String> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "plughost", &mut script);
    write_out(&script, "the completions")
}

pub fn run_man() -> Result<ExitCode, String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| format!("cannot render the man page: {e}"))?;
    write_out(&page, "the man page")
}

/// Writes `bytes` to stdout. A reader that stopped reading (`plughost man |
/// head`) ends the program as SIGPIPE would (141), without a word.
fn write_out(bytes: &[u8], what: &str) -> Result<ExitCode, String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::from(141)),
        Err(e) => Err(format!("cannot write {what}: {e}")),
    }
}
