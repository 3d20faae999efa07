//! `nfs-gds slurm health` and `slurm prolog` against fixture nodes, with a recording `scontrol`
//! below the root: every call slurmctld would get is one line of `record/scontrol.argv`, so
//! each case says how many it costs (none on a healthy node). The NHC check file is run by bash
//! with a `die` of the test's own, as NHC would source it.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::mount_fixture::*;

/// `scontrol show node gpu01` of Slurm 22.05 for `state` and `reason`.
fn show_node(state: &str, reason: Option<&str>) -> String {
    let mut text = format!(
        "NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 \n   AvailableFeatures=gds_nfs\n   ActiveFeatures=gds_nfs\n   State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   Partitions=debug \n"
    );
    if let Some(r) = reason {
        text.push_str(&format!("   Reason={r} [root@2026-12-07T00:03:04]\n"));
    }
    text
}

/// A ready node with a recording `scontrol` that shows `gpu01` in `state` with `reason`.
fn node(state: &str, reason: Option<&str>) -> Fixture {
    let f = Fixture::ready();
    f.executable("usr/bin/scontrol", FAKE_TOOL);
    f.scenario("scontrol", "stdout", &show_node(state, reason));
    f
}

/// A node with no GDS stack at all: no nvidia_fs loaded or installed, no device.
fn remove_gds(f: &Fixture) {
    f.remove("sys/module/nvidia_fs");
    f.remove("dev/nvidia-fs0");
    f.write(
        "proc/modules",
        "rpcrdma 364544 0 - Live 0x0\nsunrpc 692224 1 rpcrdma, Live 0x0\n",
    );
}

fn slurm(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = f.nfs_gds();
    c.arg("slurm").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    assert_cmd::Command::from_std(c)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// `slurm health` for node gpu01 (as slurmd names it).
fn health(f: &Fixture) -> Output {
    slurm(f, &["health"], &[("SLURMD_NODENAME", "gpu01")])
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn drained_record(f: &Fixture) -> std::path::PathBuf {
    f.path("run/nfs-gds/slurm-drained")
}

const SHOW: &str = "show|node|gpu01|";

#[test]
fn a_healthy_node_nfs_gds_did_not_drain_costs_slurmctld_nothing() {
    let f = node("IDLE", None);
    let o = health(&f);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(f.record("scontrol"), Vec::<String>::new());
    assert!(out(&o).contains("ready"), "{}", out(&o));
    assert!(!drained_record(&f).exists());
}

#[test]
fn a_node_that_is_not_ready_is_drained_once_with_a_parsable_reason_and_remembered() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    let o = health(&f);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(
        f.record("scontrol"),
        [
            SHOW,
            "update|NodeName=gpu01|State=DRAIN|Reason=nfs-gds: rpcrdma-hooks rpcrdma|"
        ]
    );
    assert!(
        err(&o).contains("drained node gpu01 (nfs-gds: rpcrdma-hooks rpcrdma)"),
        "{}",
        err(&o)
    );
    let record = std::fs::read_to_string(drained_record(&f)).unwrap();
    assert!(record.contains("node=gpu01\n"), "{record}");
    // Still not ready, and drained by nfs-gds: asked, kept, never drained twice.
    f.scenario(
        "scontrol",
        "stdout",
        &show_node("IDLE+DRAIN", Some("nfs-gds: rpcrdma-hooks rpcrdma")),
    );
    let o = health(&f);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(f.record("scontrol").len(), 3);
    assert_eq!(f.record("scontrol")[2], SHOW);
}

#[test]
fn a_node_drained_for_another_reason_keeps_it() {
    let f = node("IDLE+DRAIN", Some("bad DIMM, ticket 7"));
    f.without_rpcrdma_hooks();
    let o = health(&f);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(f.record("scontrol"), [SHOW]);
    assert!(err(&o).contains("keeps: bad DIMM, ticket 7"), "{}", err(&o));
    assert!(!drained_record(&f).exists());
}

#[test]
fn a_node_ready_again_is_resumed_only_from_a_drain_of_its_own() {
    let f = node("IDLE+DRAIN", Some("nfs-gds: rpcrdma-hooks rpcrdma"));
    f.write("run/nfs-gds/slurm-drained", "node=gpu01\n");
    let o = health(&f);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(
        f.record("scontrol"),
        [SHOW, "update|NodeName=gpu01|State=RESUME|"]
    );
    assert!(err(&o).contains("resumed node gpu01"), "{}", err(&o));
    assert!(!drained_record(&f).exists());
    // The record is gone: the next check asks nothing.
    let o = health(&f);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(f.record("scontrol").len(), 2);

    // An admin drained it meanwhile with a reason of their own: not resumed.
    let f = node("IDLE+DRAIN", Some("NHC: nfs-gds: rpcrdma-hooks rpcrdma"));
    f.write("run/nfs-gds/slurm-drained", "node=gpu01\n");
    let o = health(&f);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(f.record("scontrol"), [SHOW]);
    assert!(err(&o).contains("not resumed"), "{}", err(&o));
    assert!(!drained_record(&f).exists());

    // A reason of ours, but no record that nfs-gds drained it: nothing asked, nothing done.
    let f = node("IDLE+DRAIN", Some("nfs-gds: rpcrdma-hooks rpcrdma"));
    let o = health(&f);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(f.record("scontrol"), Vec::<String>::new());
}

#[test]
fn a_node_without_gds_is_never_drained_even_with_a_hookless_rpcrdma() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    remove_gds(&f);
    let o = health(&f);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(f.record("scontrol"), Vec::<String>::new());
    assert!(out(&o).contains("not a GDS node"), "{}", out(&o));
    // The same node with an nfs-gds line in fstab is a GDS node: drained.
    f.write(
        "etc/fstab",
        "10.0.2.15:/export /mnt/gds nfs-gds vers=4.2,proto=rdma,port=20049 0 0\n",
    );
    let o = health(&f);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(f.record("scontrol").len(), 2, "{:?}", f.record("scontrol"));
}

