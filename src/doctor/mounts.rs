//! Doctor's look at the NFS mounts: every NFS mount with its real transport and port, the
//! post-mount checks for each mount meant for GDS, and the transport trap around them. Which
//! mounts are meant for GDS, and their verdicts, are the judge's ([`crate::judge`]), the same
//! the agent and the container hook give; it narrows the table per server, so a node with
//! thousands of NFS mounts is reviewed in linear time.

use crate::checks::{CheckResult, Verdict};
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::{Mount, MountTable};
use crate::judge::MountJudge;
use crate::nfs::ServerAddrs;
use crate::policy::intent::Declared;
use crate::policy::Policy;

use super::finding::Finding;
use super::fstab::FstabEntry;

/// Findings and checks about the mounts.
#[derive(Debug, Default)]
pub struct MountReview {
    pub findings: Vec<Finding>,
    pub checks: Vec<CheckResult>,
    /// The worst verdict of the mounts meant for GDS, each under its own policy.
    pub verdict: Verdict,
    /// Mount points of the mounts meant for GDS.
    pub gds_mounts: Vec<String>,
}

/// The mount in one line. Its transport is what its `xprt:` lines say, as `mount-transport`
/// judges it: the `proto=` it asked for proves nothing.
fn describe(m: &Mount) -> String {
    let xprts = m.xprts();
    format!(
        "{} on {}: {} vers={} proto={} port={}, transport {}",
        m.info.source(),
        m.info.mount_point_shown(),
        m.info.fstype(),
        m.option("vers").unwrap_or("?"),
        m.option("proto").unwrap_or("?"),
        m.option("port").unwrap_or("default"),
        match (xprts, &m.stats) {
            ([], None) => "unknown (no mountstats record)".to_string(),
            ([], Some(_)) => "unknown (its mountstats record has no xprt: line)".to_string(),
            _ => xprts
                .iter()
                .map(|x| x.proto())
                .collect::<Vec<_>>()
                .join("+"),
        }
    )
}

