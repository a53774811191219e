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
    clap_complete::generate(args.shell, &mut cmd, "plughost", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

pub fn run_man() -> Result<ExitCode, String> {
    match clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // The reader stopped reading (`plughost man | head`): as SIGPIPE ends a program.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::from(141)),
        Err(e) => Err(format!("cannot write the man page: {e}")),
    }
}
