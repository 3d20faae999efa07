//! The mount helper's flags as its manual page and completions name them, from the one
//! declaration the helper parses with ([`crate::mount::args::FLAGS`]).

use crate::mount::args::FLAGS;

/// One flag of the helper, as the manual page lists it: `-N NAMESPACE`, `-h, --help`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The spellings of the flag (`-h`, `--help`).
    pub names: Vec<String>,
    /// The name of the flag's value (`NAMESPACE`), if it takes one.
    pub value: Option<&'static str>,
    /// What it does, in one line.
    pub help: &'static str,
}

/// Every flag, in the order of the declaration.
pub fn helper_flags() -> Vec<Flag> {
    FLAGS
        .iter()
        .map(|f| Flag {
            names: std::iter::once(format!("-{}", f.short))
                .chain(f.long.map(|l| format!("--{l}")))
                .collect(),
            value: f.value,
            help: f.help,
        })
        .collect()
}

/// Every flag's spellings, in the order of the declaration (`-s`, `-f`, …, `-h`, `--help`, …).
pub fn helper_flag_names() -> Vec<String> {
    helper_flags().into_iter().flat_map(|f| f.names).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount::args::spelling;

    #[test]
    fn every_flag_is_named_with_its_value_and_help() {
        let names = helper_flag_names();
        assert_eq!(
            names,
            [
                "-s",
                "-f",
                "-n",
                "-v",
                "-N",
                "-o",
                "-t",
                "-r",
                "-w",
                "-h",
                "--help",
                "-V",
                "--version"
            ]
        );
        let flags = helper_flags();
        let n = flags.iter().find(|f| f.names == ["-N"]).unwrap();
        assert_eq!(n.value, Some("NAMESPACE"));
        assert_eq!(n.help, "mount in this mount namespace (a path, or a pid)");
        assert_eq!(spelling(&FLAGS[4]), "-N NAMESPACE");
    }
}
