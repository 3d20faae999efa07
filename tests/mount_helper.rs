//! The real binary as mount(8) runs it: argv[0] `mount.nfs-gds`, no PATH, a fixture root whose
//! `mount.nfs`, `modprobe` and `umount` are recording fakes.

use std::os::unix::fs::PermissionsExt;

use assert_cmd::prelude::*;
use predicates::prelude::*;

use crate::mount_fixture::*;

const SPEC: &str = "10.0.2.15:/export";
const DIR: &str = "/mnt/gds";
const RDMA_OPTS: &str = "rw,vers=4.2,proto=rdma,port=20049";
/// The run's staging point, as the fake tools record it.
const STAGING: &str = "/run/nfs-gds/stage/RUN/mnt";

/// The table after mount.nfs mounted over RDMA at its staging point.
fn mounted_rdma() -> (String, String) {
    with_mount(70, STAGED, "rdma")
}

fn mounted_tcp() -> (String, String) {
    with_mount(70, STAGED, "tcp")
}

/// A ready node whose mount.nfs mounts over RDMA.
fn ready_rdma() -> Fixture {
    let f = Fixture::ready();
    f.staged_then_moved(&mounted_rdma(), DIR);
    f
}

#[test]
fn mounts_verifies_and_exits_0_as_mount8_calls_it() {
    let f = ready_rdma();
    f.scenario("mount.nfs", "stdout", "mount.nfs: fake says hello");
    // Case 2 of the VM capture: an fstab entry with _netdev and the dotted policy alias.
    f.helper()
        .args([SPEC, DIR, "-o", "rw,vers=4.2,gds.policy=enforce,_netdev"])
        .assert()
        .code(0)
        .stdout("mount.nfs: fake says hello\n")
        .stderr("");
    assert_eq!(
        f.record("mount.nfs"),
        [format!("{SPEC}|{STAGING}|-n|-o|{RDMA_OPTS}|")]
    );
    assert_eq!(f.record("mount"), [format!("--move|{STAGING}|{DIR}|")]);
    assert!(f.record("umount").is_empty());
    assert!(
        f.record("modprobe").is_empty(),
        "rpcrdma was already loaded"
    );
}

#[test]
fn children_get_a_fixed_path_when_mount8_removed_it() {
    let f = ready_rdma();
    f.helper().args([SPEC, DIR]).assert().code(0);
    assert_eq!(
        f.recorded_path("mount.nfs"),
        ["/usr/sbin:/sbin:/usr/bin:/bin"]
    );
}

#[test]
fn flags_pass_to_mount_nfs_but_never_t_or_n() {
    let f = ready_rdma();
    f.write("proc/1/ns/mnt", "");
    f.helper()
        .args([
            "-s",
            "-n",
            "-v",
            "-N",
            "/proc/1/ns/mnt",
            "-t",
            "nfs-gds",
            SPEC,
            DIR,
            "-o",
            "ro,nosuid",
            "-o",
            "hard",
        ])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(format!(
            "nfs-gds: mounted {SPEC} on {DIR} (mount id 70): runs over rdma, proto=rdma, port=20049"
        )));
    assert_eq!(
        f.record("mount.nfs"),
        [format!(
            "{SPEC}|{STAGING}|-s|-n|-v|-o|ro,nosuid,hard,vers=4.2,proto=rdma,port=20049|"
        )]
    );
}

