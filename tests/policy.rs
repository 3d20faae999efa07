//! One policy for every command: `check`, `verify`, `doctor` and `agent` load the policy file
//! exactly as the mount helper does, and `check` gives the verdict and exit code that
//! `mount.nfs-gds -f` gives for the node, on every fixture node under every policy.

use crate::support::*;

const SPEC: &str = "10.0.2.15:/export";
const DIR: &str = "/mnt/gds";

/// The nodes of the check tests, by name.
fn nodes() -> Vec<(&'static str, Fixture)> {
    let gpl = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let inbox = ModuleSpec::rpcrdma("6.1.0-50-amd64").hooks(None);
    let mut no_devices = Fixture::new("6.8.0-45-generic");
    no_devices.nvidia_fs("2.28.4", 0);
    no_devices.install_rpcrdma(DKMS, ".ko", &build(&gpl));
    let no_nvidia_fs = Fixture::new("6.8.0-45-generic");
    no_nvidia_fs.install_rpcrdma(DKMS, ".ko", &build(&gpl));
    vec![
        ("ready dkms zst", node_with(&gpl, DKMS, Packing::Zstd)),
        (
            "inbox without hooks",
            node_with(&inbox, INBOX, Packing::XzCrc32),
        ),
        ("nvidia_fs without devices", no_devices),
        ("no nvidia_fs", no_nvidia_fs),
        ("empty node", Fixture::new("6.1.0-50-amd64")),
    ]
}

const POLICIES: &[Option<&str>] = &[
    None,
    Some("[checks]\nnvidia-fs-devices = \"warn\"\n"),
    Some("[checks]\nnvidia-fs-loaded = \"warn\"\nrpcrdma-hooks = \"off\"\n"),
    Some("default = \"warn\"\n"),
    Some("default = \"off\"\n"),
];

fn install(f: &Fixture, policy: Option<&str>) {
    f.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
    );
    f.write(
        "proc/self/mountstats",
        "device /dev/vda mounted on / with fstype ext4\n",
    );
    // The helper's mount point.
    std::fs::create_dir_all(f.path(DIR.trim_start_matches('/'))).unwrap();
    match policy {
        Some(text) => {
            f.write("etc/nfs-gds/nfs-gds.toml", text);
        }
        None => {
            if f.path("etc/nfs-gds/nfs-gds.toml").exists() {
                f.remove("etc/nfs-gds/nfs-gds.toml");
            }
        }
    }
}

#[test]
fn check_and_the_helpers_fake_mount_agree_on_every_node_and_policy() {
    let mut compared = 0;
    for (name, f) in nodes() {
        for policy in POLICIES {
            install(&f, *policy);
            let check = run(&f, &["check"]);
            let fake = run(&f, &["mount", SPEC, DIR, "-f"]);
            let (c, m) = (check.status.code(), fake.status.code());
            let expected_helper = match c {
                Some(0) => Some(0),
                Some(1) => Some(32),
                other => panic!(
                    "{name} / {policy:?}: check exited {other:?}: {}",
                    stderr(&check)
                ),
            };
            assert_eq!(
                m,
                expected_helper,
                "{name} / {policy:?}: check said\n{}\nbut the helper's -f said\n{}{}",
                stdout(&check),
                stdout(&fake),
                stderr(&fake)
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 25);
}

#[test]
fn a_failing_check_at_warn_is_ready_with_warnings_and_says_it_is_not_enforced() {
    let mut f = Fixture::new("6.8.0-45-generic");
    f.nvidia_fs("2.28.4", 0);
    f.install_rpcrdma(
        DKMS,
        ".ko",
        &build(&ModuleSpec::rpcrdma("6.8.0-45-generic")),
    );
    install(&f, None);
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1, "{doc:#}");
    install(&f, Some("[checks]\nnvidia-fs-devices = \"warn\"\n"));
    let (code, doc) = check_json(&f);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["verdict"], "ready-with-warnings");
    assert_eq!(status(&doc, "nvidia-fs-devices"), "fail");
    assert_eq!(check_result(&doc, "nvidia-fs-devices")["level"], "warn");
    assert_eq!(check_result(&doc, "nvidia-fs-loaded")["level"], "enforce");
    let text = stdout(&run(&f, &["check"]));
    assert!(text.contains("[not enforced: policy warn]"), "{text}");
}

