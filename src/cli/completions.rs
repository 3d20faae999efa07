//! `nfs-gds completions SHELL`: shell completion scripts, generated from the same clap
//! definition the binary parses with, so they cannot drift from the real options.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{exit, Cli, CmdError, Ctx};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write completions for (bash, zsh, fish, elvish, powershell)
    pub shell: Shell,
}

pub fn run(args: &CompletionsArgs, _ctx: &Ctx) -> Result<u8, CmdError> {
    let mut cmd = Cli::command();
    // Into memory first: clap_complete panics on a failed write (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "nfs-gds", &mut script);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
    Ok(exit::READY)
}
