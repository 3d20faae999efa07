//! The check modes: a verified mount, and what enforce, warn and off make of a failing check.

use super::*;

#[test]
fn a_verified_rdma_mount_exits_0() {
    let t = gds_node();
    let o = run(&t, &request("rw,_netdev", false), "", mounts(&t, "rdma"));
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(o.calls, MOUNTED_AND_MOVED);
    // The built-in rpcrdma's export kind cannot be read: a warning, never a refusal.
    assert!(
        o.err
            .contains("nfs-gds: WARN rpcrdma-hook-export [enforce]"),
        "{}",
        o.err
    );
    assert!(!o.err.contains("REFUSED"), "{}", o.err);
}

#[test]
fn verbose_says_what_was_verified() {
    let t = gds_node();
    let mut req = request("rw", false);
    req.verbose = 1;
    let o = run(
        &t,
        &req,
        "[checks]\nrpcrdma-hook-export = \"off\"\n",
        mounts(&t, "rdma"),
    );
    assert_eq!(o.code, 0);
    assert!(
        o.err.contains("nfs-gds: mounted 10.0.2.15:/export on /mnt/data (mount id 70): runs over rdma, proto=rdma, port=20049"),
        "{}",
        o.err
    );
}

#[test]
fn a_failing_enforced_precheck_refuses_before_mounting() {
    let t = gds_node();
    std::fs::remove_dir_all(t.root().join("sys/module/nvidia_fs")).unwrap();
    let o = run(&t, &request("rw", false), "", mounts(&t, "rdma"));
    assert_eq!(o.code, 32);
    assert!(o.calls.is_empty(), "nothing may be mounted: {:?}", o.calls);
    let lines: Vec<&str> = o.err.lines().collect();
    assert_eq!(
        lines[0],
        "nfs-gds: REFUSED to mount 10.0.2.15:/export on /mnt/data: 1 check failed under policy enforce; nothing was mounted"
    );
    assert!(
        lines[1].starts_with("nfs-gds: FAIL nvidia-fs-loaded [enforce]: nvidia_fs is not loaded"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].contains("| evidence: /sys/module/nvidia_fs: absent | fix: "),
        "{}",
        lines[1]
    );
    assert_eq!(lines.last().unwrap(), &format!("nfs-gds: {DOCTOR_HINT}"));
}

#[test]
fn warn_mounts_anyway_and_says_so() {
    let t = gds_node();
    std::fs::remove_dir_all(t.root().join("sys/module/nvidia_fs")).unwrap();
    let o = run(
        &t,
        &request("rw,gds_policy=warn", false),
        "",
        mounts(&t, "rdma"),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert_eq!(o.calls, MOUNTED_AND_MOVED);
    assert!(o.err.contains("nfs-gds: WARNING: mounting 10.0.2.15:/export on /mnt/data although 1 check failed (policy warn)"), "{}", o.err);
    assert!(
        o.err.contains("nfs-gds: FAIL nvidia-fs-loaded [warn]"),
        "{}",
        o.err
    );
}

#[test]
fn off_skips_the_check_entirely() {
    let t = gds_node();
    std::fs::remove_dir_all(t.root().join("sys/module/nvidia_fs")).unwrap();
    std::fs::remove_file(t.root().join("dev/nvidia-fs0")).unwrap();
    let o = run(
        &t,
        &request("rw", false),
        "[checks]\nnvidia-fs-loaded = \"off\"\nrpcrdma-hook-export = \"off\"\n",
        mounts(&t, "rdma"),
    );
    assert_eq!(o.code, 0, "{}", o.err);
    assert!(o.err.is_empty(), "{}", o.err);
}
