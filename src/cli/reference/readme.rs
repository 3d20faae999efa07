//! The guide's command table (`docs/README.md`): one row per command, its synopsis from its
//! arguments and its `about` line, both from the clap definition (a test keeps the file equal).

use super::{command, commands};

/// A command's synopsis in the guide's words: `nfs-gds verify [--json] [--port PORT] DIR`.
fn synopsis(words: &[String], sub: &clap::Command) -> String {
    let mut parts = vec![format!("nfs-gds {}", words.join(" "))];
    let value_of = |a: &clap::Arg| {
        a.get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_else(|| a.get_id().as_str().to_uppercase())
    };
    for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
        let flag = match (a.get_long(), a.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => continue,
        };
        let part = if a.get_num_args().is_some_and(|n| n.takes_values()) {
            format!("{flag} {}", value_of(a))
        } else {
            flag
        };
        parts.push(if a.is_required_set() {
            part
        } else {
            format!("[{part}]")
        });
    }
    for a in sub.get_positionals().filter(|a| !a.is_hide_set()) {
        let mut part = value_of(a);
        if a.get_num_args().is_some_and(|n| n.max_values() > 1) && !part.contains(' ') {
            part.push('…');
        }
        parts.push(if a.is_required_set() {
            part
        } else {
            format!("[{part}]")
        });
    }
    parts.join(" ")
}

/// The Markdown table: `| command | what it does |`, one row per command in the order of
/// `nfs-gds --help`.
pub fn command_table() -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from("| command | what it does |\n|---|---|\n");
    for (words, sub) in commands(&command()) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "| `{}` | {} |\n",
            cell(&synopsis(&words, &sub)),
            cell(&about)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_holds_the_options_positionals_and_about() {
        let table = command_table();
        let row = |start: &str| {
            table
                .lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no row {start}: {table}"))
                .to_string()
        };
        assert_eq!(
            row("| `nfs-gds check "),
            "| `nfs-gds check [--json] [--probe]` | Run the pre-mount checks for this node, as the mount helper would |"
        );
        let collect = row("| `nfs-gds collect ");
        assert!(collect.contains("--output FILE"), "{collect}");
        assert!(row("| `nfs-gds policy show ").contains("[--target DIR]"));
        assert!(row("| `nfs-gds lint ").contains("FILE…"), "{table}");
        // No global option and no hidden command.
        assert!(
            !table.contains("[--root") && !table.contains("generate-man"),
            "{table}"
        );
    }
}
