//! The README's check table is generated from the registry: every check, its default level,
//! whether the helper waits for it, and its doc line, in registry order. The test fails with the
//! difference; `NFS_GDS_BLESS=1` writes the table.

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
fn the_readme_check_table_is_the_registry() {
    check_block(
        "README.md",
        "<!-- checks:begin -->",
        "<!-- checks:end -->",
        &table(),
    );
}