#[test]
fn the_namespace_of_minus_n_must_exist() {
    let f = ready_rdma();
    f.helper()
        .args([SPEC, DIR, "-N", "4242"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("cannot open mount namespace")
                .and(predicate::str::contains("proc/4242/ns/mnt")),
        );
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn the_subcommand_form_behaves_the_same() {
    let f = ready_rdma();
    f.nfs_gds()
        .args(["mount", SPEC, DIR, "-o", "rw"])
        .assert()
        .code(0);
    assert_eq!(
        f.record("mount.nfs"),
        [format!("{SPEC}|{STAGING}|-n|-o|{RDMA_OPTS}|")]
    );
}

#[test]
fn usage_errors_exit_1_and_mount_nothing() {
    let f = ready_rdma();
    for (args, message) in [
        (vec![SPEC], "expected SPEC and DIR, got 1 argument(s)"),
        (vec![SPEC, DIR, "-x"], "unknown flag -x"),
        (vec![SPEC, DIR, "-o"], "flag -o needs a value"),
        (
            vec![SPEC, DIR, "-t", "nfs"],
            "-t nfs: this helper mounts type nfs-gds only",
        ),
        (vec!["srv", DIR], "mount source \"srv\" is not SERVER:/PATH"),
        (
            vec!["fe80::1:/x", DIR],
            "put an IPv6 server address in brackets",
        ),
        (
            vec![SPEC, DIR, "-o", "rw,proto=tcp"],
            "option proto=tcp: nfs-gds mounts only over RDMA",
        ),
        (
            vec![SPEC, DIR, "-o", "udp"],
            "option udp: nfs-gds mounts only over RDMA",
        ),
        (
            vec![SPEC, DIR, "-o", "bg"],
            "option bg: mount.nfs would fork",
        ),
        (
            vec![SPEC, DIR, "-o", "vers=3,mountproto=rdma"],
            "option mountproto=rdma",
        ),
        (
            vec![SPEC, DIR, "-o", "gds_policy=loud"],
            "option gds_policy=loud: \"loud\" is not a policy level",
        ),
        (
            vec![SPEC, DIR, "-o", "gds_wait=soon"],
            "option gds_wait=soon",
        ),
        (
            vec![SPEC, DIR, "-o", "gds_polcy=warn"],
            "unknown nfs-gds option",
        ),
        (vec![SPEC, DIR, "-o", "vers=2"], "option vers=2"),
        (
            vec![SPEC, DIR, "-o", "vers=4.1,nfsvers=4.2"],
            "contradict each other",
        ),
    ] {
        f.helper()
            .args(&args)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(message));
    }
    f.nfs_gds()
        .args(["mount", "--bogus", SPEC])
        .assert()
        .code(1);
    f.nfs_gds()
        .args(["mount", SPEC, DIR, "--root"])
        .assert()
        .code(1);
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn help_and_version_exit_0() {
    let f = Fixture::ready();
    f.helper()
        .arg("-h")
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("Usage: mount.nfs-gds SPEC DIR"));
    f.helper()
        .arg("-V")
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("mount.nfs-gds (nfs-gds "));
}

#[test]
fn without_cap_sys_admin_only_fake_is_allowed() {
    let f = ready_rdma();
    f.write(
        "proc/self/status",
        "Name:\tmount.nfs-gds\nCapEff:\t0000000000000000\n",
    );
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("mounting needs CAP_SYS_ADMIN"));
    f.helper().args([SPEC, DIR, "-f"]).assert().code(0);
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn fake_runs_every_check_and_mounts_nothing() {
    let f = ready_rdma();
    f.write("proc/modules", "nvidia_fs 262144 0 - Live 0x0 (OE)\n");
    f.write("proc/kallsyms", "");
    f.helper()
        .args([SPEC, DIR, "-f", "-v", "-o", "rw,_netdev"])
        .assert()
        .code(0)
        .stdout(
            predicate::str::starts_with(format!("nfs-gds mount {SPEC} on {DIR}: READY\n"))
                .and(predicate::str::contains("  PASS     transport-trap"))
                .and(predicate::str::contains(format!(
                    "  load:    {}/usr/sbin/modprobe rpcrdma\n",
                    f.root().display()
                )))
                .and(predicate::str::contains(format!(
                    "  mount:   {}/usr/sbin/mount.nfs {SPEC} /run/nfs-gds/stage/RUN/mnt -n -v -o {RDMA_OPTS}\n",
                    f.root().display()
                ))),
        );
    for tool in ["mount.nfs", "modprobe", "umount", "mount"] {
        assert!(f.record(tool).is_empty(), "{tool} ran under -f");
    }
}

