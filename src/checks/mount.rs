//! The mount-level checks: the transport trap before mounting, and the transport and options
//! of a mount afterwards.
//!
//! The trap: Linux gives a new NFSv4 mount the client (and so the transport) of an existing
//! mount of the same server — NFSv4 trunking discovery does not compare transports. Seen on
//! 6.1: mount over TCP first, then `-o rdma` → `xprt: tcp`, `proto=tcp`, exit 0, nothing in
//! dmesg; also with `nosharecache`, `vers=4.0`, and another address of the same server. So an
//! existing non-RDMA NFSv4 mount of the server predicts the outcome, and only the mount's own
//! `xprt:` lines prove it. Everything here judges a [`MountTable`] already read.

use super::{CheckId, CheckResult};
use crate::host::mounts::{Mount, MountTable};
use crate::mount::nfs_version::NfsVersion;
use crate::mount::source::{NfsSource, Sameness, ServerHost};

/// The port NFSv4 uses when the kernel prints none (it omits `port=` when it is 2049).
const NFS_PORT: u16 = 2049;

fn describe(m: &Mount) -> (String, String) {
    (
        format!("{} on {}", m.info.source, m.info.mount_point.display()),
        format!(
            "NFSv4 over {} (mount id {})",
            m.transports().join("+"),
            m.info.mount_id
        ),
    )
}

/// NFSv4 mounts of other transports than RDMA, split by whether they are known to be of
/// `server` or cannot be told apart from it without DNS.
fn non_rdma_mounts_of<'a>(
    server: &ServerHost,
    table: &'a MountTable,
    exclude: Option<u32>,
) -> (Vec<&'a Mount>, Vec<&'a Mount>) {
    let mut same = Vec::new();
    let mut undecided = Vec::new();
    for m in &table.mounts {
        if Some(m.info.mount_id) == exclude || !m.is_nfs4() || m.runs_over_rdma() != Some(false) {
            continue;
        }
        let Ok(src) = NfsSource::parse(&m.info.source) else {
            continue;
        };
        let addr = m.info.super_option("addr").and_then(|a| a.parse().ok());
        match server.sameness(&src.server, addr) {
            Sameness::Same => same.push(m),
            Sameness::Undecidable => undecided.push(m),
            Sameness::Different => {}
        }
    }
    (same, undecided)
}

