//! The mount helper's flags, read from its usage text ([`crate::mount::args::USAGE`]): the
//! helper parses mount(8)'s flags by hand, so that text is their one description, and its
//! manual page and its shell completion are written from it.

use crate::mount::args::USAGE;

/// One line of the usage text's flag table: `  -N NAMESPACE  mount in this …`, or
/// `  -r, -w        mount read-only / read-write`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The flags the line describes (`-r`, `-w`).
    pub names: Vec<&'static str>,
    /// The name of the flag's value (`NAMESPACE`), if it takes one.
    pub value: Option<&'static str>,
    /// What the line says about it.
    pub help: &'static str,
}

/// Every line of the usage text that starts, indented by two spaces, with a flag; its first
/// column (up to two spaces) names the flags, the rest describes them.
pub fn helper_flags() -> Vec<Flag> {
    USAGE
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| l.starts_with('-'))
        .map(|l| {
            let (column, help) = l.split_once("  ").unwrap_or((l, ""));
            let mut words = column.split(", ").map(|f| f.split_whitespace());
            let mut names = Vec::new();
            let mut value = None;
            for mut flag in words.by_ref() {
                names.extend(flag.next());
                value = value.or(flag.next());
            }
            Flag {
                names,
                value,
                help: help.trim(),
            }
        })
        .collect()
}

/// Every flag's name, in the order of the usage text (`-s`, `-f`, …, `-r`, `-w`, `-h`, `-V`).
pub fn helper_flag_names() -> Vec<&'static str> {
    helper_flags().into_iter().flat_map(|f| f.names).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_usage_text_is_read_with_its_value_and_help() {
        let flags = helper_flags();
        let names = helper_flag_names();
        assert_eq!(
            names,
            ["-s", "-f", "-n", "-v", "-N", "-o", "-t", "-r", "-w", "-h", "-V"]
        );
        let n = flags.iter().find(|f| f.names == ["-N"]).unwrap();
        assert_eq!(n.value, Some("NAMESPACE"));
        assert_eq!(n.help, "mount in this mount namespace (a path, or a pid)");
        let rw = flags.iter().find(|f| f.names == ["-r", "-w"]).unwrap();
        assert_eq!((rw.value, rw.help), (None, "mount read-only / read-write"));
    }
}
