//! The guide's command table (`docs/README.md`): one row per command, its synopsis from its
//! arguments and its `about` line, both from the clap definition (a test keeps the file equal).

use super::described::{command, commands};
use super::synopsis::parts;

/// A command's synopsis in the guide's words: `nfs-gds verify [--port PORT] [--json] DIR`.
fn synopsis(words: &[String], sub: &clap::Command) -> String {
    std::iter::once(format!("nfs-gds {}", words.join(" ")))
        .chain(
            parts(sub)
                .iter()
                .map(|p| p.spell(|f| f.to_string(), |v| v.to_string())),
        )
        .collect::<Vec<_>>()
        .join(" ")
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