#[test]
fn warnings_are_logged_and_never_drained() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    f.policy("default = \"warn\"\n");
    let o = health(&f);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("warning: rpcrdma-hooks rpcrdma:"),
        "{}",
        err(&o)
    );
    assert_eq!(f.record("scontrol"), Vec::<String>::new());
}

#[test]
fn a_transport_trap_on_a_gds_mount_names_the_mount() {
    let f = node("MIXED", None);
    let (info, stats) = crate::support::mount_table::with_mount(70, "/mnt/gds", "tcp");
    f.table(&info, &stats);
    f.policy("[[mount]]\nsource = \"10.0.2.15:/export\"\n");
    let o = health(&f);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let calls = f.record("scontrol");
    assert_eq!(calls.len(), 2, "{calls:?}");
    let reason = calls[1]
        .strip_prefix("update|NodeName=gpu01|State=DRAIN|Reason=")
        .and_then(|r| r.strip_suffix('|'))
        .unwrap_or_else(|| panic!("{calls:?}"));
    assert!(reason.starts_with("nfs-gds: "), "{reason}");
    assert!(reason.ends_with(" /mnt/gds"), "{reason}");
}

#[test]
fn no_scontrol_or_no_controller_is_said_and_changes_nothing() {
    let f = Fixture::ready();
    f.without_rpcrdma_hooks();
    let o = health(&f);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("scontrol is not installed"), "{}", err(&o));
    assert!(!drained_record(&f).exists());

    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    f.scenario(
        "scontrol",
        "stderr",
        "slurm_load_node error: Unable to contact slurm controller (connect failure)\n",
    );
    f.scenario("scontrol", "exit", "1\n");
    let o = health(&f);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("Unable to contact slurm controller"),
        "{}",
        err(&o)
    );
    assert_eq!(f.record("scontrol"), [SHOW]);
    assert!(!drained_record(&f).exists());
}

#[test]
fn a_scontrol_that_hangs_is_stopped_within_the_timeout() {
    let f = Fixture::ready();
    f.without_rpcrdma_hooks();
    f.executable("usr/bin/scontrol", "#!/bin/sh\nexec /bin/sleep 60\n");
    let started = Instant::now();
    let o = slurm(
        &f,
        &["health", "--timeout", "2"],
        &[("SLURMD_NODENAME", "gpu01")],
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("did not finish"), "{}", err(&o));
    assert!(!drained_record(&f).exists());
}

