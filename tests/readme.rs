//! The guide's tables written by the code: the check table of `docs/checks.md` from the registry
//! (every check, its default level, whether the helper waits for it, and its doc line, in
//! registry order), and the command table of `docs/README.md` from the command-line definitions
//! (each command's options and `about` line).
//! The tests fail with the difference; `NFS_GDS_BLESS=1` writes the tables.

use nfs_gds::checks::registry;

use crate::support::generated::check_block;

/// The table, one row per check.
fn table() -> String {
    let mut out = String::from("| id | default | waited for | passes when |\n|---|---|---|---|\n");
    for c in registry::all() {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            c.id,
            c.default_level,
            if c.waitable { "yes" } else { "no" },
            c.doc
        ));
    }
    out
}

#[test]
fn the_guide_check_table_is_the_registry() {
    check_block(
        "docs/checks.md",
        "<!-- checks:begin -->",
        "<!-- checks:end -->",
        &table(),
    );
}

#[test]
fn the_guide_command_table_is_the_command_line() {
    let table = nfs_gds::cli::reference::readme::command_table();
    assert!(
        table.contains("| `nfs-gds check [--json] [--probe]` |"),
        "{table}"
    );
    check_block(
        "docs/README.md",
        "<!-- commands:begin -->",
        "<!-- commands:end -->",
        &table,
    );
}
