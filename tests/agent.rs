//! `nfs-gds agent --once` on fixture nodes: the NFD features file, the Prometheus textfile and
//! the status JSON agree with `check`.

use serde_json::Value;

use crate::support::*;

/// The node's own mount table when the test gave it none: a root filesystem, no NFS.
fn ensure_mount_table(f: &Fixture) {
    if !f.path("proc/self/mountinfo").exists() {
        f.write(
            "proc/self/mountinfo",
            "1 0 254:0 / / rw - ext4 /dev/vda rw\n",
        );
    }
}

/// `agent --once` with its outputs below `out` (`run/status.json` the status).
pub(crate) fn agent_once(f: &Fixture, out: &std::path::Path) -> std::process::Output {
    ensure_mount_table(f);
    nfs_gds()
        .arg("--root")
        .arg(f.root())
        .args(["agent", "--once", "--interval", "30"])
        .arg("--nfd-dir")
        .arg(out.join("features.d"))
        .arg("--textfile-dir")
        .arg(out.join("textfile"))
        .arg("--status-file")
        .arg(out.join("run/status.json"))
        .output()
        .expect("agent runs")
}

#[test]
fn a_ready_node_publishes_ready_everywhere() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let f = node_with(&spec, DKMS, Packing::Zstd);
    let out = tempfile::tempdir().unwrap();
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let features = std::fs::read_to_string(out.path().join("features.d/nfs-gds")).unwrap();
    assert!(
        features.contains("nfs-gds.feature.node.kubernetes.io/ready=true\n"),
        "{features}"
    );
    assert!(features.contains("nfs-gds.feature.node.kubernetes.io/rpcrdma-hooks=pass\n"));
    assert!(features.contains("nfs-gds.feature.node.kubernetes.io/nvidia-fs.version=2.28.4\n"));
    assert!(features.contains("# +expiry-time="));
    let prom = std::fs::read_to_string(out.path().join("textfile/nfs-gds.prom")).unwrap();
    assert!(prom.contains("nfs_gds_ready 1\n"), "{prom}");
    let status: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("run/status.json")).unwrap())
            .unwrap();
    assert_eq!(status["verdict"], "ready");
    assert_eq!(status["command"], "agent");
    // No temporary files are left beside the outputs (NFD would ignore them, but still).
    for dir in ["features.d", "textfile"] {
        let names: Vec<_> = std::fs::read_dir(out.path().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}

#[test]
fn a_node_without_hooks_is_labelled_not_ready() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic").hooks(None);
    let f = node_with(&spec, INBOX, Packing::Plain);
    let out = tempfile::tempdir().unwrap();
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(1));
    let features = std::fs::read_to_string(out.path().join("features.d/nfs-gds")).unwrap();
    assert!(features.contains("/ready=false\n"), "{features}");
    assert!(features.contains("/verdict=not-ready\n"));
    assert!(features.contains("/rpcrdma-hooks=fail\n"));
    let prom = std::fs::read_to_string(out.path().join("textfile/nfs-gds.prom")).unwrap();
    assert!(prom.contains("nfs_gds_ready 0\n"));
    assert!(prom.contains("nfs_gds_check_status{check=\"rpcrdma-hooks\",status=\"fail\"} 1\n"));
    // The same verdict as check.
    let (code, doc) = check_json(&f);
    assert_eq!(code, 1);
    assert_eq!(doc["verdict"], "not-ready");
}

const POD_MOUNT: &str =
    "/var/lib/kubelet/pods/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/volumes/kubernetes.io~nfs/datasets";

/// The host's table: an RDMA mount by hand, and kubelet's mount of the same export that the
/// transport trap put on TCP (its options say proto=tcp; only the policy says it was meant for
/// RDMA), next to the TCP mount that caused it.
pub(crate) fn host_mounts(f: &Fixture) {
    let info = format!(
        "\
1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 1 0:50 / /mnt/scratch rw,relatime - nfs4 10.0.2.15:/datasets rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 1 0:50 / {POD_MOUNT} rw,relatime - nfs4 10.0.2.15:/datasets rw,vers=4.2,proto=tcp,addr=10.0.2.15
42 1 0:51 / /mnt/fast rw,relatime - nfs4 10.0.2.20:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
"
    );
    let stats = format!(
        "\
device /dev/vda mounted on / with fstype ext4
device 10.0.2.15:/datasets mounted on /mnt/scratch with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.15:/datasets mounted on {POD_MOUNT} with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.20:/fast mounted on /mnt/fast with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=20049
\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11
"
    );
    f.write("proc/1/mountinfo", info);
    f.write("proc/1/mountstats", stats);
    // NFS is mounted, so the nfs module is loaded: built without LOCALIO, as Debian's.
    f.write("sys/module/nfs/parameters/enable_ino64", "Y\n");
    // The agent's own namespace, as in a container: an overlay root and nothing else.
    f.write(
        "proc/self/mountinfo",
        "500 400 0:90 / / rw - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n",
    );
    f.write(
        "proc/self/mountstats",
        "device overlay mounted on / with fstype overlay\n",
    );
}

