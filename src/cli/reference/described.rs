//! The command line as the reference describes it, and every command it describes.

use crate::cli::args::Cli;
use clap::CommandFactory;

/// The command line as the reference describes it: `-h` and `-V` once, among the global options, no
/// `help` command, and the global options only there.
pub fn command() -> clap::Command {
    fn no_help(c: clap::Command) -> clap::Command {
        c.disable_help_flag(true)
            .disable_help_subcommand(true)
            .mut_subcommands(no_help)
    }
    let mut cmd = Cli::command()
        .disable_help_subcommand(true)
        .subcommand_value_name("command")
        .mut_subcommands(no_help);
    cmd.build();
    cmd
}

/// Every command the page describes, with its words (`["policy", "show"]`): the visible
/// subcommands, and for one that has its own (`policy`), those instead.
pub fn commands(cmd: &clap::Command) -> Vec<(Vec<String>, clap::Command)> {
    fn walk(cmd: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, clap::Command)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut words = path.to_vec();
            words.push(sub.get_name().to_string());
            if sub.has_subcommands() {
                walk(sub, &words, out);
            } else {
                // Propagated to every command by clap; described once, as global options.
                let own = sub
                    .clone()
                    .mut_args(|a| if a.is_global_set() { a.hide(true) } else { a });
                out.push((words, own));
            }
        }
    }
    let mut out = Vec::new();
    walk(cmd, &[], &mut out);
    out
}
