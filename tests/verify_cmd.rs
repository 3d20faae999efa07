//! `nfs-gds verify DIR` against fixture mount tables.

use assert_cmd::prelude::*;
use predicates::prelude::*;

use crate::mount_fixture::*;

#[test]
fn an_rdma_mount_verifies() {
    let f = Fixture::ready();
    let (info, stats) = with_mount(70, "/mnt/gds", "rdma");
    f.table(&info, &stats);
    f.nfs_gds()
        .args(["verify", "/mnt/gds/"])
        .assert()
        .code(0)
        .stdout(
            predicate::str::starts_with("nfs-gds verify /mnt/gds: READY\n")
                .and(predicate::str::contains(
                    "PASS     mount-transport    the mount runs over RDMA",
                ))
                .and(predicate::str::contains(
                    "PASS     mount-options      proto=rdma on port 20049",
                )),
        );
}

#[test]
fn a_mount_that_inherited_tcp_is_not_ready_and_json_says_why() {
    let f = Fixture::ready();
    let info = format!(
        "{BEFORE}{}{}",
        nfs_info(40, "/mnt/tcp", "tcp"),
        nfs_info(41, "/mnt/gds", "tcp")
    );
    let stats = format!(
        "{BEFORE_STATS}{}{}",
        nfs_stats("/mnt/tcp", "tcp"),
        nfs_stats("/mnt/gds", "tcp")
    );
    f.table(&info, &stats);
    let out = f
        .nfs_gds()
        .args(["verify", "/mnt/gds", "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["command"], "verify");
    assert_eq!(v["subject"], "/mnt/gds");
    assert_eq!(v["verdict"], "not-ready");
    let status = |id: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(status("transport-trap"), "fail");
    assert_eq!(status("mount-transport"), "fail");
    assert_eq!(status("mount-options"), "fail");
}

#[test]
fn the_expected_port_comes_from_the_policy_or_the_flag() {
    let f = Fixture::ready();
    let (info, stats) = with_mount(70, "/mnt/gds", "rdma");
    f.table(&info, &stats);
    f.policy("[options]\nport = 20050\n");
    f.nfs_gds()
        .args(["verify", "/mnt/gds"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("port 20049 instead of 20050"));
    f.nfs_gds()
        .args(["verify", "/mnt/gds", "--port", "20049"])
        .assert()
        .code(0);
}

#[test]
fn nothing_mounted_is_not_ready_and_an_unreadable_table_is_an_error() {
    let f = Fixture::ready();
    std::fs::create_dir_all(f.path("mnt/gds")).unwrap();
    f.nfs_gds()
        .args(["verify", "/mnt/gds"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("nothing is mounted on /mnt/gds"));
    f.remove("proc/self/mountinfo");
    f.nfs_gds()
        .args(["verify", "/mnt/gds"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "proc/self/mountinfo does not exist",
        ));
}

#[test]
fn the_captured_vm_mounts_verify() {
    let f = Fixture::ready();
    let info = format!(
        "{BEFORE}61 1 0:50 / /mnt/rdma rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n"
    );
    let capture = include_str!("fixtures/mountstats.txt");
    f.table(&info, capture);
    f.nfs_gds().args(["verify", "/mnt/rdma"]).assert().code(0);
}

#[test]
fn a_directory_that_does_not_exist_is_an_error_saying_so() {
    let f = Fixture::ready();
    f.nfs_gds()
        .args(["verify", "/mnt/none"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("nfs-gds: /mnt/none does not exist\n");
}

#[test]
fn a_directory_inside_an_nfs_mount_is_judged_as_that_mount_and_said_so() {
    let f = Fixture::ready();
    let (info, stats) = with_mount(70, "/mnt/gds", "rdma");
    f.table(&info, &stats);
    // Never looked up on disk: the directory below the mount point need not exist in the tree.
    f.nfs_gds()
        .args(["verify", "/mnt/gds/data/run1"])
        .assert()
        .code(0)
        .stderr(
            "nfs-gds: /mnt/gds/data/run1 lies on mount /mnt/gds (export 10.0.2.15:/export): \
verifying that mount\n",
        )
        .stdout(
            predicate::str::starts_with("nfs-gds verify /mnt/gds: READY\n").and(
                predicate::str::contains("PASS     mount-transport    the mount runs over RDMA"),
            ),
        );
    // On TCP: that mount's failure, not "nothing is mounted".
    let (info, stats) = with_mount(70, "/mnt/gds", "tcp");
    f.table(&info, &stats);
    f.nfs_gds()
        .args(["verify", "/mnt/gds/data"])
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("FAIL     mount-transport")
                .and(predicate::str::contains("nothing is mounted").not()),
        );
}