#[test]
fn the_node_name_is_slurmds_then_the_option_then_the_short_host_name() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    f.scenario(
        "scontrol",
        "stdout",
        &show_node("IDLE", None).replace("gpu01", "a"),
    );
    slurm(
        &f,
        &["health", "--node-name", "b"],
        &[("SLURMD_NODENAME", "a")],
    );
    assert_eq!(f.record("scontrol")[0], "show|node|a|");
    f.scenario(
        "scontrol",
        "stdout",
        &show_node("IDLE", None).replace("gpu01", "b"),
    );
    slurm(&f, &["health", "--node-name", "b"], &[]);
    assert_eq!(f.record("scontrol")[2], "show|node|b|");
    f.write("proc/sys/kernel/hostname", "gpu01.cluster.example\n");
    f.scenario("scontrol", "stdout", &show_node("IDLE", None));
    slurm(&f, &["health"], &[]);
    assert_eq!(f.record("scontrol")[4], SHOW);
    // A name that would be another argument is refused before anything is asked.
    let o = slurm(&f, &["health", "--node-name", "x State=RESUME"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(f.record("scontrol").len(), 6);
}

#[test]
fn under_nhc_it_prints_the_reason_and_asks_slurmctld_nothing() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    let o = slurm(&f, &["health", "--nhc"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(out(&o), "nfs-gds: rpcrdma-hooks rpcrdma\n");
    assert_eq!(f.record("scontrol"), Vec::<String>::new());
    let f = node("IDLE", None);
    let o = slurm(&f, &["health", "--nhc"], &[]);
    assert_eq!(
        (o.status.code(), out(&o)),
        (Some(0), String::new()),
        "{}",
        err(&o)
    );
}

fn prolog(f: &Fixture, constraints: Option<&str>) -> Output {
    let mut env = vec![("SLURM_JOB_ID", "42"), ("SLURMD_NODENAME", "gpu01")];
    if let Some(c) = constraints {
        env.push(("SLURM_JOB_CONSTRAINTS", c));
    }
    slurm(f, &["prolog"], &env)
}

#[test]
fn the_prolog_fails_a_gds_job_on_a_node_that_is_not_ready_and_passes_every_other() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    let o = prolog(&f, Some("gds_nfs&[rack1|rack2]"));
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("job 42 asks for gds_nfs, but this node is not ready for GDS over NFS: rpcrdma-hooks rpcrdma:"),
        "{}",
        err(&o)
    );
    for other in [None, Some("intel"), Some("gds_nfs_old"), Some("!gds_nfs")] {
        let o = prolog(&f, other);
        assert_eq!(o.status.code(), Some(0), "{other:?}: {}", err(&o));
        assert_eq!(err(&o), "", "{other:?}");
    }
    // The prolog never asks slurmctld.
    assert_eq!(f.record("scontrol"), Vec::<String>::new());
    let ready = node("IDLE", None);
    let o = prolog(&ready, Some("gds_nfs"));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn the_prolog_reads_the_feature_from_the_policy() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    f.policy("[slurm]\nfeature = \"gds\"\n");
    assert_eq!(prolog(&f, Some("gds_nfs")).status.code(), Some(0));
    assert_eq!(prolog(&f, Some("gds*2")).status.code(), Some(1));
}

#[test]
fn a_bad_policy_lets_the_gds_job_start_and_says_why() {
    let f = node("IDLE", None);
    f.without_rpcrdma_hooks();
    f.policy("defualt = \"warn\"\n");
    let o = prolog(&f, Some("gds_nfs"));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("starting job 42 unjudged"), "{}", err(&o));
    assert!(err(&o).contains("nfs-gds.toml:1:1"), "{}", err(&o));
}

#[test]
fn when_unsure_refuse_fails_the_prolog_on_a_node_it_cannot_judge() {
    let f = node("IDLE", None);
    f.remove("proc/self/mountinfo");
    f.policy("[slurm]\nwhen-unsure = \"refuse\"\n");
    let o = prolog(&f, Some("gds_nfs"));
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("cannot judge this node"), "{}", err(&o));
    f.policy("[slurm]\nwhen-unsure = \"start\"\n");
    let o = prolog(&f, Some("gds_nfs"));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

