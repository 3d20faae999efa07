//! A node with more NFS mounts than 64 MiB of mountstats hold (some 20,000 kubelet PV mounts of
//! 3.3 KB each): the mount tables are streamed, so every command reads them to the end; a table
//! past its cap is an error that names the file and the cap (the cap itself is tested in
//! `host::io::lines`).

use std::io::Write;

use crate::support::*;

/// Mounts enough for mountstats to pass 64 MiB.
const MOUNTS: usize = 21_000;

/// mountinfo and mountstats of `/` and `MOUNTS` NFS mounts of one server over RDMA, each
/// record the VM capture's (opts, xprt, the per-op counters).
fn big_table() -> (Vec<u8>, Vec<u8>) {
    let capture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mountstats.txt"
    ))
    .unwrap();
    let start = capture.find("mounted on /mnt/rdma ").unwrap();
    let body = &capture[capture[start..].find('\n').unwrap() + start + 1..];
    let body = &body[..body.find("\ndevice").map_or(body.len(), |i| i + 1)];
    let mut info = b"1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n".to_vec();
    let mut stats = b"device /dev/vda mounted on / with fstype ext4\n".to_vec();
    for i in 0..MOUNTS {
        let mp = format!("/var/lib/kubelet/pods/{i:08x}/volumes/kubernetes.io~csi/pvc-{i}/mount");
        let src = format!("10.0.2.15:/datasets/pvc-{i}");
        writeln!(info, "{} 1 0:{} / {mp} rw,relatime shared:{} - nfs4 {src} rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.2.16,local_lock=none,addr=10.0.2.15", 100 + i, 1000 + i, 100 + i).unwrap();
        writeln!(
            stats,
            "device {src} mounted on {mp} with fstype nfs4 statvers=1.1"
        )
        .unwrap();
        stats.extend_from_slice(body.as_bytes());
    }
    assert!(stats.len() > 64 << 20, "{} bytes", stats.len());
    (info, stats)
}

#[test]
fn more_mounts_than_64_mib_of_mountstats_are_read_by_the_helper_and_the_agent() {
    let (info, stats) = big_table();
    // The helper: its pre-checks judge the server's mounts (the transport trap) under -f.
    let helper = crate::mount_fixture::Fixture::ready();
    helper.write("proc/self/mountinfo", &info);
    helper.write("proc/self/mountstats", &stats);
    let out = helper
        .helper()
        .args(["10.0.2.15:/export", "/mnt/gds", "-f"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("larger than"), "{err}");

    // The agent judges every one of them in one pass and writes its outputs.
    let node = ready_node();
    node.write("proc/self/mountinfo", &info);
    node.write("proc/self/mountstats", &stats);
    let out_dir = node.root().join("out");
    let out = crate::agent::agent_once(&node, &out_dir);
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
    let status = std::fs::read_to_string(out_dir.join("run/status.json")).unwrap();
    assert_eq!(
        status.matches("\"mountpoint\"").count(),
        MOUNTS,
        "{}",
        stderr(&out)
    );
}