#[test]
fn fake_plan_lines_cannot_be_forged_by_the_dir_or_the_options() {
    let f = ready_rdma();
    let dir =
        "/mnt/gds\nnfs-gds: mounted 10.0.2.15:/export on /mnt/gds (mount id 70): runs over rdma";
    // `-f` looks at DIR as the real run does: it is there.
    std::fs::create_dir_all(f.root().join(&dir[1..])).unwrap();
    let out = f
        .helper()
        .args([
            SPEC,
            dir,
            "-f",
            "-o",
            "rw,context=\"\u{1b}[2J\u{1b}]0;owned\u{7}\"",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for line in stdout.lines().chain(stderr.lines()) {
        assert!(!line.starts_with("nfs-gds: mounted"), "forged: {line}");
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{7}'),
            "raw escape: {line:?}"
        );
    }
    assert!(
        stdout.contains("/mnt/gds\\nnfs-gds: mounted") && stdout.contains("\\u{1b}[2J"),
        "{stdout}"
    );
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn fake_checks_dir_as_the_real_run_does() {
    let f = ready_rdma();
    f.write("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    for (dir, why) in [
        ("/nonexistent", "does not exist"),
        ("/etc/passwd", "is not a directory"),
    ] {
        for fake in [true, false] {
            let mut args = vec![SPEC, dir];
            if fake {
                args.push("-f");
            }
            let out = f.helper().args(&args).output().unwrap();
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(out.status.code(), Some(32), "{args:?}: {stderr}");
            assert_eq!(
                stderr,
                format!("nfs-gds: mount point {dir} {why}; nothing was mounted\n"),
                "{args:?}"
            );
            assert!(out.stdout.is_empty(), "{args:?}: a plan was printed");
        }
    }
    for tool in ["mount.nfs", "modprobe", "umount"] {
        assert!(f.record(tool).is_empty(), "{tool} ran");
    }
}

#[test]
fn a_failing_precheck_refuses_with_one_line_per_check() {
    let f = ready_rdma();
    f.remove("sys/module/nvidia_fs");
    f.remove("dev/nvidia-fs0");
    let out = f
        .helper()
        .args([SPEC, DIR])
        .assert()
        .code(32)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[0],
        format!("nfs-gds: REFUSED to mount {SPEC} on {DIR}: 1 check failed under policy enforce; nothing was mounted")
    );
    assert!(
        lines[1].starts_with("nfs-gds: FAIL nvidia-fs-loaded [enforce]: nvidia_fs is not loaded"),
        "{err}"
    );
    assert!(lines[1].contains(" | fix: load it"), "{err}");
    assert_eq!(
        lines[2],
        "nfs-gds: run `nfs-gds doctor` for the full diagnosis and the fix for this node's stack"
    );
    assert_eq!(lines.len(), 3, "{err}");
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn gds_policy_warn_mounts_anyway() {
    let f = ready_rdma();
    f.remove("sys/module/nvidia_fs");
    f.helper()
        .args([SPEC, DIR, "-o", "rw,gds_policy=warn"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "WARNING: mounting 10.0.2.15:/export on /mnt/gds although 1 check failed (policy warn)",
        ));
    assert_eq!(f.record("mount.nfs").len(), 1);
}

#[test]
fn the_transport_trap_refuses_before_mounting() {
    let f = ready_rdma();
    f.table(
        &format!("{BEFORE}{}", nfs_info(40, "/mnt/tcp", "tcp")),
        &format!("{BEFORE_STATS}{}", nfs_stats("/mnt/tcp", "tcp")),
    );
    f.helper()
        .args([SPEC, DIR, "-o", "rw,vers=4.2"])
        .assert()
        .code(32)
        .stderr(
            predicate::str::contains("nfs-gds: FAIL transport-trap [enforce]: 10.0.2.15 already has an NFSv4 mount over tcp (/mnt/tcp)")
                .and(predicate::str::contains("fix: unmount the non-RDMA NFSv4 mounts of 10.0.2.15 first (`umount /mnt/tcp`)")),
        );
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn a_tcp_mount_is_unmounted_again_and_refused() {
    let f = Fixture::ready();
    f.staged_then_moved(&mounted_tcp(), DIR);
    f.scenario_table("umount", &(BEFORE.to_string(), BEFORE_STATS.to_string()));
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(32)
        .stderr(
            predicate::str::contains(format!("nfs-gds: REFUSED {SPEC} on {DIR}: the new mount failed 2 checks under policy enforce; it was unmounted before it reached {DIR}, where nothing was mounted"))
                .and(predicate::str::contains("nfs-gds: FAIL mount-transport [enforce]: /mnt/gds runs over tcp, not RDMA"))
                .and(predicate::str::contains("evidence: mount id: 70; mountstats: xprt: tcp 0 0 2"))
                .and(predicate::str::contains("nfs-gds: FAIL mount-options [enforce]: the options of /mnt/gds say proto=tcp instead of rdma and port 2049 instead of 20049")),
        );
    assert_eq!(f.record("umount"), [format!("{STAGING}|")]);
    assert!(f.record("mount").is_empty(), "never moved onto DIR");
}

#[test]
fn a_failed_unmount_after_a_refusal_says_what_to_run() {
    let f = Fixture::ready();
    f.staged_then_moved(&mounted_tcp(), DIR);
    f.scenario("umount", "exit", "32");
    f.scenario("umount", "stderr", "umount: target is busy.");
    let umount = f.root().join("usr/bin/umount");
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(32)
        .stderr(
            predicate::str::contains(format!(
                "; it never reached {DIR}, but UNMOUNTING IT FAILED"
            ))
            .and(predicate::str::contains("umount: target is busy."))
            .and(predicate::str::contains(format!(
                "nfs-gds: the refused mount stays below /run/nfs-gds/stage (`{} /run/nfs-gds/stage/",
                umount.display(),
            )))
            .and(predicate::str::contains(
                "/mnt` failed (exit status: 32)); the next nfs-gds helper or agent run removes it, or unmount it by hand",
            )),
        );
    assert!(f.record("mount").is_empty(), "never moved onto DIR");
}

#[test]
fn already_mounted_is_verified_not_stacked_and_never_unmounted() {
    let f = Fixture::ready();
    let (info, stats) = with_mount(70, DIR, "rdma");
    f.table(&info, &stats);
    // mount.nfs mounts a second copy of the same superblock (device 0:50) at its staging point.
    f.scenario_table(
        "mount.nfs",
        &(
            format!("{info}{}", nfs_info(71, STAGED, "rdma")),
            format!("{stats}{}", nfs_stats(STAGED, "rdma")),
        ),
    );
    f.scenario_table("umount", &(info, stats));
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "nfs-gds: /mnt/gds was already mounted (mount id 70, 10.0.2.15:/export) and nfs-gds stacks no second copy of it; verifying that mount",
        ));
    assert_eq!(f.record("mount.nfs").len(), 1);
    assert_eq!(f.record("umount"), [format!("{STAGING}|")], "only the copy");
    assert!(f.record("mount").is_empty(), "nothing moved onto DIR");
}

#[test]
fn a_mount_nfs_failure_is_passed_on_unchanged() {
    let f = Fixture::ready();
    f.scenario("mount.nfs", "exit", "32");
    f.scenario("mount.nfs", "stderr", "mount.nfs: Connection refused");
    f.helper().args([SPEC, DIR]).assert().code(32).stderr(
        predicate::str::contains("mount.nfs: Connection refused").and(predicate::str::contains(
            "usr/sbin/mount.nfs failed (exit status 32); nothing was mounted on /mnt/gds",
        )),
    );
}

#[test]
fn rpcrdma_is_loaded_with_modprobe_before_the_checks() {
    let f = ready_rdma();
    f.write("proc/modules", "nvidia_fs 262144 0 - Live 0x0 (OE)\n");
    f.write("proc/kallsyms", "");
    f.remove("sys/module/rpcrdma");
    f.scenario("modprobe", "modules", MODULES_WITH_RPCRDMA);
    f.scenario("modprobe", "kallsyms", &loaded_kallsyms());
    f.helper().args([SPEC, DIR]).assert().code(0).stderr(
        // The loaded module exists now but its build-id was not recorded: unproven, not refused.
        predicate::str::contains("WARN rpcrdma-fresh [enforce]"),
    );
    assert_eq!(f.record("modprobe"), ["rpcrdma|"]);
    assert_eq!(f.record("mount.nfs").len(), 1);
}

#[test]
fn remount_is_passed_through_and_the_existing_mount_verified() {
    let f = Fixture::ready();
    let (info, stats) = with_mount(70, DIR, "rdma");
    f.table(&info, &stats);
    f.helper()
        .args([SPEC, DIR, "-o", "rw,remount,_netdev"])
        .assert()
        .code(0);
    assert_eq!(
        f.record("mount.nfs"),
        [format!("{SPEC}|{DIR}|-o|rw,remount|")]
    );
    let (info, stats) = with_mount(70, DIR, "tcp");
    f.table(&info, &stats);
    f.helper()
        .args([SPEC, DIR, "-o", "rw,remount"])
        .assert()
        .code(32)
        .stderr(predicate::str::contains("so nfs-gds leaves it mounted"));
    assert!(f.record("umount").is_empty());
}

/// `-f -v` with the mount(2) backend: the verbose line is mount(2)'s own call, with its flags in
/// mount(8)'s words, and no line about options for a mount.nfs that is not used.
#[test]
fn the_verbose_plan_speaks_of_the_backend_in_use_only() {
    let f = ready_rdma();
    f.remove("usr/sbin/mount.nfs");
    let o = f
        .helper()
        .args([SPEC, DIR, "-f", "-v", "-o", "ro,nosuid"])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let all = format!("{out}{err}");
    assert!(!all.contains("mount.nfs:"), "{all}");
    assert!(!all.contains("MountFlags"), "{all}");
    assert!(
        err.contains("mount call: mount(2) source=10.0.2.15:/export target=/mnt/gds fstype=nfs4 flags=ro,nosuid data="),
        "{err}"
    );
    // With mount.nfs installed, its command line.
    let f = ready_rdma();
    let o = f.helper().args([SPEC, DIR, "-f", "-v"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("mount call: "), "{err}");
    assert!(
        err.contains("/usr/sbin/mount.nfs 10.0.2.15:/export /mnt/gds ")
            && err.contains(" -o vers=4.2,proto=rdma,port=20049 (options not passed on: none)"),
        "{err}"
    );
}

#[test]
fn without_mount_nfs_the_syscall_backend_is_planned_but_never_run_below_a_root() {
    let f = ready_rdma();
    f.remove("usr/sbin/mount.nfs");
    f.helper()
        .args([SPEC, DIR, "-f"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "  mount:   mount(2) source=10.0.2.15:/export target=/run/nfs-gds/stage/RUN/mnt fstype=nfs4 flags=(none) data=vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n",
        ));
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the mount(2) backend cannot mount below the fixture root",
        ));
    f.policy("backend = \"mount-nfs\"\n");
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("mount.nfs is not installed"));
}