/// Reviews the NFS mounts; the checks of each mount meant for GDS are judged under the
/// policy that applies to it. `declared` is what the helper recorded; the `nfs-gds` lines of
/// `fstab` are added to it.
pub fn review(
    table: &MountTable,
    fstab: &[FstabEntry],
    declared: &Declared,
    policy: &Policy,
    addrs: &ServerAddrs,
    localio: &MountLocalio,
) -> MountReview {
    let mut out = MountReview::default();
    let mut declared = declared.clone();
    for e in fstab {
        declared.fstab_line(&e.target, e.line, &e.options.join(","));
    }
    for m in table.mounts.iter().filter(|m| m.is_nfs()) {
        out.findings.push(Finding {
            topic: "nfs-mount".into(),
            text: describe(m),
        });
    }
    // Only the mount on top of its mount point is what applications see; the judge leaves the
    // others out.
    let mut judge = MountJudge::new(table, &declared, policy, addrs, localio);
    for (m, _) in judge.meant_for_gds() {
        let mp = m.info.mount_point_shown().to_string();
        out.gds_mounts.push(mp.clone());
        let judged = judge.judge(m);
        out.verdict = out.verdict.max(judged.verdict());
        for mut r in judged.results {
            if !r.summary.contains(&mp) {
                r.summary = format!("{mp}: {}", r.summary);
            }
            out.checks.push(r);
        }
    }
    for e in fstab {
        if table
            .topmost_at(std::path::Path::new(&e.target))
            .is_none_or(|m| !m.is_nfs())
        {
            out.findings.push(Finding {
                topic: "fstab".into(),
                text: format!(
                    "/etc/fstab line {}: {} ({}) is not mounted",
                    e.line, e.target, e.source
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::{
        mount_connections, mount_localio, mount_options, mount_pnfs, mount_transport,
        transport_trap,
    };
    use crate::checks::Status;
    use crate::testkit::table;

    const INFO: &str = "\
25 1 254:0 / / rw - ext4 /dev/vda rw
40 25 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 25 0:51 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
";
    const STATS: &str = "\
device /dev/vda mounted on / with fstype ext4
device 10.0.2.15:/export mounted on /mnt/tcp with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2 0 0 57 57 0 57 0 2 0 0
device 10.0.2.15:/export mounted on /mnt/gds with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=20049
\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0
";

    #[test]
    fn gds_mounts_are_verified_and_the_trap_is_seen() {
        let fstab = super::super::fstab::parse_nfs_gds_entries(
            "10.0.2.15:/export /mnt/gds nfs-gds _netdev 0 0\n10.0.2.15:/other /mnt/other nfs-gds _netdev 0 0\n",
        );
        let r = review(
            &table(INFO, STATS),
            &fstab,
            &Declared::default(),
            &Policy::default(),
            &crate::nfs::ServerAddrs::blind(),
            &crate::host::mount_localio::MountLocalio::without_localio(),
        );
        let nfs: Vec<_> = r
            .findings
            .iter()
            .filter(|f| f.topic == "nfs-mount")
            .collect();
        assert_eq!(nfs.len(), 2);
        assert!(nfs[0].text.contains("transport tcp"), "{}", nfs[0].text);
        // Only /mnt/gds is meant for GDS: its trap, transport and options.
        let ids: Vec<_> = r.checks.iter().map(|c| (c.id, c.status)).collect();
        assert_eq!(
            ids,
            vec![
                (transport_trap::ID, Status::Warn),
                (mount_transport::ID, Status::Pass),
                (mount_options::ID, Status::Pass),
                (mount_connections::ID, Status::Pass),
                (mount_pnfs::ID, Status::Pass),
                (mount_localio::ID, Status::Pass),
            ]
        );
        assert!(r.checks.iter().all(|c| c.summary.contains("/mnt/gds")));
        assert!(r
            .findings
            .iter()
            .any(|f| f.topic == "fstab" && f.text.contains("/mnt/other")));
    }

    /// A mount that asked for `proto=rdma` but has no mountstats record is not said to run over
    /// RDMA: the finding and `mount-transport` give one answer, unknown.
    #[test]
    fn without_mountstats_the_finding_says_unknown_as_the_check_does() {
        let r = review(
            &table(INFO, ""),
            &[],
            &Declared::default(),
            &Policy::default(),
            &crate::nfs::ServerAddrs::blind(),
            &crate::host::mount_localio::MountLocalio::without_localio(),
        );
        let gds = r
            .findings
            .iter()
            .find(|f| f.topic == "nfs-mount" && f.text.contains("/mnt/gds"))
            .unwrap();
        assert!(
            gds.text
                .ends_with("transport unknown (no mountstats record)"),
            "{}",
            gds.text
        );
        let check = r
            .checks
            .iter()
            .find(|c| c.id == mount_transport::ID)
            .unwrap();
        assert_eq!(check.status, Status::Unknown, "{check:?}");
    }

    /// `n` RDMA mounts of one server (the trap's worst case: every mount's server is every
    /// other's) and one TCP mount of it, which every one of them must be warned about.
    fn one_server(n: usize) -> MountTable {
        let mut info = String::from("25 1 254:0 / / rw - ext4 /dev/vda rw\n");
        info.push_str(
            "30 25 0:30 / /mnt/tcp rw - nfs4 10.0.2.15:/t rw,vers=4.2,proto=tcp,addr=10.0.2.15\n",
        );
        for i in 0..n {
            info.push_str(&format!(
                "{} 25 0:{} / /mnt/pv{i} rw - nfs4 10.0.2.15:/pv{i} rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15\n",
                100 + i,
                100 + i
            ));
        }
        table(&info, "")
    }

    /// Every mount of one server is judged against that server's other mounts: with 4,000 of
    /// them each still gets its own transport warning. (Its cost is measured by
    /// `benches/doctor-scale.sh`; a wall-clock ratio in a test fails on a loaded machine.)
    #[test]
    fn reviewing_every_mount_of_one_server_warns_each_of_them() {
        let n = 4000;
        let t = one_server(n);
        let r = review(
            &t,
            &[],
            &Declared::default(),
            &Policy::default(),
            &crate::nfs::ServerAddrs::blind(),
            &crate::host::mount_localio::MountLocalio::without_localio(),
        );
        assert_eq!(r.gds_mounts.len(), n);
        let warned = r
            .checks
            .iter()
            .filter(|c| c.id == transport_trap::ID && c.status == Status::Warn)
            .count();
        assert_eq!(warned, n, "each RDMA mount is warned of the TCP one");
    }
}
