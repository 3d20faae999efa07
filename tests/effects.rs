//! Every side effect on the machine goes through the one `System` (`src/system/`): no other
//! file runs a program, mounts or unmounts, enters a namespace, reads capabilities or resolves
//! a name itself, so the fakes, the recording and the replay see every effect there is.
//!
//! Read from the source text, outside comments and the unit tests at the end of a file (and
//! outside test-only directories): a new effect is a new `Call`, not a call of its own here.

use std::path::Path;

use crate::circles::code_of;
use crate::layers::sources;

/// What doing an effect directly looks like in the source.
const EFFECTS: &[(&str, &str)] = &[
    ("Command::new(", "runs a program"),
    ("process::Command", "runs a program"),
    (".spawn()", "runs a program"),
    ("nix::mount::", "mounts or unmounts"),
    ("rustix::mount::", "mounts or unmounts"),
    ("sys_mount::Mount::", "mounts"),
    ("setns(", "enters a namespace"),
    ("caps::", "reads capabilities"),
    ("to_socket_addrs", "resolves a name"),
    ("std::thread::sleep(", "sleeps"),
];

/// Files that may sleep by themselves, and why.
const MAY_SLEEP: &[(&str, &str)] = &[
    (
        "src/host/io/fill_lock.rs",
        "waits for another process's file lock on the facts cache, below the layer that has a system",
    ),
    (
        "src/host/io/out_dir.rs",
        "tries another process's directory lock for about a second (the container hook's counters)",
    ),
    (
        "src/agent/shutdown.rs",
        "keeps the agent's schedule when its signal thread is gone",
    ),
];

fn direct_effects(rel: &str, text: &str) -> Vec<String> {
    let code = code_of(text);
    EFFECTS
        .iter()
        .filter(|(pattern, what)| {
            code.contains(pattern)
                && !(*what == "sleeps" && MAY_SLEEP.iter().any(|(f, _)| *f == rel))
        })
        .map(|(pattern, what)| format!("{rel} {what} itself ({pattern})"))
        .collect()
}

#[test]
fn every_effect_goes_through_the_one_system() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let mut wrong = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        // The test kit is compiled for tests only (it makes a private mount namespace for the
        // real-kernel unit tests): no effect of the product is there.
        if rel.starts_with("src/system/") || rel.contains("/tests/") || rel == "src/testkit.rs" {
            continue;
        }
        wrong.extend(direct_effects(&rel, &std::fs::read_to_string(&f).unwrap()));
    }
    assert!(
        wrong.is_empty(),
        "effects outside src/system (add a Call instead):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_guard_sees_an_effect_and_not_a_test_or_a_comment() {
    let text = "fn f() { let _ = std::process::Command::new(\"x\"); }\n";
    assert_eq!(
        direct_effects("src/x.rs", text),
        [
            "src/x.rs runs a program itself (Command::new()",
            "src/x.rs runs a program itself (process::Command)"
        ]
    );
    let quiet = "// Command::new( in a comment\nfn f() {}\n#[cfg(test)]\nmod tests {\n    fn t() { nix::mount::umount(\"/x\").unwrap(); }\n}\n";
    assert!(direct_effects("src/x.rs", quiet).is_empty());
    let sleeps = "fn f() { std::thread::sleep(d); }\n";
    assert_eq!(
        direct_effects("src/host/io/fill_lock.rs", sleeps),
        Vec::<String>::new()
    );
    assert_eq!(direct_effects("src/x.rs", sleeps).len(), 1);
}