#[test]
fn a_missing_mount_table_is_a_system_error() {
    let f = ready_rdma();
    f.remove("proc/self/mountinfo");
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "proc/self/mountinfo does not exist",
        ));
}

#[test]
fn policy_file_errors_name_file_line_and_column() {
    let f = ready_rdma();
    let p = f.policy("default = \"warn\"\n\n[checks]\nmount-transprot = \"off\"\n");
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "nfs-gds: {}:4:1: unknown check id `mount-transprot`",
            p.display()
        )));
    f.policy("default = \"warn\"\nenforce = false\n");
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(":2:1: unknown field `enforce`"));
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn a_group_or_world_writable_policy_is_refused() {
    let f = ready_rdma();
    let p = f.policy("default = \"off\"\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).unwrap();
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is writable by its group (mode 0664): refusing it",
        ));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(p.parent().unwrap(), std::fs::Permissions::from_mode(0o777)).unwrap();
    f.helper()
        .args([SPEC, DIR])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is writable by its group and everyone",
        ));
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn the_policy_file_and_a_mount_rule_decide_levels() {
    let f = ready_rdma();
    f.remove("sys/module/nvidia_fs");
    f.policy("[[mount]]\ntarget = \"/mnt/gds\"\ndefault = \"warn\"\n");
    f.helper().args([SPEC, DIR]).assert().code(0);
    // gds_policy= beats the file.
    f.helper()
        .args([SPEC, DIR, "-o", "gds_policy=enforce"])
        .assert()
        .code(32);
    // An explicit config file that does not exist is an error; NFS_GDS_CONFIG names one.
    f.helper()
        .env("NFS_GDS_CONFIG", f.root().join("nope.toml"))
        .args([SPEC, DIR])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("nope.toml: no such policy file"));
}

