//! One source of truth for each fact several layers need: a fact written out twice can drift
//! apart, as the `nfs-gds/gds` values and the fstab version once did. Read from the source text,
//! outside comments and unit tests: each pattern may appear in its own file only.

use crate::circles::code_of;

/// (what the code writes, the one file that may write it, the fact).
const ONE_SOURCE: &[(&str, &str, &str)] = &[
    ("\"rdma6\"", "src/nfs/defaults.rs", "the RDMA netids"),
    ("20049", "src/nfs/defaults.rs", "the NFS/RDMA port"),
    (
        "lossy(\"etc/fstab\")",
        "src/host/mounts/fstab.rs",
        "the reader of /etc/fstab",
    ),
    (
        "NfsSource::parse(m.info.source())",
        "src/host/mounts/table.rs",
        "a mount's server identity (Mount::server)",
    ),
    (
        "super_option(\"addr\").and_then",
        "src/host/mounts/table.rs",
        "the address a mount talks to (Mount::addr)",
    ),
    (
        "registry::node_checks(",
        "src/judge/node.rs",
        "the node judge",
    ),
    (
        "is_host(",
        "src/host/io/context.rs",
        "whether a root is this machine or a tree: ask its node context (`context().is_machine()`)",
    ),
    (
        "RootKind::of(",
        "src/host/io/root.rs",
        "a root's kind, decided once when the root is made",
    ),
];

/// Files compiled for the unit tests only (`#[cfg(test)] mod …`).
const TEST_ONLY_FILES: &[&str] = &["src/host/mounts/samples.rs"];

fn misplaced(rel: &str, text: &str) -> Vec<String> {
    let code = code_of(text);
    ONE_SOURCE
        .iter()
        .filter(|(pattern, home, _)| rel != *home && code.contains(pattern))
        .map(|(pattern, home, fact)| format!("{rel} writes {pattern}: {fact} belongs to {home}"))
        .collect()
}

#[test]
fn each_shared_fact_is_written_in_one_file() {
    let mut wrong = Vec::new();
    for (rel, text) in crate::layers::product_sources() {
        // Test-only files: fixtures, not facts.
        if TEST_ONLY_FILES.contains(&rel.as_str()) {
            continue;
        }
        wrong.extend(misplaced(&rel, &text));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_guard_sees_a_second_source_and_not_a_test() {
    let twice = "fn f(p: &str) -> bool { p == \"rdma\" || p == \"rdma6\" }\n";
    assert_eq!(misplaced("src/lint/x.rs", twice).len(), 1);
    assert!(misplaced("src/nfs/defaults.rs", twice).is_empty());
    let in_test = "fn f() {}\n#[cfg(test)]\nmod tests {\n    const P: u16 = 20049;\n}\n";
    assert!(misplaced("src/lint/x.rs", in_test).is_empty());
    let asks_the_root = "fn f(r: &Root) -> bool { r.is_host() }\n";
    assert_eq!(misplaced("src/mount/flow.rs", asks_the_root).len(), 1);
}
