//! `transport-trap`: no NFSv4 mount of the same server runs over another transport.
//!
//! Linux gives a new NFSv4 mount the client (and so the transport) of an existing mount of the
//! same server — NFSv4 trunking discovery does not compare transports. Seen on 6.1: mount over
//! TCP first, then `-o rdma` → `xprt: tcp`, `proto=tcp`, exit 0, nothing in dmesg; also with
//! `nosharecache`, `vers=4.0`, and another address of the same server. So an existing non-RDMA
//! NFSv4 mount of the server predicts the outcome. Run before mounting, and as context when an
//! existing mount is verified: then the other mounts are a warning for a mount that itself runs
//! over RDMA (a future mount could inherit their transport), not a failure of it.

use super::nfs_mounts::{describe, non_rdma_mounts_of};
use crate::checks::check::{Check, Detail, MountSubject, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level, Status};
use crate::host::mounts::MountTable;
use crate::nfs::{NfsVersion, Sameness, ServerHost};

pub const ID: CheckId = CheckId::new("transport-trap");

pub static CHECK: Check = Check {
    id: ID,
    doc: "mount helper: no non-RDMA NFSv4 mount of the same server exists (the kernel would silently reuse its transport)",
    scope: Scope::BeforeMount(run),
    default_level: Level::Enforce,
    waitable: false,
};

fn run(subject: &MountSubject, detail: Detail) -> CheckResult {
    match *subject {
        MountSubject::Planned {
            server,
            version,
            table,
            ..
        } => transport_trap(server, version, table, None, detail),
        MountSubject::Existing {
            mount: m, table, ..
        } => match m.server() {
            Some((server, _)) if m.is_nfs() => {
                let version = if m.is_nfs4() {
                    NfsVersion::V4(None)
                } else {
                    NfsVersion::V3
                };
                let r = transport_trap(&server, version, table, Some(m.info.mount_id), detail);
                let over_rdma = m.runs_over_rdma();
                if r.status == Status::Fail && over_rdma == Some(true) {
                    CheckResult {
                        status: Status::Warn,
                        summary: format!(
                            "this mount runs over RDMA, but {} also has NFSv4 mounts over other transports: a new mount of it could inherit theirs",
                            server
                        ),
                        fixes: Vec::new(),
                        ..r
                    }
                } else if r.status == Status::Pass
                    && over_rdma != Some(true)
                    && matches!(detail, Detail::Full)
                {
                    // The other mounts were asked about, not this one: its own transport is
                    // mount-transport's to judge, and may well be the one that is not RDMA.
                    CheckResult {
                        summary: format!(
                            "no other NFSv4 mount of {} uses a transport other than RDMA (this mount's own transport: see mount-transport)",
                            server
                        ),
                        ..r
                    }
                } else {
                    r
                }
            }
            _ => CheckResult::skip(ID, "not an NFS mount"),
        },
    }
}

