//! A full disk under stdout (`> /dev/full`) ends a command with exit 2 and a message on stderr
//! that names what could not be written, in plain words: never SIGPIPE's 141, never an errno
//! number.

use std::process::{Command, Stdio};

use crate::support::*;

/// Runs `args` below `root` with stdout on `/dev/full`.
fn onto_a_full_disk(root: &str, args: &[&str]) -> std::process::Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .env("NO_COLOR", "1")
        .args(["--root", root])
        .args(args)
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_full_stdout_is_named_in_plain_words_and_exits_2() {
    let f = ready_node();
    let root = f.root().to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &["check", "--json"],
        &["check"],
        &["doctor", "--json"],
        &["doctor"],
        &["collect", "-o", "-"],
        // The error object of a refused command cannot be written either.
        &["check", "--json", "--config", "/nonexistent/nfs-gds.toml"],
    ];
    for args in commands {
        let o = onto_a_full_disk(root, args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {:?} {err}", o.status);
        assert!(
            err.contains("cannot write to standard output: No space left on device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
}