#[test]
fn every_command_refuses_a_bad_policy_with_file_line_and_column() {
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    install(&f, Some("default = \"warn\"\nenforce = false\n"));
    let path = f.path("etc/nfs-gds/nfs-gds.toml");
    for args in [
        &["check"][..],
        &["verify", DIR],
        &["doctor"],
        &["agent", "--once", "--status-file"],
    ] {
        let mut argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        if args[0] == "agent" {
            argv.push(f.path("run/status.json").display().to_string());
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = run(&f, &argv);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
        assert!(
            stderr(&out).contains(&format!("{}:2:1: unknown field `enforce`", path.display())),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // --config names another file the same way, for every command.
    let other = f.write("etc/other.toml", "[checks]\nno-such-check = \"off\"\n");
    let out = run(&f, &["--config", other.to_str().unwrap(), "check"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "{}:2:1: unknown check id `no-such-check`",
            other.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn doctor_and_the_agent_judge_under_the_policy() {
    let mut f = Fixture::new("6.8.0-45-generic");
    f.nvidia_fs("2.28.4", 0);
    f.install_rpcrdma(
        DKMS,
        ".ko",
        &build(&ModuleSpec::rpcrdma("6.8.0-45-generic")),
    );
    install(&f, Some("[checks]\nnvidia-fs-devices = \"warn\"\n"));
    let out = run(&f, &["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verdict"], "ready-with-warnings");
    let status = f.path("run/status.json");
    let out = run(
        &f,
        &["agent", "--once", "--status-file", status.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    install(&f, None);
    let out = run(
        &f,
        &["agent", "--once", "--status-file", status.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn policy_check_validates_a_file_before_it_is_installed() {
    let f = Fixture::new("6.1.0-50-amd64");
    let good = f.write(
        "etc/new.toml",
        "default = \"warn\"\n[[mount]]\ntarget = \"/mnt/gds\"\n",
    );
    let out = run(&f, &["policy", "check", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("valid (1 [[mount]] table, default level warn)"),
        "{}",
        stdout(&out)
    );
    let bad = f.write(
        "etc/bad.toml",
        "default = \"warn\"\n\n[checks]\nrpcrdma-hook = \"off\"\n",
    );
    let out = run(&f, &["policy", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "{}:4:1: unknown check id `rpcrdma-hook`",
            bad.display()
        )),
        "{}",
        stderr(&out)
    );
    let out = run(
        &f,
        &["policy", "check", f.path("etc/none.toml").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("none.toml"), "{}", stderr(&out));
}

#[test]
fn policy_check_applies_the_trust_rules_and_reports_every_error() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new("6.1.0-50-amd64");
    let open = f.write("etc/open.toml", "default = \"warn\"\n");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    // A draft: where it lies now is a note, not a reason to call it invalid.
    let out = run(&f, &["policy", "check", open.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("open.toml: valid"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).starts_with("note: ")
            && stderr(&out).contains("is writable by its group and everyone"),
        "{}",
        stderr(&out)
    );
    // In force, the same finding is an error, and `check` refuses the file the same way.
    let out = run(&f, &["--config", open.to_str().unwrap(), "policy", "check"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("is writable by its group and everyone")
            && stderr(&out).contains("open.toml: 1 error\n")
            && !stderr(&out).contains("note"),
        "{}",
        stderr(&out)
    );
    let out = run(&f, &["--config", open.to_str().unwrap(), "check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let text = "default = \"enforced\"\n[checks]\nrpcrdma-hook = \"off\"\ntransport-trap = \"loud\"\n[options]\nport = 0\n";
    let bad = f.write("etc/bad.toml", text);
    let drafted = f.write("etc/drafted.toml", text);
    std::fs::set_permissions(&drafted, std::fs::Permissions::from_mode(0o666)).unwrap();
    // Every syntax and value error, wherever the draft lies.
    for (file, notes) in [(&bad, 0), (&drafted, 1)] {
        let out = run(&f, &["policy", "check", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        for want in [
            ":1:11: unknown variant `enforced`",
            ":3:1: unknown check id `rpcrdma-hook`: did you mean `rpcrdma-hooks`?",
            ":4:18: unknown variant `loud`",
            ":6:8: the port must be between 1 and 65535",
            ".toml: 4 errors",
        ] {
            assert!(err.contains(want), "{want} missing from:\n{err}");
        }
        assert_eq!(err.matches("note: ").count(), notes, "{err}");
    }
}

#[test]
fn policy_check_without_a_policy_file_says_the_built_in_defaults_are_in_force() {
    let f = Fixture::new("6.1.0-50-amd64");
    let out = run(&f, &["policy", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("valid: the built-in defaults are in force ("),
        "{}",
        stdout(&out)
    );
    // Named explicitly, a missing file is still an error.
    let none = f.path("etc/none.toml");
    let out = run(&f, &["--config", none.to_str().unwrap(), "policy", "check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// A command stopped by a bad policy names its first error, by position, and says how to see
/// the rest.
#[test]
fn a_bad_policy_in_force_names_its_first_error_and_points_to_policy_check() {
    let f = Fixture::new("6.1.0-50-amd64");
    let bad = f.write(
        "etc/bad.toml",
        "default = \"enforced\"\n[checks]\nrpcrdma-hook = \"off\"\ntransport-trap = \"loud\"\n[options]\nport = 0\n",
    );
    let out = run(&f, &["--config", bad.to_str().unwrap(), "check"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "nfs-gds: {}:1:11: unknown variant `enforced`",
            bad.display()
        )),
        "{err}"
    );
    assert!(
        err.ends_with(&format!(
            "(and 3 more errors: `nfs-gds policy check {}` lists them all)\n",
            bad.display()
        )),
        "{err}"
    );
}

#[test]
fn policy_show_gives_every_level_and_the_wait_for_a_mount() {
    let f = Fixture::new("6.1.0-50-amd64");
    install(
        &f,
        Some("wait = 5\n[checks]\nrpcrdma-fresh = \"off\"\n[[mount]]\ntarget = \"/mnt/gds\"\ndefault = \"warn\"\nwait = 30\n"),
    );
    let out = run(&f, &["policy", "show"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("wait: 5 s"), "{text}");
    assert!(
        text.contains("  rpcrdma-fresh        off      (default enforce)"),
        "{text}"
    );
    assert!(text.contains("  nvidia-fs-loaded     enforce\n"), "{text}");
    let out = run(&f, &["policy", "show", "--target", DIR, "--source", SPEC]);
    let text = stdout(&out);
    assert!(text.contains("mount: [[mount]] table 1 applies"), "{text}");
    assert!(text.contains("wait: 30 s"), "{text}");
    assert!(
        text.contains("  nvidia-fs-loaded     warn     (default enforce)"),
        "{text}"
    );
    for c in nfs_gds::checks::registry::all() {
        assert!(text.contains(c.id.as_str()), "{} missing: {text}", c.id);
    }
}

/// `policy show` for a mount point or source no `[[mount]]` table could ever match is an error
/// that says why, not a silent "no table matches".
#[test]
fn policy_show_refuses_a_relative_target_and_a_source_without_an_export() {
    let f = Fixture::new("6.1.0-50-amd64");
    install(&f, Some("[[mount]]\ntarget = \"/mnt/gds\"\n"));
    for (args, want) in [
        (["--target", "relative/path"], "must be an absolute path"),
        (["--source", "filer"], "SERVER:/EXPORT"),
    ] {
        let mut all = vec!["policy", "show"];
        all.extend(args);
        let out = run(&f, &all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains(want) && err.contains(args[1]),
            "{args:?}: {err}"
        );
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
}

/// The policy as kubelet publishes a ConfigMap key below `--root`: a 0777 volume directory,
/// `..data` pointing at a timestamped data directory, the key a symlink through `..data`.
#[test]
fn a_policy_from_a_configmap_volume_is_trusted_and_a_looser_one_is_not() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    let chmod = |p: &std::path::Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let data = "..2026_12_01_20_00_00.1234567890";
    f.write(
        format!("etc/nfs-gds/{data}/nfs-gds.toml"),
        "default = \"warn\"\n",
    );
    let vol = f.path("etc/nfs-gds");
    chmod(&vol, 0o777);
    chmod(&vol.join(data), 0o755);
    chmod(&vol.join(data).join("nfs-gds.toml"), 0o644);
    symlink(data, vol.join("..data")).unwrap();
    symlink("..data/nfs-gds.toml", vol.join("nfs-gds.toml")).unwrap();
    let o = run(&f, &["policy", "show"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("warn"), "{}", stdout(&o));
    // Without `..data` pointing at it, the 0777 directory is just a writable directory.
    std::fs::remove_file(vol.join("..data")).unwrap();
    symlink(data, vol.join("..other")).unwrap();
    std::fs::remove_file(vol.join("nfs-gds.toml")).unwrap();
    symlink(format!("{data}/nfs-gds.toml"), vol.join("nfs-gds.toml")).unwrap();
    let o = run(&f, &["policy", "show"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("is writable by"), "{}", stderr(&o));
}

/// A `[[mount]]` source is matched by server identity: a rule written with the address covers
/// the export written by a name of it (below `--root`, the tree's `etc/hosts` resolves names),
/// and a name the tree does not know is only itself.
#[test]
fn policy_show_matches_a_rule_by_server_identity() {
    let f = Fixture::new("6.1.0-50-amd64");
    install(
        &f,
        Some("[[mount]]\nsource = \"10.0.2.15:/export\"\ndefault = \"warn\"\n"),
    );
    f.write("etc/hosts", "127.0.0.1 localhost\n10.0.2.15 filer\n");
    let show = |source: &str| {
        let out = run(&f, &["policy", "show", "--source", source]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    assert!(show("filer:/export/pvc-1").contains("mount: [[mount]] table 1 applies"));
    assert!(show("FILER:/export").contains("mount: [[mount]] table 1 applies"));
    assert!(show("nas:/export").contains("mount: no [[mount]] table matches"));
    assert!(show("filer:/other").contains("mount: no [[mount]] table matches"));
}