/// Before mounting `server` with `version`: is there an NFSv4 mount of it over another transport?
/// `exclude` leaves one mount out (the one being verified).
pub fn transport_trap(
    server: &ServerHost,
    version: NfsVersion,
    table: &MountTable,
    exclude: Option<u32>,
) -> CheckResult {
    let id = CheckId::TransportTrap;
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
                first.info.mount_point.display()
            ),
        );
        for m in same.iter().chain(&undecided) {
            let (what, seen) = describe(m);
            r = r.with(what, seen);
        }
        let umounts: Vec<String> = same
            .iter()
            .map(|m| format!("umount {}", m.info.mount_point.display()))
            .collect();
        return r.remedy(format!(
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
    let rdma_peers = table
        .mounts
        .iter()
        .filter(|m| {
            Some(m.info.mount_id) != exclude && m.is_nfs4() && m.runs_over_rdma() == Some(true)
        })
        .filter(|m| {
            NfsSource::parse(&m.info.source).is_ok_and(|s| {
                let addr = m.info.super_option("addr").and_then(|a| a.parse().ok());
                server.sameness(&s.server, addr) == Sameness::Same
            })
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
}

fn not_nfs(id: CheckId, m: &Mount) -> CheckResult {
    CheckResult::fail(
        id,
        format!(
            "{} is a {} mount, not NFS",
            m.info.mount_point.display(),
            m.info.fstype
        ),
    )
    .with("source", m.info.source.clone())
}

/// Every `xprt:` line of the mount is RDMA.
pub fn mount_transport(m: &Mount, table: &MountTable) -> CheckResult {
    let id = CheckId::MountTransport;
    if !m.is_nfs() {
        return not_nfs(id, m);
    }
    let xprts = m.stats.as_ref().map(|s| s.xprts.as_slice()).unwrap_or(&[]);
    if xprts.is_empty() {
        let why = if m.stats.is_some() {
            "its /proc/self/mountstats record has no xprt: line"
        } else {
            "there is no /proc/self/mountstats record for it"
        };
        return CheckResult::unknown(
            id,
            format!(
                "the transport of {} cannot be seen: {why}",
                m.info.mount_point.display()
            ),
        )
        .with("mount id", m.info.mount_id.to_string());
    }
    let lines = xprts
        .iter()
        .map(|x| x.line.replace('\t', " "))
        .collect::<Vec<_>>()
        .join(" / ");
    if xprts.iter().all(|x| x.is_rdma()) {
        return CheckResult::pass(
            id,
            if xprts.len() == 1 {
                "the mount runs over RDMA".to_string()
            } else {
                format!("all {} transports of the mount run over RDMA", xprts.len())
            },
        )
        .with("mountstats", lines);
    }
    let other: Vec<&str> = xprts
        .iter()
        .filter(|x| !x.is_rdma())
        .map(|x| x.proto.as_str())
        .collect();
    let mut r = CheckResult::fail(
        id,
        format!(
            "{} runs over {}, not RDMA: GPU I/O on it goes through CPU bounce buffers",
            m.info.mount_point.display(),
            other.join("+")
        ),
    )
    .with("mount id", m.info.mount_id.to_string())
    .with("mountstats", lines);
    let server = NfsSource::parse(&m.info.source).ok().map(|s| s.server);
    let (same, _) = match &server {
        Some(s) if m.is_nfs4() => non_rdma_mounts_of(s, table, Some(m.info.mount_id)),
        _ => (Vec::new(), Vec::new()),
    };
    for o in &same {
        let (what, seen) = describe(o);
        r = r.with(format!("same server, not RDMA: {what}"), seen);
    }
    r.remedy(if same.is_empty() {
        "check that the server listens for NFS over RDMA (`cat /proc/fs/nfsd/portlist` on a Linux server shows `rdma 20049`) and that this host reaches it over an RDMA-capable interface; then mount again".to_string()
    } else {
        "an earlier NFSv4 mount of the same server gave it its transport (see transport-trap): unmount those, then mount again".to_string()
    })
}

/// The mount's options carry `proto=rdma|rdma6` and the expected port.
pub fn mount_options(m: &Mount, expected_port: u16) -> CheckResult {
    let id = CheckId::MountOptions;
    if !m.is_nfs() {
        return not_nfs(id, m);
    }
    let proto = m.option("proto");
    let port_text = m.option("port");
    let v4 = m.is_nfs4();
    let port = match port_text {
        Some(p) => p.parse::<u16>().ok(),
        None if v4 => Some(NFS_PORT),
        None => None,
    };
    let seen = format!(
        "proto={} port={}{}",
        proto.unwrap_or("(none)"),
        port_text.unwrap_or("(none)"),
        m.option("vers")
            .map(|v| format!(" vers={v}"))
            .unwrap_or_default()
    );
    let proto_ok = proto.is_some_and(crate::host::mounts::is_rdma_netid);
    let port_ok = port == Some(expected_port);
    if proto_ok && port_ok {
        return CheckResult::pass(
            id,
            format!(
                "proto={} on port {expected_port}",
                proto.unwrap_or_default()
            ),
        )
        .with("options", seen);
    }
    let mut problems = Vec::new();
    if !proto_ok {
        problems.push(format!(
            "proto={} instead of rdma",
            proto.unwrap_or("(none)")
        ));
    }
    if !port_ok {
        problems.push(match port {
            Some(p) => format!("port {p} instead of {expected_port}"),
            None => format!("no port instead of {expected_port}"),
        });
    }
    let remedy = if !proto_ok {
        "the mount did not get RDMA (see mount-transport); by hand, mount with -t nfs-gds, which asks for proto=rdma".to_string()
    } else {
        format!("mount with port={expected_port}, or, if the server listens for RDMA on another port, set `port` in [options] of the policy (or port= in the mount options)")
    };
    CheckResult::fail(
        id,
        format!(
            "the options of {} say {}",
            m.info.mount_point.display(),
            problems.join(" and ")
        ),
    )
    .with("options", seen)
    .remedy(remedy)
}

/// The post-mount checks the helper runs on the mount it made.
pub fn postmount(m: &Mount, table: &MountTable, expected_port: u16) -> Vec<CheckResult> {
    vec![mount_transport(m, table), mount_options(m, expected_port)]
}

/// `nfs-gds verify`: the post-mount checks plus the trap as context. When the mount itself runs
/// over RDMA, other non-RDMA mounts of its server are a warning (a future mount could inherit
/// their transport), not a failure of this mount.
pub fn verify(m: &Mount, table: &MountTable, expected_port: u16) -> Vec<CheckResult> {
    let trap = match NfsSource::parse(&m.info.source) {
        Ok(src) if m.is_nfs() => {
            let version = if m.is_nfs4() {
                NfsVersion::V4(None)
            } else {
                NfsVersion::V3
            };
            let r = transport_trap(&src.server, version, table, Some(m.info.mount_id));
            if r.status == super::Status::Fail && m.runs_over_rdma() == Some(true) {
                CheckResult {
                    status: super::Status::Warn,
                    summary: format!(
                        "this mount runs over RDMA, but {} also has NFSv4 mounts over other transports: a new mount of it could inherit theirs",
                        src.server
                    ),
                    ..r
                }
            } else {
                r
            }
        }
        _ => CheckResult::skip(CheckId::TransportTrap, "not an NFS mount"),
    };
    let mut out = vec![trap];
    out.extend(postmount(m, table, expected_port));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::host::mounts::{parse_mountinfo, parse_mountstats};

    const CAPTURE: &str = include_str!("../../tests/fixtures/mountstats.txt");

    /// mountinfo lines in the order of the captured mountstats.
    const CAPTURE_MOUNTINFO: &str = "\
20 1 0:20 / /sys rw - sysfs sysfs rw
21 1 0:21 / /proc rw - proc proc rw
22 1 0:5 / /dev rw - devtmpfs udev rw
23 22 0:22 / /dev/pts rw - devpts devpts rw
24 1 0:23 / /run rw - tmpfs tmpfs rw
1 0 254:0 / / rw - ext4 /dev/vda rw
25 1 0:24 / /tmp rw - tmpfs tmpfs rw
26 21 0:40 / /proc/fs/nfsd rw - nfsd nfsd rw
61 1 0:50 / /mnt/rdma rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
62 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
";

    fn capture() -> MountTable {
        MountTable::join(
            parse_mountinfo(CAPTURE_MOUNTINFO.as_bytes()).unwrap(),
            parse_mountstats(CAPTURE.as_bytes()),
        )
    }

    fn table(mountinfo: &str, mountstats: &str) -> MountTable {
        MountTable::join(
            parse_mountinfo(mountinfo.as_bytes()).unwrap(),
            parse_mountstats(mountstats.as_bytes()),
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
        assert_eq!(checks[0].id, CheckId::TransportTrap);
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
                CheckId::TransportTrap => assert_eq!(r.status, Status::Skip),
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
}