#[test]
fn ipv6_servers_get_rdma6() {
    let f = ready_rdma();
    f.helper()
        .args(["[fe80::1]:/export", DIR, "-f"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "-o vers=4.2,proto=rdma6,port=20049",
        ));
}

#[test]
fn the_shipped_fstab_lines_and_mount_unit_are_accepted() {
    let f = ready_rdma();
    let fstab = include_str!("../contrib/fstab.example");
    let entries: Vec<Vec<&str>> = fstab
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(entries.len(), 3);
    let unit = include_str!("../contrib/systemd/mnt-data.mount");
    let value = |key: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in the unit"))
    };
    let mut cases: Vec<(String, String, String)> = entries
        .iter()
        .map(|e| {
            assert_eq!(e[2], "nfs-gds");
            assert!(e[3].split(',').any(|o| o == "_netdev"), "{e:?}");
            assert!(
                e[3].split(',')
                    .any(|o| o.starts_with("x-systemd.mount-timeout=")),
                "systemd's 90 s default is shorter than mount.nfs's retry: {e:?}"
            );
            (e[0].to_string(), e[1].to_string(), e[3].to_string())
        })
        .collect();
    assert_eq!(value("Type="), "nfs-gds");
    cases.push((
        value("What=").to_string(),
        value("Where=").to_string(),
        value("Options=").to_string(),
    ));
    for (spec, dir, opts) in cases {
        // The mount point is there, as it must be for the real mount.
        std::fs::create_dir_all(f.root().join(dir.trim_start_matches('/'))).unwrap();
        f.helper()
            .args([&spec, &dir, "-f", "-o", &opts])
            .assert()
            .code(0)
            .stdout(
                predicate::str::contains(format!("{spec} /run/nfs-gds/stage/RUN/mnt -n -o "))
                    .and(predicate::str::contains(format!("  move:    onto {dir}"))),
            );
    }
}

