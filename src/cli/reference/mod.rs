//! The reference written from the program's own definitions, not by hand: the manual pages'
//! command and option sections ([`man`]), the guide's command table ([`readme`]), both with
//! the synopses of [`synopsis`], and the helper's flags from its flag table ([`usage`]) for
//! them and for its completion.
//! `nfs-gds generate-man PAGE` prints a page; packaging/build-packages.sh installs what it
//! prints.

pub mod described;
pub mod man;
pub mod readme;
pub mod roff;
pub mod synopsis;
pub mod usage;

use std::ffi::OsString;

use clap::Parser;

use super::{exit, out};
pub use described::{command, commands};

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
