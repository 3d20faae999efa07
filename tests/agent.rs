//! `nfs-gds agent --once` on fixture nodes: the NFD features file, the Prometheus textfile and
//! the status JSON agree with `check`.

use serde_json::Value;

use crate::support::*;

fn agent_once(f: &Fixture, out: &std::path::Path) -> std::process::Output {
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
