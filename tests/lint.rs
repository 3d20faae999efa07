//! `nfs-gds lint`: the manifests an operator writes, judged before they are applied — the
//! shipped examples (the GPU Operator ClusterPolicy field guides prescribe, an RDMA StorageClass
//! and PV) pass, and the wrong ones fail at the line that is wrong.

use std::path::{Path, PathBuf};

use crate::support::*;

fn file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn lint(files: &[&str], extra: &[&str]) -> std::process::Output {
    nfs_gds()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("lint")
        .args(extra)
        .args(files)
        .output()
        .unwrap()
}

/// `lint` of the file `rel` with `from` replaced by `to`.
fn lint_edited(rel: &str, from: &str, to: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(file(rel)).unwrap();
    assert!(text.contains(from), "{rel} has no {from}");
    let path = dir.path().join("edited.yaml");
    std::fs::write(&path, text.replace(from, to)).unwrap();
    lint(&[path.to_str().unwrap()], &[])
}

#[test]
fn the_examples_pass_and_say_the_helper_is_bypassed() {
    let o = lint(
        &[
            "deploy/examples/lint/clusterpolicy.yaml",
            "deploy/examples/lint/storageclass-rdma.yaml",
            "deploy/examples/lint/pv-rdma.yaml",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("PASS (3 objects judged, 0 failed, 0 warnings)"),
        "{out}"
    );
    assert!(out.contains("never through mount.nfs-gds"), "{out}");
    assert!(out.contains("nfs-gds agent"), "{out}");
}

#[test]
fn a_wrong_cluster_policy_fails_at_each_wrong_line() {
    let o = lint(&["tests/fixtures/lint/clusterpolicy-wrong.yaml"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    for (line, rule) in [
        (7, "cluster-policy-open-modules"),
        (9, "cluster-policy-rdma"),
        (11, "cluster-policy-gds"),
    ] {
        let want = format!("tests/fixtures/lint/clusterpolicy-wrong.yaml:{line}: fail:");
        assert!(
            out.lines()
                .any(|l| l.starts_with(&want) && l.ends_with(&format!("[{rule}]"))),
            "{want} … [{rule}] missing:\n{out}"
        );
    }
}

#[test]
fn a_cluster_policy_without_host_mofed_warns_and_passes() {
    let o = lint_edited(
        "deploy/examples/lint/clusterpolicy.yaml",
        "useHostMofed: true",
        "useHostMofed: false",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains(":12: warn:"), "{}", stdout(&o));
}

#[test]
fn the_network_operator_switch_must_be_on() {
    let o = lint(&["tests/fixtures/lint/nicclusterpolicy.yaml"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("nicclusterpolicy.yaml:13: fail: NicClusterPolicy nic-cluster-policy: ENABLE_NFSRDMA is false"),
        "{}",
        stdout(&o)
    );
    let o = lint_edited(
        "tests/fixtures/lint/nicclusterpolicy.yaml",
        "value: \"false\"",
        "value: \"true\"",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn wrong_volumes_fail_with_file_and_line() {
    let o = lint(&["tests/fixtures/lint/volumes-wrong.yaml"], &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["command"], "lint");
    assert_eq!(v["verdict"], "fail");
    let found: Vec<(u64, &str, &str)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["file"], "tests/fixtures/lint/volumes-wrong.yaml");
            (
                f["line"].as_u64().unwrap(),
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
            )
        })
        .collect();
    for want in [
        (3, "note", "volume-not-gds"),
        (13, "fail", "transport-trap"),
        (21, "warn", "transport-trap"),
        (36, "fail", "volume-proto"),
        (37, "warn", "volume-port"),
        (46, "fail", "volume-vers"),
    ] {
        assert!(found.contains(&want), "{want:?} not in {found:?}");
    }
}

#[test]
fn a_gds_volume_without_rdma_or_version_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pv.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: x\n  annotations: {nfs-gds/gds: \"true\"}\nspec:\n  mountOptions: [hard]\n  nfs: {server: s, path: /e}\n",
    )
    .unwrap();
    let o = lint(&[path.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains(":7: fail: PersistentVolume x: its mountOptions do not ask for RDMA"),
        "{out}"
    );
    assert!(
        out.contains(":7: warn: PersistentVolume x: no vers="),
        "{out}"
    );
}

/// `nconnect=` beyond the kernel's 16 fails (the kernel refuses the mount), and so do two
/// different versions in one list (the helper refuses them); port 2049 warns, naming 20049.
#[test]
fn too_many_connections_and_two_versions_fail_and_port_2049_warns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sc.yaml");
    std::fs::write(
        &path,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: x}\nprovisioner: nfs.csi.k8s.io\nparameters: {server: s, share: /e}\nmountOptions:\n  - proto=rdma\n  - vers=4.2\n  - nconnect=32\n  - vers=3\n  - port=2049\n",
    )
    .unwrap();
    let o = lint(&[path.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    for want in [
        ":9: fail: StorageClass x: nconnect=32: the kernel takes 1 to 16 connections",
        ":10: fail: StorageClass x: options vers=4.2 and vers=3 contradict each other",
        ":11: warn: StorageClass x: port=2049 with RDMA: the standard NFS/RDMA port is 20049",
    ] {
        assert!(out.contains(want), "{want} missing:\n{out}");
    }
}

#[test]
fn unreadable_or_broken_files_exit_2_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "kind: StorageClass\nmountOptions: [a, b\n").unwrap();
    let o = lint(&[bad.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.yaml:"), "{}", stderr(&o));
    assert!(stderr(&o).contains("not YAML"), "{}", stderr(&o));
    let o = lint(&["/nonexistent/x.yaml"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/x.yaml"), "{}", stderr(&o));
    // A FIFO no one writes is not waited on: it reads as empty.
    let fifo = dir.path().join("fifo.yaml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let o = lint(&[fifo.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("nothing judged (0 documents read;"),
        "{}",
        stdout(&o)
    );
}

/// `lint` with `input` on a pipe as its stdin.
fn lint_piped(args: &[&str], input: Vec<u8>) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .arg("lint")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // The writer may meet a closed pipe when lint stops at its cap.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

#[test]
fn a_pipe_is_read_as_dash_or_dev_stdin_up_to_its_cap() {
    let pv = std::fs::read(file("deploy/examples/lint/pv-rdma.yaml")).unwrap();
    for name in ["-", "/dev/stdin"] {
        let o = lint_piped(&[name], pv.clone());
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert!(
            stdout(&o).ends_with("nfs-gds lint: PASS (1 object judged, 0 failed, 0 warnings)\n"),
            "{name}: {}",
            stdout(&o)
        );
    }
    let shown = lint_piped(&["-"], pv);
    assert!(stdout(&shown).starts_with("stdin:"), "{}", stdout(&shown));
    // An endless stream stops at the cap, named.
    let o = lint_piped(&["-"], vec![b'#'; (64 << 20) + 1]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "nfs-gds: stdin is larger than 64 MiB, more than any set of manifests should be: not reading it\n"
    );
}

#[test]
fn a_run_that_judged_nothing_says_so_and_what_it_read() {
    let objects = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n";
    let o = lint_piped(&["-"], objects.into());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "nfs-gds lint: nothing judged (2 documents read; no ClusterPolicy, NicClusterPolicy, or NFS StorageClass or PersistentVolume)\n"
    );
    let o = lint_piped(&["-", "--json"], objects.into());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["judged"], 0, "{doc}");
    assert_eq!(doc["documents"], 2, "{doc}");
}

#[test]
fn a_misspelt_annotation_or_a_listed_path_no_container_mounts_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(
        &path,
        "apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    metadata:
      annotations:
        nfs-gds/gds-volume: /data
        nfs-gds/gds-volumes: /dat,/data
    spec:
      containers:
        - name: t
          volumeMounts:
            - name: d
              mountPath: /data/
",
    )
    .unwrap();
    let o = lint(&[path.to_str().unwrap()], &[]);
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("job.yaml:9: fail: Job train: unknown annotation"),
        "{said}"
    );
    assert!(said.contains("did you mean nfs-gds/gds-volumes?"), "{said}");
    assert!(
        said.contains("job.yaml:10: fail: Job train: nfs-gds/gds-volumes"),
        "{said}"
    );
    assert!(
        said.contains("nfs-gds/gds-volumes names /dat, where no volume is mounted"),
        "{said}"
    );
    assert!(!said.contains("names /data,"), "{said}");
}

/// A pod's `nfs-gds/gds` that is neither yes nor no is an error at its line: the container hook
/// would take the pod as marked for GDS.
#[test]
fn a_gds_annotation_neither_yes_nor_no_fails_in_a_pod_template() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pod.yaml");
    for (value, fails) in [("maybe", true), ("Off", false), ("Y", false)] {
        std::fs::write(
            &path,
            format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    nfs-gds/gds: \"{value}\"\nspec:\n  containers: [{{name: c}}]\n"),
        )
        .unwrap();
        let o = lint(&[path.to_str().unwrap()], &[]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(i32::from(fails)), "{value}: {out}");
        assert_eq!(
            out.contains(&format!(
                "pod.yaml:6: fail: Pod p: nfs-gds/gds is \"{value}\", which is neither yes nor no"
            )),
            fails,
            "{value}: {out}"
        );
    }
}
