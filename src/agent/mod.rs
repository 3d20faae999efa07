//! `nfs-gds agent`: publishes this node's readiness where fleets look — a Node Feature Discovery
//! features file (Kubernetes labels), a Prometheus textfile-collector file, a status JSON and a
//! readiness file an init container can wait for.
//!
//! Every pass runs the same node checks as the mount helper and `check`, and the helper's
//! post-mount checks on every mount meant for RDMA ([`mounts`]); the node is ready only when
//! both are. The renderers ([`labels`], [`metrics`]) are pure functions of that [`Pass`], so the
//! labels, metrics and JSON always agree.

pub mod hook_counts;
pub mod kubelet;
pub mod labels;
pub mod metrics;
pub mod mounts;
mod mounts_json;
pub mod nri_gate;
mod nvfs_metrics;
pub mod outputs;
mod plain;
mod prom;
pub mod schedule;
pub mod shutdown;

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::checks::{Report, Status, Verdict};
use crate::host::platform::nvfs_stats::NvfsStats;
use mounts::MountVerdict;

/// The coarse state fleets schedule on (`gds-nfs=ready|degraded|absent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// GDS over NFS/RDMA works here: no node check and no RDMA mount fails.
    Ready,
    /// The GDS driver is there but something fails: a hook, a module, a mount over TCP.
    Degraded,
    /// No GDS driver (`nvidia_fs` not loaded): not a GDS node, or not yet.
    Absent,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Ready => "ready",
            Tier::Degraded => "degraded",
            Tier::Absent => "absent",
        }
    }
}

/// What one agent pass found (its mounts borrowed from the mount table it read).
#[derive(Debug, Clone)]
pub struct Pass<'a> {
    /// The node checks (the same as `check`).
    pub node: Report,
    /// Every mount meant for RDMA, judged.
    pub mounts: Vec<MountVerdict<'a>>,
    /// Which mount table was read (`proc/1/…` for the host's, seen from a container).
    pub mount_table: String,
    pub at: SystemTime,
    pub interval: Duration,
    /// nvidia-fs's counters (`/proc/driver/nvidia-fs/stats`), or why they could not be read;
    /// `None` when nvidia-fs publishes none.
    pub nvfs_stats: Option<Result<NvfsStats, String>>,
    /// What the container hook refused and warned about since boot.
    pub oci_hook: hook_counts::HookCounts,
    /// Whether the NRI plugin is the runtime's gate now ([`nri_gate::connected`]).
    pub nri_connected: bool,
}

impl Pass<'_> {
    /// The node's verdict: the worst of its checks and of its RDMA mounts.
    pub fn verdict(&self) -> Verdict {
        self.mounts
            .iter()
            .map(|m| m.verdict)
            .fold(self.node.verdict, Verdict::max)
    }

    pub fn is_ready(&self) -> bool {
        self.verdict().is_ready()
    }

    pub fn tier(&self) -> Tier {
        let driver_missing = self.node.checks.iter().any(|c| {
            c.id == crate::checks::catalogue::nvidia_fs_loaded::ID && c.status == Status::Fail
        });
        if driver_missing {
            Tier::Absent
        } else if self.is_ready() {
            Tier::Ready
        } else {
            Tier::Degraded
        }
    }

    pub fn mounts_not_ready(&self) -> usize {
        self.mounts.iter().filter(|m| !m.is_ready()).count()
    }

    /// The status JSON: the node report (its `verdict` covering the mounts too), the tier and
    /// every RDMA mount.
    pub fn write_status_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        #[derive(Serialize)]
        struct Status<'a, 'm> {
            #[serde(flatten)]
            node: Report,
            tier: Tier,
            mount_table: &'a str,
            mounts: &'a [MountVerdict<'m>],
        }
        let mut node = self.node.clone();
        node.verdict = self.verdict();
        // The node's part through serde, with no mounts: it ends `"mounts": []` and the
        // object's `}`, and the mounts ([`mounts_json`]) go in place of that `[]`.
        let head = serde_json::to_vec_pretty(&Status {
            node,
            tier: self.tier(),
            mount_table: &self.mount_table,
            mounts: &[],
        })?;
        let head = head.strip_suffix(b"[]\n}").ok_or_else(|| {
            std::io::Error::other("the status object does not end with its mounts")
        })?;
        // Buffered here: the writes are a token each.
        use std::io::Write as _;
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
        out.write_all(head)?;
        mounts_json::write_mounts(&mut out, &self.mounts)?;
        out.write_all(b"\n}\n")?;
        out.flush()
    }

    /// [`Pass::write_status_json`] into a string.
    pub fn status_json(&self) -> String {
        let mut out = Vec::new();
        self.write_status_json(&mut out)
            .expect("a status always serializes");
        String::from_utf8(out).expect("JSON is UTF-8")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::checks::CheckResult;

    pub fn pass_with(node: Vec<CheckResult>, mounts: Vec<MountVerdict<'static>>) -> Pass<'static> {
        Pass {
            node: Report::new("agent", "/", Some("6.8.0-45-generic".into()), None, node),
            mounts,
            mount_table: "proc/1/mountinfo".into(),
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            interval: Duration::from_secs(60),
            nvfs_stats: None,
            oci_hook: hook_counts::HookCounts::default(),
            nri_connected: false,
        }
    }

    pub fn mount(protocol: &'static str, verdict: Verdict) -> MountVerdict<'static> {
        MountVerdict {
            export: "10.0.2.15:/export",
            mountpoint: "/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~nfs/data".into(),
            mountaddr: Some("10.0.2.15"),
            protocol,
            meant_by: "policy",
            pod_uid: Some("u-1"),
            volume: Some("data"),
            verdict,
            checks: Vec::new(),
        }
    }

    #[test]
    fn a_tcp_mount_makes_a_ready_node_degraded() {
        let ok = vec![CheckResult::pass(
            crate::checks::catalogue::nvidia_fs_loaded::ID,
            "ok",
        )];
        let p = pass_with(ok.clone(), vec![mount("rdma", Verdict::Ready)]);
        assert_eq!((p.verdict(), p.tier()), (Verdict::Ready, Tier::Ready));
        let p = pass_with(ok, vec![mount("tcp", Verdict::NotReady)]);
        assert_eq!((p.verdict(), p.tier()), (Verdict::NotReady, Tier::Degraded));
        assert_eq!(p.mounts_not_ready(), 1);
        let doc: serde_json::Value = serde_json::from_str(&p.status_json()).unwrap();
        assert_eq!(doc["verdict"], "not-ready");
        assert_eq!(doc["tier"], "degraded");
        assert_eq!(doc["mounts"][0]["pod_uid"], "u-1");
        let p = pass_with(
            vec![CheckResult::fail(
                crate::checks::catalogue::nvidia_fs_loaded::ID,
                "not loaded",
            )],
            vec![],
        );
        assert_eq!(p.tier(), Tier::Absent);
    }
}
