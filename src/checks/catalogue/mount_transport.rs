//! `mount-transport`: every `xprt:` line of the mount in mountstats is RDMA — the only proof
//! that the mount really runs over RDMA (nconnect gives one line per connection).

use super::nfs_mounts::{describe, non_rdma_mounts_of, not_nfs};
use crate::checks::check::{Check, Detail, MountSubject, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::mounts::{Mount, MountTable};

pub const ID: CheckId = CheckId::new("mount-transport");

pub static CHECK: Check = Check {
    id: ID,
    doc: "after mounting: every `xprt:` line of the mount in `/proc/self/mountstats` is `rdma`",
    scope: Scope::AfterMount(run),
    default_level: Level::Enforce,
    waitable: false,
};

fn run(subject: &MountSubject, detail: Detail) -> CheckResult {
    match *subject {
        MountSubject::Existing { mount, table, .. } => mount_transport(mount, table, detail),
        MountSubject::Planned { .. } => CheckResult::skip(ID, "nothing is mounted yet"),
    }
}

/// Every `xprt:` line of the mount is RDMA.
pub fn mount_transport(m: &Mount, table: &MountTable, detail: Detail) -> CheckResult {
    let id = ID;
    if !m.is_nfs() {
        return not_nfs(id, m);
    }
    let xprts = m.xprts();
    if xprts.is_empty() {
        let why = if m.stats.is_some() {
            "its mountstats record has no xprt: line"
        } else {
            "the mountstats beside the mount table read has no record for it"
        };
        return CheckResult::unknown(
            id,
            format!(
                "the transport of {} cannot be seen: {why}",
                m.info.mount_point_shown()
            ),
        )
        .with("mount id", m.info.mount_id.to_string());
    }
    let lines = || {
        xprts
            .iter()
            .map(|x| x.line.replace('\t', " "))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    if xprts.iter().all(|x| x.is_rdma()) {
        return detail.pass(id, || {
            CheckResult::pass(
                id,
                if xprts.len() == 1 {
                    "the mount runs over RDMA".to_string()
                } else {
                    format!("all {} transports of the mount run over RDMA", xprts.len())
                },
            )
            .with("mountstats", lines())
        });
    }
    let other: Vec<&str> = xprts
        .iter()
        .filter(|x| !x.is_rdma())
        .map(|x| x.proto())
        .collect();
    let mut r = CheckResult::fail(
        id,
        format!(
            "{} runs over {}, not RDMA: GPU I/O on it goes through CPU bounce buffers",
            m.info.mount_point_shown(),
            other.join("+")
        ),
    )
    .with("mount id", m.info.mount_id.to_string())
    .with("mountstats", lines());
    let server = m.server().map(|(s, _)| s);
    let (same, _) = match &server {
        Some(s) if m.is_nfs4() => non_rdma_mounts_of(s, table, Some(m.info.mount_id)),
        _ => (Vec::new(), Vec::new()),
    };
    for o in &same {
        let (what, seen) = describe(o);
        r = r.with(format!("same server, not RDMA: {what}"), seen);
    }
    r.fix(Fix::Mount).remedy(if same.is_empty() {
        format!("check that the server listens for NFS over RDMA (`cat /proc/fs/nfsd/portlist` on a Linux server shows `rdma {}`) and that this host reaches it over an RDMA-capable interface; then mount again", crate::nfs::NFS_RDMA_PORT)
    } else {
        "an earlier NFSv4 mount of the same server gave it its transport (see transport-trap): unmount those, then mount again".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::catalogue::mount_fixtures::{capture, srv, table, tcp_first};
    use crate::checks::Status;
    use crate::nfs::NfsVersion;

    #[test]
    fn the_captured_rdma_mounts_pass() {
        let t = capture();
        for id in [61, 62] {
            let r = mount_transport(t.by_id(id).unwrap(), &t, Detail::Full);
            says(&r, Status::Pass, &["runs over RDMA"]);
            assert!(seen(&r, "mountstats").starts_with("xprt: rdma"), "{r:#?}");
        }
    }

    #[test]
    fn a_mount_that_inherited_tcp_fails_with_its_evidence() {
        let t = tcp_first();
        let r = mount_transport(t.by_id(41).unwrap(), &t, Detail::Full);
        assert_eq!(r.status, Status::Fail);
        assert!(r.summary.contains("runs over tcp"), "{}", r.summary);
        assert!(r
            .evidence
            .iter()
            .any(|e| e.what == "mountstats" && e.seen.starts_with("xprt: tcp 0 0 2")));
        assert!(r.evidence.iter().any(|e| e.what.contains("/mnt/tcp")));
        assert_eq!(seen(&r, "mount id"), "41");
        assert_eq!(r.fixes, vec![Fix::Mount]);
        assert!(r.remedy.unwrap().contains("transport-trap"));
    }

    #[test]
    fn a_tcp_mount_alone_points_at_the_server() {
        let info = "40 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp\n";
        let stats = "device 10.0.2.15:/export mounted on /mnt/tcp with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,proto=tcp\n\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0\n";
        let t = table(info, stats);
        let r = mount_transport(t.by_id(40).unwrap(), &t, Detail::Full);
        says(&r, Status::Fail, &["/mnt/tcp runs over tcp, not RDMA"]);
        assert!(
            r.evidence
                .iter()
                .all(|e| !e.what.starts_with("same server")),
            "{r:#?}"
        );
        assert!(remedy(&r).contains("/proc/fs/nfsd/portlist"));
    }

    #[test]
    fn nconnect_needs_every_transport_on_rdma() {
        let info = "50 1 0:50 / /mnt/d rw - nfs4 s:/e rw,vers=4.2,proto=rdma,port=20049\n";
        let stats = "device s:/e mounted on /mnt/d with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,nconnect=2,proto=rdma,port=20049\n\
\txprt:\trdma 0 0 1\n\txprt:\trdma 0 0 1\n";
        let t = table(info, stats);
        let r = mount_transport(t.by_id(50).unwrap(), &t, Detail::Full);
        assert_eq!(r.status, Status::Pass);
        assert!(r.summary.contains("all 2 transports"), "{}", r.summary);
        let t = table(info, &format!("{stats}\txprt:\ttcp 0 0 2\n"));
        let r = mount_transport(t.by_id(50).unwrap(), &t, Detail::Full);
        assert_eq!(r.status, Status::Fail);
        assert!(r.summary.contains("runs over tcp"), "{}", r.summary);
    }

    #[test]
    fn without_xprt_lines_the_transport_is_unknown() {
        let info = "50 1 0:50 / /mnt/d rw - nfs4 s:/e rw,vers=4.2,proto=rdma6,port=20049\n";
        let t = table(info, "");
        let r = mount_transport(t.by_id(50).unwrap(), &t, Detail::Full);
        says(
            &r,
            Status::Unknown,
            &["cannot be seen", "has no record for it"],
        );
        assert_eq!(seen(&r, "mount id"), "50");
        let stats = "device s:/e mounted on /mnt/d with fstype nfs4 statvers=1.1\n\topts:\trw\n";
        let t = table(info, stats);
        let r = mount_transport(t.by_id(50).unwrap(), &t, Detail::Full);
        says(&r, Status::Unknown, &["no xprt: line"]);
    }

    #[test]
    fn a_non_nfs_mount_fails_and_nothing_planned_is_judged() {
        let t = table("1 0 254:0 / /mnt/d rw - ext4 /dev/vda rw\n", "");
        let r = mount_transport(t.by_id(1).unwrap(), &t, Detail::Full);
        says(&r, Status::Fail, &["ext4 mount, not NFS"]);
        assert_eq!(seen(&r, "source"), "/dev/vda");
        let planned = MountSubject::Planned {
            server: &srv("s"),
            version: NfsVersion::DEFAULT,
            table: &t,
            asked: &[],
            kernel: None,
        };
        says(
            &run(&planned, Detail::Full),
            Status::Skip,
            &["nothing is mounted yet"],
        );
    }
}
