//! The agent's look at the mounts: every NFS mount meant for RDMA gets the judge's verdict
//! ([`crate::judge`]: the helper's own post-mount checks and transport trap), each pass, with
//! the labels that join it to node_exporter's series.
//!
//! A node can carry thousands of PV mounts, often all of one server; the judge narrows the
//! table per server, so every pass stays linear in mounts.

use std::borrow::Cow;

use serde::Serialize;

use super::kubelet::{volume_of, KubeletVolume};
use crate::checks::{CheckResult, Verdict};
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::{Mount, MountTable};
use crate::judge::MountJudge;
use crate::nfs::ServerAddrs;
use crate::policy::intent::Declared;
use crate::policy::Policy;
use crate::verdict::Judgement;

/// The verdict on one mount meant for RDMA, with the labels that join it to node_exporter's
/// mountstats series (`export`, `mountaddr`, `protocol`). Borrows from the mount table: a node
/// with thousands of mounts keeps no second copy of their names.
#[derive(Debug, Clone, Serialize)]
pub struct MountVerdict<'a> {
    /// The mount's source (node_exporter's `export`).
    pub export: &'a str,
    pub mountpoint: Cow<'a, str>,
    /// The server address the kernel uses (`addr=`; node_exporter's `mountaddr`).
    pub mountaddr: Option<&'a str>,
    /// The transport of the first `xprt:` line, else the `proto=` option (node_exporter's
    /// `protocol`); `unknown` when neither shows.
    pub protocol: &'a str,
    /// Why it is meant for RDMA: `recorded`, `policy`, `fstab` or `options`.
    pub meant_by: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<&'a str>,
    pub verdict: Verdict,
    /// The checks, for a mount that is not plainly ready; a ready mount's (all pass) are not
    /// kept, so a node with thousands of good mounts stays small (`nfs-gds verify` shows them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
}

impl MountVerdict<'_> {
    pub fn is_ready(&self) -> bool {
        self.verdict.is_ready()
    }
}

/// Each summary names the mount (a mount's kept checks are read apart from it).
fn naming_the_mount(results: Vec<CheckResult>, mp: &str) -> Vec<CheckResult> {
    results
        .into_iter()
        .map(|mut r| {
            if !r.summary.contains(mp) {
                r.summary = format!("{mp}: {}", r.summary);
            }
            r
        })
        .collect()
}

fn protocol_of(m: &Mount) -> &str {
    m.stats
        .as_ref()
        .and_then(|s| s.xprts.first())
        .map(|x| x.proto())
        .or_else(|| m.option("proto"))
        .unwrap_or("unknown")
}

