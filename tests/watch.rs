//! `nfs-gds watch DIR`: the mount's mountstats and nvidia-fs's counters sampled at the start and
//! the end, on a fixture root whose files the test rewrites between the two samples.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::Value;

use crate::support::*;

const MOUNTINFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
61 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,nconnect=2,proto=rdma,port=20049,addr=10.0.2.15
";

/// The mount's record with `read_bytes` READ payload and `chunks` RDMA write chunks per
/// connection (two connections).
fn mountstats(read_ops: u64, read_bytes: u64, chunks: u64) -> String {
    let xprt = format!("\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 {chunks} 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0\n");
    format!(
        "device /dev/vda mounted on / with fstype ext4\n\
         device 10.0.2.15:/export mounted on /mnt/gds with fstype nfs4 statvers=1.1\n\
         \topts:\trw,vers=4.2,nconnect=2,proto=rdma,port=20049\n\
         \tnfsv4:\tbm0=0xfdffbfff,acl=0x3,sessions,pnfs=not configured,lease_time=10,lease_expired=0\n\
         \tbytes:\t0 0 0 0 {read_bytes} 0 0 0\n\
         {xprt}{xprt}\
         \tper-op statistics\n\
         \t        READ: {read_ops} {read_ops} 0 192 132 5 4 10 0\n\
         \t       WRITE: 0 0 0 0 0 0 0 0 0\n"
    )
}

fn nvfs_stats(reads: u64, read_mib: u64) -> String {
    format!(
        "GDS Version: 1.17.1.22 \nNVFS statistics(ver: 4.0)\nNVFS Driver(version: 2.28.4)\n\
         IO stats: Enabled, peer IO stats: Disabled\n\n\
         Reads\t\t\t\t: n={reads} ok={reads} err=0 readMiB={read_mib} io_state_err=0\n\
         Writes\t\t\t\t: n=0 ok=0 err=0 writeMiB=0 io_state_err=0 pg-cache=0 pg-cache-fail=0 pg-cache-eio=0\n"
    )
}

fn node() -> Fixture {
    let f = Fixture::debian12();
    f.write("proc/self/mountinfo", MOUNTINFO);
    f.write("proc/self/mountstats", mountstats(0, 0, 0));
    f.write("proc/driver/nvidia-fs/stats", nvfs_stats(0, 0));
    f
}

/// Runs `watch` and, once it says it took its first sample, rewrites the files with `end`.
fn watch_with(f: &Fixture, args: &[&str], end: impl FnOnce(&Fixture)) -> (i32, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
        .arg("--root")
        .arg(f.root())
        .arg("watch")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nfs-gds runs");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("watching /mnt/gds for"), "{line}");
    end(f);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn reads_nvidia_fs_moved_are_gpu_direct() {
    let f = node();
    let (code, text) = watch_with(&f, &["/mnt/gds", "--seconds", "3"], |f| {
        f.write("proc/self/mountstats", mountstats(2048, 2 << 30, 1024));
        f.write("proc/driver/nvidia-fs/stats", nvfs_stats(2048, 2048));
    });
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("the mount served 2.0 GiB of READs over RDMA and nvidia-fs moved 2.0 GiB to GPUs: GPU-direct"), "{text}");
    assert!(
        text.contains("rdma: 2048 write chunks (READ payload)"),
        "{text}"
    );
}

#[test]
fn reads_nvidia_fs_did_not_move_went_through_cpu_memory_in_json_too() {
    let f = node();
    let (code, text) = watch_with(&f, &["/mnt/gds", "--seconds", "3", "--json"], |f| {
        f.write("proc/self/mountstats", mountstats(512, 1 << 30, 512));
    });
    assert_eq!(code, 1, "{text}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    crate::schemas::assert_valid("watch.schema.json", &doc);
    assert_eq!(doc["command"], "watch");
    assert_eq!(doc["outcome"], "through-cpu-memory");
    assert_eq!(doc["mount"]["read_bytes"], 1u64 << 30);
    assert_eq!(doc["mount"]["rdma"]["write_chunks"], 1024);
    assert!(doc["summary"]
        .as_str()
        .unwrap()
        .contains("nvidia-fs moved nothing"));
}

#[test]
fn io_statistics_off_is_said_with_the_parameter_and_left_alone() {
    let f = node();
    f.write(
        "proc/driver/nvidia-fs/stats",
        include_str!("fixtures/nvidia-fs/stats-2.28.4-disabled.txt"),
    );
    f.write("sys/module/nvidia_fs/parameters/rw_stats_enabled", "0\n");
    let (code, text) = watch_with(&f, &["/mnt/gds", "--seconds", "3"], |f| {
        f.write("proc/self/mountstats", mountstats(10, 10 << 20, 10));
    });
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("IO statistics are off: `echo 1 > /sys/module/nvidia_fs/parameters/rw_stats_enabled` to count"), "{text}");
    let param = std::fs::read_to_string(f.path("sys/module/nvidia_fs/parameters/rw_stats_enabled"))
        .unwrap();
    assert_eq!(param, "0\n", "watch never changes a module parameter");
}

#[test]
fn a_directory_without_an_nfs_mount_is_an_error_that_names_it() {
    let f = node();
    let out = run(&f, &["watch", "/mnt/none", "--seconds", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nothing is mounted on /mnt/none"),
        "{}",
        stderr(&out)
    );
    let out = run(&f, &["watch", "/", "--seconds", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/ is a ext4 mount, not NFS"),
        "{}",
        stderr(&out)
    );
    let out = run(&f, &["watch", "/mnt/gds", "--seconds", "100000"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--seconds"), "{}", stderr(&out));
}