/// Before mounting `server` with `version`: is there an NFSv4 mount of it over another transport?
/// `exclude` leaves one mount out (the one being verified).
pub fn transport_trap(
    server: &ServerHost,
    version: NfsVersion,
    table: &MountTable,
    exclude: Option<u32>,
    detail: Detail,
) -> CheckResult {
    let id = ID;
    if !version.is_v4() {
        return CheckResult::skip(
            id,
            "NFSv3 does not reuse another mount's transport; the trap is NFSv4-only",
        );
    }
    let (same, undecided) = non_rdma_mounts_of(server, table, exclude);
    if let Some(first) = same.first() {
        let transports = first.transports().join("+");
        let mut r = CheckResult::fail(
            id,
            format!(
                "{server} already has an NFSv4 mount over {transports} ({}): Linux gives a new NFSv4 mount of the same server that mount's transport, so this one would run over {transports} although it asks for RDMA, and mount.nfs would still succeed",
                first.info.mount_point_shown()
            ),
        );
        for m in same.iter().chain(&undecided) {
            let (what, seen) = describe(m);
            r = r.with(what, seen);
        }
        let umounts: Vec<String> = same
            .iter()
            .map(|m| format!("umount {}", m.info.mount_point_shown()))
            .collect();
        return r.fix(Fix::Mount).remedy(format!(
            "unmount the non-RDMA NFSv4 mounts of {server} first (`{}`) or remount them over RDMA, then mount again",
            umounts.join("; ")
        ));
    }
    if !undecided.is_empty() {
        let mut r = CheckResult::warn(
            id,
            format!(
                "there are NFSv4 mounts over other transports whose server may be {server}; that cannot be told without DNS, and if it is the same machine this mount would inherit their transport"
            ),
        );
        for m in &undecided {
            let (what, seen) = describe(m);
            r = r.with(what, seen);
        }
        return r.remedy(format!(
            "if they are the same machine, unmount them first; writing the server the same way in every source (name or address) lets nfs-gds tell. NFSv4 trunking also merges other addresses of {server}"
        ));
    }
    detail.pass(id, || {
        let rdma_peers = table
            .mounts
            .iter()
            .filter(|m| {
                Some(m.info.mount_id) != exclude && m.is_nfs4() && m.runs_over_rdma() == Some(true)
            })
            .filter(|m| {
                m.server()
                    .is_some_and(|(s, addr)| server.sameness(&s, addr) == Sameness::Same)
            })
            .count();
        let r = CheckResult::pass(
            id,
            format!("no NFSv4 mount of {server} uses a transport other than RDMA"),
        );
        if rdma_peers > 0 {
            r.with(
                "NFSv4 mounts of this server over RDMA",
                rdma_peers.to_string(),
            )
        } else {
            r
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::catalogue::mount_fixtures::{
        capture, srv, table, tcp_first, TCP_FIRST, TCP_FIRST_STATS,
    };

    #[test]
    fn the_capture_has_no_trap_and_counts_the_rdma_mounts() {
        let r = transport_trap(
            &srv("10.0.2.15"),
            NfsVersion::DEFAULT,
            &capture(),
            None,
            Detail::Full,
        );
        says(
            &r,
            Status::Pass,
            &["no NFSv4 mount of 10.0.2.15 uses a transport other than RDMA"],
        );
        assert_eq!(r.evidence[0].seen, "2");
        assert_eq!(seen(&r, "NFSv4 mounts of this server over RDMA"), "2");
    }

    #[test]
    fn an_existing_tcp_mount_of_the_same_server_is_the_trap() {
        let t = tcp_first();
        let r = transport_trap(
            &srv("10.0.2.15"),
            NfsVersion::DEFAULT,
            &t,
            None,
            Detail::Full,
        );
        assert_eq!(r.status, Status::Fail);
        assert!(r.summary.contains("over tcp (/mnt/tcp)"), "{}", r.summary);
        assert_eq!(r.evidence[0].what, "10.0.2.15:/export on /mnt/tcp");
        assert_eq!(r.evidence[0].seen, "NFSv4 over tcp (mount id 40)");
        assert_eq!(r.fixes, vec![Fix::Mount]);
        assert!(r.remedy.unwrap().contains("umount /mnt/tcp"));
        // IPv4-mapped spelling of the same address, and a name the kernel resolved to it.
        let r = transport_trap(
            &srv("[::ffff:10.0.2.15]"),
            NfsVersion::DEFAULT,
            &t,
            None,
            Detail::Full,
        );
        assert_eq!(r.status, Status::Fail);
        // Another server is not affected.
        let r = transport_trap(
            &srv("10.0.2.99"),
            NfsVersion::DEFAULT,
            &t,
            None,
            Detail::Full,
        );
        assert_eq!(r.status, Status::Pass);
        // NFSv3 is not affected.
        let r = transport_trap(&srv("10.0.2.15"), NfsVersion::V3, &t, None, Detail::Full);
        assert_eq!(r.status, Status::Skip);
        assert!(r.summary.contains("NFSv4-only"), "{}", r.summary);
    }

    #[test]
    fn a_name_against_an_address_is_a_warning_that_says_dns() {
        let t = tcp_first();
        let r = transport_trap(&srv("filer"), NfsVersion::DEFAULT, &t, None, Detail::Full);
        assert_eq!(r.status, Status::Warn);
        assert!(r.summary.contains("without DNS"), "{}", r.summary);
        assert_eq!(r.evidence.len(), 2);
        assert!(remedy(&r).contains("writing the server the same way"));
        // The reverse is decidable: the existing mount's addr= names its address.
        let named = TCP_FIRST.replace("10.0.2.15:/export", "filer:/export");
        let stats = TCP_FIRST_STATS.replace("10.0.2.15:/export", "filer:/export");
        let t = table(&named, &stats);
        let r = transport_trap(
            &srv("10.0.2.15"),
            NfsVersion::DEFAULT,
            &t,
            None,
            Detail::Full,
        );
        assert_eq!(r.status, Status::Fail);
    }

    #[test]
    fn verifying_an_rdma_mount_next_to_a_tcp_one_warns() {
        let info = "\
40 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 1 0:51 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
";
        let t = table(info, "");
        let mount = t.by_id(41).unwrap();
        let r = run(
            &MountSubject::Existing {
                mount,
                table: &t,
                port: 20049,
                asked: &[],
                localio: &crate::host::mount_localio::MountLocalio::without_localio(),
            },
            Detail::Full,
        );
        says(
            &r,
            Status::Warn,
            &["this mount runs over RDMA", "could inherit theirs"],
        );
        assert!(r.fixes.is_empty(), "{r:#?}");
        assert_eq!(
            seen(&r, "10.0.2.15:/export on /mnt/tcp"),
            "NFSv4 over tcp (mount id 40)"
        );
    }

    #[test]
    fn verifying_a_mount_that_inherited_tcp_fails_and_leaves_itself_out() {
        let t = tcp_first();
        let mount = t.by_id(41).unwrap();
        let r = run(
            &MountSubject::Existing {
                mount,
                table: &t,
                port: 20049,
                asked: &[],
                localio: &crate::host::mount_localio::MountLocalio::without_localio(),
            },
            Detail::Full,
        );
        says(&r, Status::Fail, &["over tcp (/mnt/tcp)"]);
        assert!(
            r.evidence.iter().all(|e| !e.what.contains("/mnt/gds")),
            "{r:#?}"
        );
    }

    #[test]
    fn a_mount_that_is_not_nfs_is_skipped() {
        let t = table("1 0 254:0 / /mnt/d rw - ext4 /dev/vda rw\n", "");
        let r = run(
            &MountSubject::Existing {
                mount: t.by_id(1).unwrap(),
                table: &t,
                port: 20049,
                asked: &[],
                localio: &crate::host::mount_localio::MountLocalio::without_localio(),
            },
            Detail::Full,
        );
        says(&r, Status::Skip, &["not an NFS mount"]);
    }

    /// Verifying a mount that is itself over TCP: the other mounts are clean, and the pass must
    /// not claim that no mount of the server is off RDMA when this one is.
    #[test]
    fn a_verified_tcp_mount_is_not_called_rdma_by_its_own_pass() {
        let t = table(
            "1 0 254:0 / / rw - ext4 /dev/vda rw\n\
             40 1 0:50 / /mnt/tcp rw - nfs4 10.0.0.1:/export rw,vers=4.2,proto=tcp,addr=10.0.0.1\n",
            "device 10.0.0.1:/export mounted on /mnt/tcp with fstype nfs4 statvers=1.1\n\
             \topts:\trw,vers=4.2,proto=tcp\n\
             \txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0\n",
        );
        let m = t.mounts.iter().find(|m| m.info.mount_id == 40).unwrap();
        let r = run(
            &MountSubject::existing(
                m,
                &t,
                2049,
                &[],
                &crate::host::mount_localio::MountLocalio::without_localio(),
            ),
            Detail::Full,
        );
        says(
            &r,
            Status::Pass,
            &["no other NFSv4 mount of 10.0.0.1", "see mount-transport"],
        );
        assert!(!r.summary.starts_with("no NFSv4 mount"), "{}", r.summary);
    }
}
