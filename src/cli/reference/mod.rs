//! The reference written from the program's own definitions, not by hand: the manual pages'
//! command and option sections ([`man`]), the guide's command table ([`readme`]), both with
//! the synopses of [`synopsis`], and the helper's flags from its flag table ([`usage`]) for
//! them and for its completion.
//! `nfs-gds generate-man PAGE` prints a page; packaging/build-packages.sh installs what it
//! prints.

pub mod man;
pub mod readme;
pub mod roff;
pub mod synopsis;
pub mod usage;

use std::ffi::OsString;

use clap::{CommandFactory, Parser};

use super::{exit, out, Cli};

/// The word that starts [`generate_man`].
pub const GENERATE_MAN: &str = "generate-man";

/// Print a manual page as the packages install it
#[derive(Debug, Parser)]
#[command(
    name = "generate-man",
    bin_name = "nfs-gds generate-man",
    disable_version_flag = true
)]
struct GenerateMan {
    /// The page to print
    #[arg(value_enum)]
    page: man::Page,
}

/// `nfs-gds generate-man PAGE` (`args` from `generate-man` on), for packaging/build-packages.sh
/// rather than for users: parsed apart from [`Cli`], so that no help, completion, manual page
/// or the guide's command table offers it. Exits 0 when the page is printed, 2 otherwise.
pub fn generate_man(args: &[OsString]) -> u8 {
    let parsed = match GenerateMan::try_parse_from(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::ERROR
            } else {
                exit::READY
            };
        }
    };
    let written = man::page(parsed.page).map(|text| out::text(format_args!("{text}")));
    match written {
        Ok(Ok(())) => exit::READY,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => out::end_on_closed_pipe(),
        Ok(Err(e)) => {
            errln!("nfs-gds: {GENERATE_MAN}: {e}");
            exit::ERROR
        }
        Err(e) => {
            errln!("nfs-gds: {e}");
            exit::ERROR
        }
    }
}

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
