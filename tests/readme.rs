//! The README's check table is the registry: every check, its default level, whether the helper
//! waits for it, and its doc line, in registry order.

use nfs_gds::checks::registry;

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
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let begin = "<!-- checks:begin -->\n";
    let start = readme
        .find(begin)
        .expect("README has a checks:begin marker")
        + begin.len();
    let end = readme[start..]
        .find("<!-- checks:end -->")
        .expect("README has a checks:end marker")
        + start;
    let expected = table();
    assert!(
        readme[start..end] == expected,
        "README.md's check table differs from the registry; replace it with:\n{expected}"
    );
}