fn status_of(out: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("run/status.json")).unwrap()).unwrap()
}

#[test]
fn the_agent_judges_the_hosts_mounts_and_a_pod_mount_on_tcp_makes_the_node_degraded() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let f = node_with(&spec, DKMS, Packing::Plain);
    host_mounts(&f);
    f.write(
        "etc/nfs-gds/nfs-gds.toml",
        "[[mount]]\nsource = \"10.0.2.15:/datasets\"\n",
    );
    let out = tempfile::tempdir().unwrap();
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("NOT-READY (gds-nfs=degraded; 3 RDMA mounts, 2 not ready)"),
        "{}",
        stdout(&o)
    );
    let status = status_of(out.path());
    assert!(
        status["mount_table"]
            .as_str()
            .unwrap()
            .ends_with("proc/1/mountinfo"),
        "{status:#}"
    );
    let mounts = status["mounts"].as_array().unwrap();
    let points: Vec<_> = mounts
        .iter()
        .map(|m| m["mountpoint"].as_str().unwrap())
        .collect();
    assert_eq!(points, ["/mnt/scratch", POD_MOUNT, "/mnt/fast"]);
    assert_eq!(mounts[1]["pod_uid"], "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    assert_eq!(mounts[1]["volume"], "datasets");
    assert_eq!(mounts[1]["meant_by"], "policy");
    assert_eq!(mounts[1]["verdict"], "not-ready");
    assert_eq!(mounts[2]["verdict"], "ready");
    // The node checks alone pass: it is the mount that makes the node not ready.
    assert!(status["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["status"] != "fail"));

    let features = std::fs::read_to_string(out.path().join("features.d/nfs-gds")).unwrap();
    for label in [
        "/ready=false\n",
        "/gds-nfs=degraded\n",
        "/rdma-mounts=3\n",
        "/rdma-mounts-not-ready=2\n",
    ] {
        assert!(features.contains(label), "{label} in {features}");
    }
    let prom = std::fs::read_to_string(out.path().join("textfile/nfs-gds.prom")).unwrap();
    assert!(prom.contains(&format!("nfs_gds_mount_ready{{export=\"10.0.2.15:/datasets\",mountaddr=\"10.0.2.15\",protocol=\"tcp\",mountpoint=\"{POD_MOUNT}\",meant_by=\"policy\",pod_uid=\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",volume=\"datasets\"}} 0\n")), "{prom}");
    assert!(prom.contains("nfs_gds_mount_ready{export=\"10.0.2.20:/fast\",mountaddr=\"10.0.2.20\",protocol=\"rdma\",mountpoint=\"/mnt/fast\",meant_by=\"options\"} 1\n"), "{prom}");
    assert!(prom.contains("nfs_gds_ready 0\n"));
    assert!(!f.path("run/nfs-gds/ready").exists());

    // Without the policy only the mount whose options say RDMA is judged, and it passes.
    f.remove("etc/nfs-gds/nfs-gds.toml");
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(status_of(out.path())["mounts"].as_array().unwrap().len(), 1);
    assert!(std::fs::read_to_string(f.path("run/nfs-gds/ready"))
        .unwrap()
        .starts_with("nfs-gds agent: READY (gds-nfs=ready; 1 RDMA mount, 0 not ready)"));
}

#[test]
fn without_a_pid_1_table_the_agent_reads_its_own() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let f = node_with(&spec, DKMS, Packing::Plain);
    f.write(
        "proc/self/mountinfo",
        "1 0 254:0 / / rw - ext4 /dev/vda rw\n42 1 0:51 / /mnt/fast rw - nfs4 10.0.2.20:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20\n",
    );
    let out = tempfile::tempdir().unwrap();
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let status = status_of(out.path());
    assert!(status["mount_table"]
        .as_str()
        .unwrap()
        .ends_with("proc/self/mountinfo"));
    assert_eq!(status["mounts"][0]["mountpoint"], "/mnt/fast");
}

#[test]
fn a_huge_interval_is_a_usage_error_naming_the_option_not_a_panic() {
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    let out = tempfile::tempdir().unwrap();
    ensure_mount_table(&f);
    for interval in ["4000000000000000000", "100000000000", "86401", "0"] {
        let o = nfs_gds()
            .arg("--root")
            .arg(f.root())
            .args(["agent", "--once", "--interval", interval])
            .arg("--nfd-dir")
            .arg(out.path().join("features.d"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{interval}: {}", stderr(&o));
        assert!(stderr(&o).contains("--interval"), "{}", stderr(&o));
        assert!(!out.path().join("features.d/nfs-gds").exists());
    }
    // The largest accepted interval writes a well-formed expiry line.
    let o = nfs_gds()
        .arg("--root")
        .arg(f.root())
        .args(["agent", "--once", "--interval", "86400"])
        .arg("--nfd-dir")
        .arg(out.path().join("features.d"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let features = std::fs::read_to_string(out.path().join("features.d/nfs-gds")).unwrap();
    let expiry = features.lines().nth(1).unwrap();
    assert!(
        expiry.starts_with("# +expiry-time=") && expiry.ends_with('Z') && expiry.len() == 35,
        "{expiry}"
    );
    assert!(features.contains("\nnfs-gds.feature.node.kubernetes.io/ready=true\n"));
}

#[test]
fn a_symlinked_status_directory_is_refused() {
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    let out = tempfile::tempdir().unwrap();
    let elsewhere = out.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.path().join("run")).unwrap();
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/run is a symbolic link"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn default_outputs_are_written_below_the_root() {
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    ensure_mount_table(&f);
    std::fs::create_dir_all(
        f.root()
            .join("etc/kubernetes/node-feature-discovery/features.d"),
    )
    .unwrap();
    let o = nfs_gds()
        .arg("--root")
        .arg(f.root())
        .args(["agent", "--once"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for rel in [
        "run/nfs-gds/status.json",
        "run/nfs-gds/ready",
        "etc/kubernetes/node-feature-discovery/features.d/nfs-gds",
    ] {
        assert!(f.root().join(rel).is_file(), "{rel}");
    }
    // node_exporter's directory does not exist below the root: no textfile is written anywhere.
    assert!(!f.root().join("var/lib/prometheus").exists());
}

#[test]
fn nvidia_fs_counters_are_published_beside_the_readiness() {
    let spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let f = node_with(&spec, DKMS, Packing::Zstd);
    f.write(
        "proc/driver/nvidia-fs/stats",
        include_str!("fixtures/nvidia-fs/stats-enabled.txt"),
    );
    let out = tempfile::tempdir().unwrap();
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let prom = std::fs::read_to_string(out.path().join("textfile/nfs-gds.prom")).unwrap();
    assert!(prom.contains("nfs_gds_nvfs_io_stats_enabled 1\n"), "{prom}");
    assert!(prom.contains("nfs_gds_nvfs_operations_total{op=\"read\"} 38912\n"));
    assert!(prom.contains("# TYPE nfs_gds_nvfs_bytes_total counter\n"));
    // A stats file of another format is said, not guessed at; the pass still publishes.
    f.write(
        "proc/driver/nvidia-fs/stats",
        "NVFS statistics(ver: 9.0)\nReads : n=many\n",
    );
    let o = agent_once(&f, out.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let prom = std::fs::read_to_string(out.path().join("textfile/nfs-gds.prom")).unwrap();
    assert!(prom.contains("nfs_gds_nvfs_stats_readable 0\n"), "{prom}");
    assert!(!prom.contains("nfs_gds_nvfs_operations_total"));
}

/// `agent --once` with the default outputs below the root, under `umask` (octal).
fn agent_once_defaults(f: &Fixture, umask: &str) -> std::process::Output {
    ensure_mount_table(f);
    let bin = env!("CARGO_BIN_EXE_nfs-gds");
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(bin)
        .arg("--root")
        .arg(f.root())
        .args(["agent", "--once"])
        .output()
        .unwrap()
}

#[test]
fn a_symlinked_run_in_the_tree_leads_no_write_out_of_it() {
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), f.root().join("run")).unwrap();
    let o = agent_once_defaults(&f, "022");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("symbolic link to nothing below the root"),
        "{}",
        stderr(&o)
    );
    let left: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(left.is_empty(), "written outside the root: {left:?}");
}

#[test]
fn the_agents_directory_is_0755_under_umask_000() {
    use std::os::unix::fs::PermissionsExt;
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic"),
        DKMS,
        Packing::Plain,
    );
    let o = agent_once_defaults(&f, "000");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mode = std::fs::metadata(f.root().join("run/nfs-gds"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o755);
    // A second run still accepts it (it is not writable by others).
    let o = agent_once_defaults(&f, "000");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_failed_textfile_write_leaves_no_stale_ready() {
    let ready_spec = ModuleSpec::rpcrdma("6.8.0-45-generic");
    let f = node_with(&ready_spec, DKMS, Packing::Plain);
    let out = tempfile::tempdir().unwrap();
    let ready = out.path().join("run/ready");
    let run = |f: &Fixture| {
        ensure_mount_table(f);
        nfs_gds()
            .arg("--root")
            .arg(f.root())
            .args(["agent", "--once"])
            .arg("--textfile-dir")
            .arg(out.path().join("textfile"))
            .arg("--status-file")
            .arg(out.path().join("run/status.json"))
            .arg("--ready-file")
            .arg(&ready)
            .output()
            .unwrap()
    };
    let o = run(&f);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(ready.is_file());
    // The node turns not ready, and node_exporter's directory cannot be written.
    let f = node_with(
        &ModuleSpec::rpcrdma("6.8.0-45-generic").hooks(None),
        INBOX,
        Packing::Plain,
    );
    std::fs::remove_dir_all(out.path().join("textfile")).unwrap();
    std::fs::write(out.path().join("textfile"), "not a directory").unwrap();
    let o = run(&f);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nfs-gds.prom"), "{}", stderr(&o));
    assert!(
        !ready.exists(),
        "a node that is not ready kept its ready file"
    );
    let status: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("run/status.json")).unwrap())
            .unwrap();
    assert_eq!(status["verdict"], "not-ready");
}