#[test]
fn every_argv_of_the_vm_capture_is_understood() {
    // argv that util-linux 2.38.1 (Debian 12) gave a helper in a test VM.
    let cases: [&[&str]; 4] = [
        &[SPEC, "/mnt/gds2", "-o", "rw,vers=4.2,gds.policy=warn"],
        &[
            SPEC,
            "/mnt/gds",
            "-o",
            "rw,vers=4.2,gds.policy=warn,_netdev",
        ],
        &[
            SPEC,
            "/mnt/gds",
            "-f",
            "-v",
            "-o",
            "rw,vers=4.2,gds.policy=warn,_netdev",
        ],
        &[
            SPEC,
            "/mnt/gds3",
            "-v",
            "-o",
            "ro,nosuid,vers=4.2,gds.policy=warn",
        ],
    ];
    let f = Fixture::ready();
    for dir in ["mnt/gds2", "mnt/gds3"] {
        std::fs::create_dir_all(f.root().join(dir)).unwrap();
    }
    for args in cases {
        f.helper()
            .args(args)
            .arg("-f")
            .assert()
            .code(0)
            .stdout(predicate::str::contains(
                ",vers=4.2,proto=rdma,port=20049\n",
            ));
    }
    assert!(f.record("mount.nfs").is_empty());
}