/// Verifies every mount of `table` meant for RDMA that is on top of its mount point (a mount
/// stacked over is not what applications see): the judge's verdict on each ([`MountJudge`]),
/// keeping the checks of a mount that is not ready.
pub fn verify_meant_for_rdma<'a>(
    table: &'a MountTable,
    declared: &Declared,
    policy: &Policy,
    addrs: &ServerAddrs,
    localio: &MountLocalio,
) -> Vec<MountVerdict<'a>> {
    let mut judge = MountJudge::new(table, declared, policy, addrs, localio);
    let meant = judge.meant_for_gds();
    let mut out = Vec::with_capacity(meant.len());
    for (m, intent) in meant {
        let judged = judge.problems(m);
        let verdict = judged.as_ref().map_or(Verdict::Ready, Judgement::verdict);
        let mountpoint = match m.info.mount_point().to_str() {
            Some(text) => Cow::Borrowed(text),
            None => m.info.mount_point().to_string_lossy(),
        };
        let checks = match judged {
            Some(judged) if verdict != Verdict::Ready => {
                naming_the_mount(judged.results, &mountpoint)
            }
            _ => Vec::new(),
        };
        let pod: Option<KubeletVolume> = volume_of(m.info.mount_point());
        out.push(MountVerdict {
            export: m.info.source(),
            mountpoint,
            mountaddr: m.info.super_option("addr"),
            protocol: protocol_of(m),
            meant_by: intent.as_str(),
            pod_uid: pod.as_ref().map(|p| p.pod_uid),
            volume: pod.map(|p| p.volume),
            verdict,
            checks,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::registry::{self, Detail};
    use crate::checks::Status;
    use crate::policy::MountRule;
    use crate::testkit::table;

    const POD: &str = "/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~nfs/data";

    fn info() -> String {
        format!(
            "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 1 0:50 / {POD} rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
42 1 0:51 / /mnt/gds rw - nfs4 10.0.2.20:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
43 1 0:52 / /mnt/home rw - nfs4 10.0.0.9:/home rw,vers=4.2,proto=tcp,addr=10.0.0.9
"
        )
    }

    fn stats() -> String {
        format!(
            "\
device /dev/vda mounted on / with fstype ext4
device 10.0.2.15:/export mounted on /mnt/tcp with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.15:/export mounted on {POD} with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.20:/fast mounted on /mnt/gds with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=20049
\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11
device 10.0.0.9:/home mounted on /mnt/home with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
"
        )
    }

    #[test]
    fn a_pod_mount_the_trap_turned_to_tcp_is_caught_by_the_policy() {
        let t = table(&info(), &stats());
        let policy = Policy {
            mounts: vec![MountRule {
                source: Some("10.0.2.15:/export".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = verify_meant_for_rdma(
            &t,
            &Declared::default(),
            &policy,
            &crate::nfs::ServerAddrs::blind(),
            &crate::host::mount_localio::MountLocalio::without_localio(),
        );
        let points: Vec<_> = v.iter().map(|v| v.mountpoint.as_ref()).collect();
        // /mnt/tcp is covered by the rule too; /mnt/home is nobody's RDMA mount.
        assert_eq!(points, ["/mnt/tcp", POD, "/mnt/gds"]);
        let pod = &v[1];
        assert_eq!(pod.verdict, Verdict::NotReady);
        assert_eq!(pod.meant_by, "policy");
        assert_eq!(pod.protocol, "tcp");
        assert_eq!(pod.mountaddr, Some("10.0.2.15"));
        assert_eq!(pod.pod_uid, Some("u-1"));
        assert_eq!(pod.volume, Some("data"));
        let by_id: Vec<_> = pod.checks.iter().map(|c| (c.id, c.status)).collect();
        assert_eq!(
            by_id,
            [
                (crate::checks::catalogue::transport_trap::ID, Status::Fail),
                (crate::checks::catalogue::mount_transport::ID, Status::Fail),
                (crate::checks::catalogue::mount_options::ID, Status::Fail),
                (
                    crate::checks::catalogue::mount_connections::ID,
                    Status::Skip
                ),
                (crate::checks::catalogue::mount_pnfs::ID, Status::Pass),
                (crate::checks::catalogue::mount_localio::ID, Status::Pass),
            ]
        );
        assert!(
            pod.checks[0].summary.contains("/mnt/tcp"),
            "{:?}",
            pod.checks[0]
        );
        let gds = &v[2];
        assert_eq!(gds.verdict, Verdict::Ready, "{:?}", gds.checks);
        assert_eq!(gds.meant_by, "options");
        assert_eq!(gds.protocol, "rdma");
    }

    #[test]
    fn narrowing_gives_the_same_verdicts_as_the_whole_table() {
        // Besides info(): a server named rather than numbered (which the trap cannot tell from
        // 10.0.2.15 without DNS), two RDMA mounts sharing its table, and one of 10.0.2.20 by
        // name and address at once.
        let info = format!(
            "{}\
50 1 0:60 / /mnt/named rw - nfs4 filer:/x rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
51 1 0:61 / /mnt/named2 rw - nfs4 filer:/y rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
52 1 0:62 / /mnt/fast2 rw - nfs4 10.0.2.20:/other rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
",
            info()
        );
        let stats = format!(
            "{}\
device filer:/x mounted on /mnt/named with fstype nfs4 statvers=1.1
\txprt:\trdma 0 0 1
device filer:/y mounted on /mnt/named2 with fstype nfs4 statvers=1.1
\txprt:\trdma 0 0 1
device 10.0.2.20:/other mounted on /mnt/fast2 with fstype nfs4 statvers=1.1
\txprt:\trdma 0 0 1
",
            stats()
        );
        let t = table(&info, &stats);
        let policy = Policy {
            mounts: vec![MountRule {
                source: Some("10.0.2.15:/".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = verify_meant_for_rdma(
            &t,
            &Declared::default(),
            &policy,
            &crate::nfs::ServerAddrs::blind(),
            &crate::host::mount_localio::MountLocalio::without_localio(),
        );
        let verdicts: Vec<_> = v
            .iter()
            .map(|v| (v.mountpoint.as_ref(), v.verdict))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("/mnt/tcp", Verdict::NotReady),
                (POD, Verdict::NotReady),
                ("/mnt/gds", Verdict::Ready),
                ("/mnt/named", Verdict::ReadyWithWarnings),
                ("/mnt/named2", Verdict::ReadyWithWarnings),
                ("/mnt/fast2", Verdict::Ready),
            ]
        );
        for mv in &v {
            let m = t
                .mounts
                .iter()
                .find(|m| m.info.mount_point().to_string_lossy() == mv.mountpoint)
                .unwrap();
            let whole: Vec<_> = registry::verify_mount(
                m,
                &t,
                20049,
                &[],
                &crate::host::mount_localio::MountLocalio::without_localio(),
                Detail::Full,
            )
            .into_iter()
            .map(|c| c.status)
            .collect();
            let narrowed: Vec<_> = mv.checks.iter().map(|c| c.status).collect();
            if mv.verdict == Verdict::Ready {
                assert!(
                    whole.iter().all(|s| *s == Status::Pass),
                    "{}",
                    mv.mountpoint
                );
            } else {
                assert_eq!(whole, narrowed, "{}", mv.mountpoint);
            }
        }
    }

    #[test]
    fn a_stacked_over_mount_and_non_nfs_mounts_are_left_out() {
        let text = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
42 1 0:51 / /mnt/gds rw - nfs4 10.0.2.20:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
44 42 0:53 / /mnt/gds rw - nfs4 10.0.2.20:/other rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
";
        let t = table(text, "");
        let v = verify_meant_for_rdma(
            &t,
            &Declared::default(),
            &Policy::default(),
            &crate::nfs::ServerAddrs::blind(),
            &crate::host::mount_localio::MountLocalio::without_localio(),
        );
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].export, "10.0.2.20:/other");
        // No mountstats: the transport is unknown, the protocol comes from the options.
        assert_eq!(v[0].protocol, "rdma");
        assert_eq!(v[0].verdict, Verdict::ReadyWithWarnings);
    }
}
