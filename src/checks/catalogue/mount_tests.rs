//! The mount checks against captured and hand-written mount tables.

use super::mount_options::mount_options;
use super::mount_transport::mount_transport;
use super::transport_trap::{self, transport_trap};
use crate::checks::registry::verify_mount as verify;
use crate::checks::Status;
use crate::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};
use crate::nfs::{NfsVersion, ServerHost};
use crate::testkit::table;

const CAPTURE: &str = include_str!("../../../tests/fixtures/mountstats.txt");

/// mountinfo lines in the order of the captured mountstats.
const CAPTURE_MOUNTINFO: &str = include_str!("../../../tests/fixtures/mountinfo.txt");

fn capture() -> MountTable {
    MountTable::join(
        parse_mountinfo(CAPTURE_MOUNTINFO.as_bytes()).unwrap(),
        parse_mountstats(CAPTURE.as_bytes()),
    )
}

const TCP_FIRST: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
";
const TCP_FIRST_STATS: &str = "\
device /dev/vda mounted on / with fstype ext4
device 10.0.2.15:/export mounted on /mnt/tcp with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp,timeo=600
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.15:/export mounted on /mnt/gds with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp,timeo=600
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
";

fn srv(s: &str) -> ServerHost {
    ServerHost::parse(s).unwrap()
}

#[test]
fn the_capture_mounts_pass_every_post_check() {
    let t = capture();
    for id in [61, 62] {
        let m = t.by_id(id).unwrap();
        for r in verify(m, &t, 20049) {
            assert_eq!(r.status, Status::Pass, "{r:?}");
        }
    }
    let r = transport_trap(&srv("10.0.2.15"), NfsVersion::DEFAULT, &t, None);
    assert_eq!(r.status, Status::Pass);
    assert_eq!(r.evidence[0].seen, "2");
}

#[test]
fn an_existing_tcp_mount_of_the_same_server_is_the_trap() {
    let t = table(TCP_FIRST, TCP_FIRST_STATS);
    let r = transport_trap(&srv("10.0.2.15"), NfsVersion::DEFAULT, &t, None);
    assert_eq!(r.status, Status::Fail);
    assert!(r.summary.contains("over tcp (/mnt/tcp)"), "{}", r.summary);
    assert_eq!(r.evidence[0].what, "10.0.2.15:/export on /mnt/tcp");
    assert_eq!(r.evidence[0].seen, "NFSv4 over tcp (mount id 40)");
    assert!(r.remedy.unwrap().contains("umount /mnt/tcp"));
    // IPv4-mapped spelling of the same address, and a name the kernel resolved to it.
    let r = transport_trap(&srv("[::ffff:10.0.2.15]"), NfsVersion::DEFAULT, &t, None);
    assert_eq!(r.status, Status::Fail);
    // Another server is not affected.
    let r = transport_trap(&srv("10.0.2.99"), NfsVersion::DEFAULT, &t, None);
    assert_eq!(r.status, Status::Pass);
    // NFSv3 is not affected.
    let r = transport_trap(&srv("10.0.2.15"), NfsVersion::V3, &t, None);
    assert_eq!(r.status, Status::Skip);
}

#[test]
fn a_name_against_an_address_is_a_warning_that_says_dns() {
    let t = table(TCP_FIRST, TCP_FIRST_STATS);
    let r = transport_trap(&srv("filer"), NfsVersion::DEFAULT, &t, None);
    assert_eq!(r.status, Status::Warn);
    assert!(r.summary.contains("without DNS"), "{}", r.summary);
    assert_eq!(r.evidence.len(), 2);
    // The reverse is decidable: the existing mount's addr= names its address.
    let named = TCP_FIRST.replace("10.0.2.15:/export", "filer:/export");
    let stats = TCP_FIRST_STATS.replace("10.0.2.15:/export", "filer:/export");
    let t = table(&named, &stats);
    let r = transport_trap(&srv("10.0.2.15"), NfsVersion::DEFAULT, &t, None);
    assert_eq!(r.status, Status::Fail);
}

