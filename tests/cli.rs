//! The command line itself: completions match the real options, and colour is chosen as
//! documented.

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

/// The scripts the packages install, as `nfs-gds completions SHELL` writes them.
const SHIPPED_COMPLETIONS: [(&str, &str); 3] = [
    ("bash", "packaging/completions/nfs-gds.bash"),
    ("zsh", "packaging/completions/_nfs-gds"),
    ("fish", "packaging/completions/nfs-gds.fish"),
];

#[test]
fn shipped_completions_are_fresh_and_offer_no_hidden_command() {
    use clap::CommandFactory;
    let cli = nfs_gds::cli::Cli::command();
    let hidden: Vec<&str> = cli
        .get_subcommands()
        .filter(|s| s.is_hide_set())
        .map(|s| s.get_name())
        .collect();
    for (shell, path) in SHIPPED_COMPLETIONS {
        let out = nfs_gds().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let kept = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
            .unwrap_or_default();
        assert!(
            out.stdout == kept,
            "{path} is stale: run `cargo run -q -- completions {shell} > {path}`"
        );
        let script = stdout(&out);
        assert!(script.contains("inspect-module"), "{shell}: {script}");
        for name in &hidden {
            assert!(
                !script.contains(name),
                "{shell} completion offers hidden `{name}`"
            );
        }
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
