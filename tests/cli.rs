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

#[test]
fn shipped_man_pages_match_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = nfs_gds().arg("man").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/man");
    let mut generated: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    generated.sort();
    assert!(
        generated.contains(&"nfs-gds-doctor.8".to_string()),
        "{generated:?}"
    );
    for name in &generated {
        let fresh = std::fs::read(dir.path().join(name)).unwrap();
        let kept = std::fs::read(shipped.join(name)).unwrap_or_default();
        assert!(
            fresh == kept,
            "packaging/man/{name} is stale: run `cargo run -- man packaging/man`"
        );
    }
}

#[test]
fn color_is_chosen_by_the_flag_and_by_a_non_empty_no_color() {
    let f = Fixture::new("6.1.0-18-amd64");
    let report = |color: &str, no_color: &str| {
        let out = nfs_gds()
            .env("NO_COLOR", no_color)
            .arg("--root")
            .arg(f.root())
            .args(["check", color])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        stdout(&out)
    };
    assert!(report("--color=always", "1").contains("\x1b["));
    assert!(report("--color=always", "").contains("\x1b["));
    // Not a terminal: auto means no colour, whatever NO_COLOR says.
    assert!(!report("--color=auto", "").contains('\x1b'));
    assert!(!report("--color=never", "").contains('\x1b'));
    let out = nfs_gds()
        .args(["--color=sometimes", "check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--color"), "{}", stderr(&out));
}
