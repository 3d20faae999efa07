//! The command line itself: completions match the real options, and colour is chosen as
//! documented.

use clap::CommandFactory;

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

/// The scripts the packages install (packaging/build-packages.sh writes them with the binary it
/// packages) offer every command and no hidden one, nor `generate-man`, which is for packaging.
#[test]
fn completions_offer_every_command_and_no_hidden_one() {
    let mut cli = nfs_gds::cli::Cli::command();
    cli.build();
    let (hidden, shown): (Vec<&clap::Command>, Vec<&clap::Command>) =
        cli.get_subcommands().partition(|s| s.is_hide_set());
    for shell in ["bash", "zsh", "fish"] {
        let out = nfs_gds().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let script = stdout(&out);
        for sub in &shown {
            assert!(
                script.contains(sub.get_name()),
                "{shell}: no {}",
                sub.get_name()
            );
        }
        for name in hidden.iter().map(|s| s.get_name()).chain(["generate-man"]) {
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

/// What bash's completion offers for `words`, the last one being completed: the script the
/// packages install (`nfs-gds completions bash`) is sourced and its function called as bash calls it (`COMP_WORDS`, `COMP_CWORD`, and the
/// command, current and previous word as arguments).
fn bash_offers(function: &str, words: &[&str]) -> Vec<String> {
    let out = nfs_gds().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("nfs-gds.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; {function} '{}' '{}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words[0],
        words[cword],
    );
    let o = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_the_options_of_every_subcommand() {
    let offers = bash_offers("_nfs__gds", &["nfs-gds", "doctor", "--"]);
    for want in ["--markdown", "--json", "--probe", "--root"] {
        assert!(
            offers.iter().any(|o| o == want),
            "doctor --<TAB>: {offers:?}"
        );
    }
    let offers = bash_offers("_nfs__gds", &["nfs-gds", "inspect-module", "--j"]);
    assert_eq!(offers, ["--json"]);
    let offers = bash_offers("_nfs__gds", &["nfs-gds", "policy", "check", "--"]);
    assert!(offers.iter().any(|o| o == "--config"), "{offers:?}");
    let offers = bash_offers("_nfs__gds", &["nfs-gds", "li"]);
    assert_eq!(offers, ["lint"]);
    // Every subcommand offers at least --help after `--`.
    let mut cli = nfs_gds::cli::Cli::command();
    cli.build();
    for sub in cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let offers = bash_offers("_nfs__gds", &["nfs-gds", sub.get_name(), "--"]);
        assert!(
            !offers.is_empty(),
            "{} --<TAB> offers nothing",
            sub.get_name()
        );
    }
}

#[test]
fn bash_completes_the_mount_helper() {
    let offers = bash_offers("_mount_nfs_gds", &["mount.nfs-gds", "srv:/x", "/mnt", "-"]);
    for want in [
        "-s", "-f", "-n", "-v", "-N", "-o", "-t", "-r", "-w", "-h", "-V", "--help",
    ] {
        assert!(offers.iter().any(|o| o == want), "{want}: {offers:?}");
    }
    let offers = bash_offers(
        "_mount_nfs_gds",
        &["mount.nfs-gds", "srv:/x", "/mnt", "-o", "pro"],
    );
    assert_eq!(offers, ["proto=rdma", "proto=rdma6"]);
    // The versions are NfsVersion's, every one of them, not a list of its own.
    let offers = bash_offers(
        "_mount_nfs_gds",
        &["mount.nfs-gds", "srv:/x", "/mnt", "-o", "vers="],
    );
    assert_eq!(
        offers,
        ["vers=3", "vers=4", "vers=4.0", "vers=4.1", "vers=4.2"]
    );
    // What the helper refuses is never offered.
    let offers = bash_offers(
        "_mount_nfs_gds",
        &["mount.nfs-gds", "srv:/x", "/mnt", "-o", "b"],
    );
    assert!(offers.is_empty(), "{offers:?}");
    let offers = bash_offers(
        "_mount_nfs_gds",
        &["mount.nfs-gds", "srv:/x", "/mnt", "-o", "gds_p"],
    );
    assert_eq!(offers.len(), 3, "{offers:?}");
}

/// Every subcommand's help says each default once: clap adds `[default: …]` to an option with
/// a default value, so a doc line must not say it again.
#[test]
fn no_help_says_a_default_twice() {
    use clap::CommandFactory;
    let mut cli = nfs_gds::cli::Cli::command();
    cli.build();
    let names: Vec<String> = cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let out = nfs_gds().args([name.as_str(), "--help"]).output().unwrap();
        let help = stdout(&out);
        for line in help.lines() {
            assert!(
                line.matches("[default:").count() <= 1,
                "{name} --help: {line}"
            );
        }
    }
}

#[test]
fn version_names_the_commit_target_and_features() {
    let out = nfs_gds().arg("--version").output().unwrap();
    let text = stdout(&out);
    let want = format!("nfs-gds {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(text.starts_with(&want), "{text}");
    assert!(
        text.contains(", target x86_64-")
            || text.contains(", target aarch64-")
            || text.contains("-linux-"),
        "{text}"
    );
    let features = if cfg!(feature = "external-tools") {
        "features: external-tools)"
    } else {
        "features: none)"
    };
    assert!(text.trim_end().ends_with(features), "{text}");
    // Built from this checkout: the commit is HEAD's (or `unknown` without git).
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    let commit = text
        .split("(commit ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    match head {
        Ok(h) if h.status.success() => {
            assert_eq!(commit, String::from_utf8_lossy(&h.stdout).trim(), "{text}")
        }
        _ => assert_eq!(commit, "unknown"),
    }
}

#[test]
fn with_json_an_error_is_a_json_object_on_stdout_too() {
    let f = ready_node();
    let bad = f.write("etc/bad.toml", "default = \"loud\"\n");
    for (args, command) in [
        (
            vec!["inspect-module", "--json", "/nonexistent/rpcrdma.ko"],
            "inspect-module",
        ),
        (
            vec!["--config", bad.to_str().unwrap(), "check", "--json"],
            "check",
        ),
        (
            vec!["--config", bad.to_str().unwrap(), "doctor", "--json"],
            "doctor",
        ),
        (
            vec![
                "--config",
                bad.to_str().unwrap(),
                "verify",
                "--json",
                "/mnt",
            ],
            "verify",
        ),
        (vec!["lint", "--json", "/nonexistent/sc.yaml"], "lint"),
    ] {
        let o = run(&f, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&o)));
        assert_eq!(doc["command"], command);
        let error = doc["error"].as_str().unwrap();
        assert!(
            stderr(&o).contains(error),
            "{args:?}: {error} / {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_port_or_a_watch_length_out_of_range_is_refused_with_the_range() {
    for (args, range) in [
        (&["verify", "/mnt/gds", "--port", "0"][..], "1..=65535"),
        (&["verify", "/mnt/gds", "--port", "65536"][..], "1..=65535"),
        (&["watch", "/mnt/gds", "--seconds", "0"][..], "1..=86400"),
        (
            &["watch", "/mnt/gds", "--seconds", "86401"][..],
            "1..=86400",
        ),
    ] {
        let out = nfs_gds().args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let option = args[2];
        assert!(
            err.contains(&format!("for '{option} <")) && err.contains(range),
            "{args:?}: {err}"
        );
    }
}

/// An empty `NFS_GDS_ROOT=` or `NFS_GDS_CONFIG=` is unset, for every command as for the mount
/// helper; a set one is used when the option is not given.
#[test]
fn empty_variables_are_unset_and_completions_need_no_root() {
    let f = Fixture::new("6.1.0-50-amd64");
    let draft = f.write("etc/draft.toml", "default = \"warn\"\n");
    let o = nfs_gds()
        .env("NFS_GDS_ROOT", "")
        .env("NFS_GDS_CONFIG", "")
        .args(["policy", "check"])
        .arg(&draft)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("draft.toml: valid"), "{}", stdout(&o));
    // Set, the variables are used.
    let o = nfs_gds()
        .env("NFS_GDS_ROOT", f.root())
        .env("NFS_GDS_CONFIG", &draft)
        .args(["policy", "show"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with(&format!("policy: {}\n", draft.display())),
        "{}",
        stdout(&o)
    );
    let o = nfs_gds()
        .args(["--root", "/nonexistent/root", "completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("_nfs__gds()"));
}