#[test]
fn a_kept_mount_is_recorded_and_the_agent_holds_it_to_rdma_after_its_options_say_tcp() {
    // The trap's outcome: mount.nfs succeeds, the kernel reports proto=tcp; warn keeps it.
    let f = Fixture::ready();
    f.staged_then_moved(&mounted_tcp(), DIR);
    f.helper()
        .args([SPEC, DIR, "-o", "rw,gds_policy=warn"])
        .assert()
        .code(0);
    let records: Vec<_> = std::fs::read_dir(f.root().join("run/nfs-gds/mounts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    let record = std::fs::read_to_string(&records[0]).unwrap();
    assert!(record.contains("\"target\": \"/mnt/gds\""), "{record}");
    assert!(record.contains("\"port\": 20049"), "{record}");

    let out = tempfile::tempdir().unwrap();
    let agent = |f: &Fixture| {
        f.nfs_gds()
            .args(["agent", "--once", "--status-file"])
            .arg(out.path().join("status.json"))
            .output()
            .unwrap()
    };
    let o = agent(&f);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("status.json")).unwrap()).unwrap();
    assert_eq!(status["mounts"][0]["meant_by"], "recorded");
    assert_eq!(status["mounts"][0]["protocol"], "tcp");
    assert_eq!(status["mounts"][0]["verdict"], "not-ready");
    // Without the record nothing says the mount was meant for RDMA.
    std::fs::remove_file(&records[0]).unwrap();
    let o = agent(&f);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn a_refused_mount_is_not_recorded() {
    let f = Fixture::ready();
    f.staged_then_moved(&mounted_tcp(), DIR);
    f.scenario_table("umount", &(BEFORE.to_string(), BEFORE_STATS.to_string()));
    f.helper().args([SPEC, DIR, "-o", "rw"]).assert().code(32);
    assert!(!f.root().join("run/nfs-gds/mounts").exists());
}

/// Port 2049 over RDMA, asked with `-o port=` or by the policy's `[options] port`: the mount goes
/// ahead with the one warning that names 20049, the same words `policy check` and `lint` use.
#[test]
fn port_2049_over_rdma_warns_naming_20049_wherever_it_is_asked() {
    let want = "port=2049 with RDMA: the standard NFS/RDMA port is 20049";
    let on_2049 = || {
        let f = Fixture::ready();
        // The kernel prints no port= for 2049, RDMA or not.
        let (info, stats) = mounted_rdma();
        f.staged_then_moved(
            &(
                info.replace(",port=20049", ""),
                stats.replace(",port=20049", ""),
            ),
            DIR,
        );
        f
    };
    let f = on_2049();
    let o = f
        .helper()
        .args([SPEC, DIR, "-o", "vers=4.2,port=2049"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("nfs-gds: WARNING: {want}")), "{err}");

    let f = on_2049();
    let policy = f.policy("[options]\nport = 2049\n");
    let o = f.helper().args([SPEC, DIR]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("nfs-gds: WARNING: {want}")), "{err}");
    assert_eq!(
        f.record("mount.nfs"),
        [format!(
            "{SPEC}|{STAGING}|-n|-o|vers=4.2,proto=rdma,port=2049|"
        )]
    );

    let o = f
        .nfs_gds()
        .args(["policy", "check"])
        .arg(&policy)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("{}: warning: [options] {want}", policy.display())),
        "{err}"
    );

    // The standard port: no warning.
    let f = ready_rdma();
    f.helper()
        .args([SPEC, DIR, "-o", "port=20049"])
        .assert()
        .code(0)
        .stderr("");
}

/// mount.nfs is given the staging point, and its messages name it: the admin sees DIR.
#[test]
fn mount_nfs_messages_name_dir_not_the_staging_point() {
    let f = Fixture::ready();
    f.scenario("mount.nfs", "exit", "32");
    f.scenario(
        "mount.nfs",
        "stderr",
        &format!("mount.nfs: mounting {SPEC} failed, reason given by server: No such file or directory (on {STAGED})"),
    );
    let out = f.helper().args([SPEC, DIR]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(32), "{err}");
    assert!(
        err.contains(&format!("No such file or directory (on {DIR})")),
        "{err}"
    );
    assert!(!err.contains("/run/nfs-gds/stage"), "{err}");
}

/// Where the staging area cannot be made (a read-only or missing `/run` in a CSI image, here a
/// file in its place), the helper says which directory and mounts nothing.
#[test]
fn an_unusable_staging_area_is_named_and_nothing_is_mounted() {
    let f = ready_rdma();
    f.write("run/nfs-gds/stage", "not a directory");
    let out = f.helper().args([SPEC, DIR]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot use the staging area") && err.contains("run/nfs-gds/stage"),
        "{err}"
    );
    assert!(f.record("mount.nfs").is_empty(), "nothing is mounted");
}
