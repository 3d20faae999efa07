//! The helper and `verify` hold a mount to the `nconnect=` it asked for, as Linux 6.1 and 6.12
//! make it: the helper from the options it passed, a later `verify` or an already-mounted
//! target from the helper's record, never from the options `/proc` kept alone.

use assert_cmd::prelude::*;

use crate::mount_fixture::*;

const SPEC: &str = "10.0.2.15:/export";
const DIR: &str = "/mnt/gds";

/// `vers=4.2,nconnect=4` as Linux 6.1 makes it (one `xprt: rdma` line, no `nconnect=` in
/// /proc) and as 6.12 does (four lines, `nconnect=4` shown).
fn nconnect_table(connections: usize, shown: bool) -> (String, String) {
    let (info, stats) = with_mount(70, STAGED, "rdma");
    let rdma = "\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0\n";
    let stats = stats.replace(rdma, &rdma.repeat(connections));
    if shown {
        (
            info.replace(",proto=rdma", ",nconnect=4,proto=rdma"),
            stats.replace(",proto=rdma", ",nconnect=4,proto=rdma"),
        )
    } else {
        (info, stats)
    }
}

#[test]
fn the_helper_judges_connections_against_the_nconnect_it_passed_not_what_proc_kept() {
    // Linux 6.1: the kernel dropped the ask, so /proc alone would show nothing asked.
    let f = Fixture::ready();
    f.staged_then_moved(&nconnect_table(1, false), DIR);
    let out = f
        .helper()
        .args([SPEC, DIR, "-o", "rw,vers=4.2,nconnect=4,_netdev"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "warn keeps the mount: {err}");
    assert!(
        err.contains("nconnect=4 asked (mount options), 1 RDMA connection: this kernel predates NFS-over-RDMA nconnect for v4.x; mount with vers=3 or a kernel with b326df4a8ec6; the kernel dropped the ask (no nconnect= in its mount options)"),
        "{err}"
    );
    assert!(f.record("umount").is_empty(), "a warning never unmounts");
    // The record keeps what was passed, so verify, later, says the same from it.
    let verify = f
        .nfs_gds()
        .args(["verify", DIR, "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    let c = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "mount-connections")
        .unwrap();
    assert_eq!(c["status"], "warn", "{c}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("nconnect=4 asked (the helper's record of the mount), 1 RDMA connection"),
        "{summary}"
    );
}

#[test]
fn a_kernel_that_honours_nconnect_passes_and_no_ask_is_no_warning() {
    // Linux 6.12: four connections, and the ask shown; the kernel is known to honour it, so
    // nothing is said before mounting either.
    let f = Fixture::ready();
    f.write(
        "proc/version",
        "Linux version 6.12.57+deb13-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.12.57-1 (2025-11-05)\n",
    );
    f.staged_then_moved(&nconnect_table(4, true), DIR);
    f.helper()
        .args([SPEC, DIR, "-o", "rw,vers=4.2,nconnect=4"])
        .assert()
        .code(0)
        .stderr("");
    // No nconnect asked: one connection is all there should be.
    let f = Fixture::ready();
    f.staged_then_moved(&nconnect_table(1, false), DIR);
    f.helper()
        .args([SPEC, DIR, "-o", "rw,vers=4.2"])
        .assert()
        .code(0)
        .stderr("");
}

#[test]
fn a_mount_already_there_is_held_to_what_its_record_asked_not_to_this_calls_options() {
    // The helper made /mnt/gds earlier with nconnect=4 (its record says so); 6.1 kept one
    // connection and no nconnect=. Mounting again finds it already mounted.
    let f = Fixture::ready();
    let (staged, staged_stats) = nconnect_table(1, false);
    let (info, stats) = (
        staged.replace(STAGED, DIR),
        staged_stats.replace(STAGED, DIR),
    );
    f.table(&info, &stats);
    // mount.nfs mounts a second copy of that superblock at its staging point; unmounting it
    // leaves the table as it was.
    let copy = |t: &str| {
        t.lines()
            .rfind(|l| l.contains(STAGED))
            .map(|l| l.replacen("70 1", "71 1", 1) + "\n")
            .unwrap_or_default()
    };
    f.scenario_table(
        "mount.nfs",
        &(
            format!("{info}{}", copy(&staged)),
            // The staged mount's record is the last one.
            format!(
                "{stats}{}",
                &staged_stats[staged_stats.rfind("device ").unwrap()..]
            ),
        ),
    );
    f.scenario_table("umount", &(info, stats));
    f.write(
        "run/nfs-gds/mounts/70-0.50.json",
        r#"{"source":"10.0.2.15:/export","target":"/mnt/gds","device":"0:50","mount_id":70,"port":20049,"options":"rw,nconnect=4,vers=4.2,proto=rdma,port=20049"}"#,
    );
    let out = f
        .helper()
        .args([SPEC, DIR, "-o", "rw,nconnect=16"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("nconnect=4 asked (the helper's record of the mount), 1 RDMA connection"),
        "{err}"
    );
    assert_eq!(
        f.record("umount"),
        ["/run/nfs-gds/stage/RUN/mnt|".to_string()],
        "only the helper's own second copy is unmounted, never the mount it did not make"
    );
}
