//! The command line itself: generated completions match the real options.

use crate::support::*;

#[test]
fn completions_come_from_the_real_command_line() {
    let out = nfs_gds().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = stdout(&out);
    for word in [
        "inspect-module",
        "doctor",
        "--probe",
        "--root",
        "--markdown",
    ] {
        assert!(script.contains(word), "bash completion lacks {word}");
    }
    let out = nfs_gds().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}