#[test]
fn a_mount_that_inherited_tcp_fails_with_its_evidence() {
    let t = table(TCP_FIRST, TCP_FIRST_STATS);
    let m = t.by_id(41).unwrap();
    let r = mount_transport(m, &t);
    assert_eq!(r.status, Status::Fail);
    assert!(r.summary.contains("runs over tcp"), "{}", r.summary);
    assert!(r
        .evidence
        .iter()
        .any(|e| e.what == "mountstats" && e.seen.starts_with("xprt: tcp 0 0 2")));
    assert!(r.evidence.iter().any(|e| e.what.contains("/mnt/tcp")));
    assert!(r.remedy.unwrap().contains("transport-trap"));
    let r = mount_options(m, 20049);
    assert_eq!(r.status, Status::Fail);
    assert!(
        r.summary
            .contains("proto=tcp instead of rdma and port 2049 instead of 20049"),
        "{}",
        r.summary
    );
    let checks = verify(m, &t, 20049);
    assert_eq!(checks[0].id, transport_trap::ID);
    assert_eq!(checks[0].status, Status::Fail);
}

#[test]
fn nconnect_needs_every_transport_on_rdma() {
    let info = "50 1 0:50 / /mnt/d rw - nfs4 s:/e rw,vers=4.2,proto=rdma,port=20049\n";
    let stats = "device s:/e mounted on /mnt/d with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,nconnect=2,proto=rdma,port=20049\n\
\txprt:\trdma 0 0 1\n\txprt:\trdma 0 0 1\n";
    let t = table(info, stats);
    let r = mount_transport(t.by_id(50).unwrap(), &t);
    assert_eq!(r.status, Status::Pass);
    assert!(r.summary.contains("all 2 transports"), "{}", r.summary);
    let t = table(info, &format!("{stats}\txprt:\ttcp 0 0 2\n"));
    let r = mount_transport(t.by_id(50).unwrap(), &t);
    assert_eq!(r.status, Status::Fail);
    assert!(r.summary.contains("runs over tcp"), "{}", r.summary);
}

#[test]
fn without_xprt_lines_the_transport_is_unknown_and_options_still_judge() {
    let info = "50 1 0:50 / /mnt/d rw - nfs4 s:/e rw,vers=4.2,proto=rdma6,port=20049\n";
    let t = table(info, "");
    let m = t.by_id(50).unwrap();
    assert_eq!(mount_transport(m, &t).status, Status::Unknown);
    assert_eq!(mount_options(m, 20049).status, Status::Pass);
    assert_eq!(mount_options(m, 20050).status, Status::Fail);
}

#[test]
fn the_nfsv4_port_2049_is_implied_when_the_kernel_omits_it() {
    let info = "50 1 0:50 / /mnt/d rw - nfs4 s:/e rw,vers=4.2,proto=rdma\n";
    let t = table(info, "");
    let m = t.by_id(50).unwrap();
    assert_eq!(mount_options(m, 2049).status, Status::Pass);
    let r = mount_options(m, 20049);
    assert!(r
        .remedy
        .as_deref()
        .unwrap()
        .starts_with("mount with port=20049"));
    assert!(
        r.summary.contains("port 2049 instead of 20049"),
        "{}",
        r.summary
    );
    // NFSv3 prints any port; none means none.
    let info = "50 1 0:50 / /mnt/d rw - nfs s:/e rw,vers=3,proto=rdma\n";
    let t = table(info, "");
    let r = mount_options(t.by_id(50).unwrap(), 20049);
    assert!(
        r.summary.contains("no port instead of 20049"),
        "{}",
        r.summary
    );
}

#[test]
fn a_non_nfs_mount_fails_both_post_checks() {
    let t = table("1 0 254:0 / /mnt/d rw - ext4 /dev/vda rw\n", "");
    let m = t.by_id(1).unwrap();
    for r in verify(m, &t, 20049) {
        match r.id {
            transport_trap::ID => assert_eq!(r.status, Status::Skip),
            _ => {
                assert_eq!(r.status, Status::Fail);
                assert!(r.summary.contains("ext4 mount, not NFS"), "{}", r.summary);
            }
        }
    }
}

#[test]
fn verify_of_an_rdma_mount_next_to_a_tcp_one_warns() {
    let info = "\
40 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 1 0:51 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
";
    let t = table(info, "");
    let checks = verify(t.by_id(41).unwrap(), &t, 20049);
    assert_eq!(checks[0].status, Status::Warn);
    assert!(checks[0].summary.contains("this mount runs over RDMA"));
}