/// Runs `check_nfs_gds ARGS` from the shipped NHC file under bash, with a `die` that prints
/// its message, and a fake `nfs-gds` on PATH that prints `stdout` and exits `code`.
fn nhc(stdout: &str, code: i32, args: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("nfs-gds");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"$@\" > {}\nprintf '%s' '{stdout}'\necho 'detail on stderr' >&2\nexit {code}\n",
            dir.path().join("argv").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/slurm/nfs-gds.nhc");
    let script = format!(
        "die() {{ echo \"DIE $1: $2\"; return \"$1\"; }}\nlog() {{ echo \"LOG $*\"; }}\n. '{}'\ncheck_nfs_gds {args}\necho \"RC $?\"\n",
        file.display()
    );
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    let argv = std::fs::read_to_string(dir.path().join("argv")).unwrap_or_default();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        argv,
    )
}

#[test]
fn the_nhc_check_dies_with_the_reason_only_when_the_node_is_not_ready() {
    let (code, said, argv) = nhc("nfs-gds: rpcrdma-hooks rpcrdma\n", 1, "--timeout 20");
    assert_eq!(code, 0);
    assert!(
        said.contains("DIE 1: nfs-gds: rpcrdma-hooks rpcrdma\n"),
        "{said}"
    );
    assert!(said.ends_with("RC 1\n"), "{said}");
    assert_eq!(argv, "slurm health --nhc --timeout 20\n");

    let (_, said, _) = nhc("", 0, "");
    assert_eq!(said, "RC 0\n");

    // nfs-gds could not judge (a bad policy): logged, not a drain.
    let (_, said, _) = nhc("", 2, "");
    assert!(!said.contains("DIE"), "{said}");
    assert!(said.contains("LOG "), "{said}");
    assert!(said.ends_with("RC 0\n"), "{said}");
}

#[test]
fn the_nhc_check_runs_the_real_binary_on_a_fixture() {
    let f = Fixture::ready();
    f.without_rpcrdma_hooks();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/slurm/nfs-gds.nhc");
    let script = format!(
        "die() {{ echo \"DIE $1: $2\"; return \"$1\"; }}\n. '{}'\nNFS_GDS_NHC_BIN='{}' check_nfs_gds --root '{}'\necho \"RC $?\"\n",
        file.display(),
        env!("CARGO_BIN_EXE_nfs-gds"),
        f.root().display()
    );
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let said = out(&o);
    assert!(
        said.contains("DIE 1: nfs-gds: rpcrdma-hooks rpcrdma\n"),
        "{said}{}",
        err(&o)
    );
}

#[test]
fn policy_check_names_every_error_of_the_slurm_table() {
    let f = Fixture::ready();
    let p = f.write(
        "draft.toml",
        "[slurm]\nfeature = \"gds nfs\"\nwhen-unsure = \"maybe\"\n",
    );
    let o = f
        .nfs_gds()
        .args(["policy", "check"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let said = format!("{}{}", out(&o), err(&o));
    assert!(
        said.contains("draft.toml:2:11: feature \"gds nfs\" is not a Slurm feature name"),
        "{said}"
    );
    assert!(
        said.contains("draft.toml:3:15: unknown variant `maybe`, expected `start` or `refuse`"),
        "{said}"
    );
}

/// A node that turned bad between health checks (the trap on a declared export): the prolog of
/// a GDS job fails it, naming the mount, as the health check would drain it.
#[test]
fn the_prolog_fails_a_gds_job_where_a_declared_export_is_mounted_over_tcp() {
    let f = node("IDLE", None);
    let (info, stats) = crate::support::mount_table::with_mount(70, "/mnt/tcp", "tcp");
    f.table(&info, &stats);
    f.policy("[[mount]]\nsource = \"10.0.2.15:/export\"\n");
    let o = prolog(&f, Some("gds_nfs"));
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("/mnt/tcp"), "{}", err(&o));
}
