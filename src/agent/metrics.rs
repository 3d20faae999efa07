//! The Prometheus textfile-collector file: node readiness, one-hot check status, and one
//! `nfs_gds_mount_ready` series per RDMA mount, labelled like node_exporter's mountstats series
//! (`export`, `mountaddr`, `protocol`) so the two join, plus `mountpoint` and, for kubelet
//! mounts, `pod_uid` and `volume`.

use std::fmt::Write as _;

use super::schedule::unix_seconds;
use super::Pass;
use crate::checks::Status;

/// Escapes a Prometheus label value.
fn prom_escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

const STATUSES: [Status; 5] = [
    Status::Pass,
    Status::Warn,
    Status::Unknown,
    Status::Fail,
    Status::Skip,
];

fn header(out: &mut String, name: &str, help: &str) -> std::fmt::Result {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} gauge")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", prom_escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// One-hot status per check. The one place to change when checks come from elsewhere.
fn check_series(pass: &Pass, out: &mut String) -> std::fmt::Result {
    header(
        out,
        "nfs_gds_check_status",
        "Status of each nfs-gds node check; exactly one status per check is 1.",
    )?;
    for c in &pass.node.checks {
        for s in STATUSES {
            writeln!(
                out,
                "nfs_gds_check_status{{check=\"{}\",status=\"{}\"}} {}",
                c.id,
                s.as_str(),
                u8::from(c.status == s)
            )?;
        }
    }
    Ok(())
}

fn mount_series(pass: &Pass, out: &mut String) -> std::fmt::Result {
    header(
        out,
        "nfs_gds_mount_ready",
        "1 when a mount meant for RDMA passes the post-mount checks (every xprt is RDMA, proto and port right, no transport trap).",
    )?;
    for m in &pass.mounts {
        let mut pairs = vec![
            ("export", m.export.as_str()),
            ("mountaddr", m.mountaddr.as_deref().unwrap_or("")),
            ("protocol", m.protocol.as_str()),
            ("mountpoint", m.mountpoint.as_str()),
            ("meant_by", m.meant_by),
        ];
        if let (Some(uid), Some(volume)) = (&m.pod_uid, &m.volume) {
            pairs.push(("pod_uid", uid));
            pairs.push(("volume", volume));
        }
        writeln!(
            out,
            "nfs_gds_mount_ready{{{}}} {}",
            labels(&pairs),
            u8::from(m.is_ready())
        )?;
    }
    header(
        out,
        "nfs_gds_rdma_mounts",
        "Mounts meant for RDMA (by their options, the helper's record, or the policy).",
    )?;
    writeln!(out, "nfs_gds_rdma_mounts {}", pass.mounts.len())?;
    header(
        out,
        "nfs_gds_rdma_mounts_not_ready",
        "Mounts meant for RDMA that fail a post-mount check (e.g. run over TCP).",
    )?;
    writeln!(
        out,
        "nfs_gds_rdma_mounts_not_ready {}",
        pass.mounts_not_ready()
    )
}

/// The whole file: HELP/TYPE for every metric, no client timestamps, trailing newline.
pub fn prometheus_file(pass: &Pass, info: &[(&str, String)]) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    header(
        &mut out,
        "nfs_gds_ready",
        "1 when no nfs-gds node check fails and every mount meant for RDMA runs over RDMA.",
    )?;
    writeln!(out, "nfs_gds_ready {}", u8::from(pass.is_ready()))?;
    check_series(pass, &mut out)?;
    mount_series(pass, &mut out)?;
    header(
        &mut out,
        "nfs_gds_info",
        "Facts about this node's GDS stack, as labels.",
    )?;
    let pairs: Vec<(&str, &str)> = info
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain([("tier", pass.tier().as_str())])
        .collect();
    writeln!(out, "nfs_gds_info{{{}}} 1", labels(&pairs))?;
    header(
        &mut out,
        "nfs_gds_interval_seconds",
        "Seconds between agent passes (alert when the last run is older than three).",
    )?;
    writeln!(out, "nfs_gds_interval_seconds {}", pass.interval.as_secs())?;
    header(
        &mut out,
        "nfs_gds_last_run_timestamp_seconds",
        "When the agent last checked this node.",
    )?;
    writeln!(
        out,
        "nfs_gds_last_run_timestamp_seconds {}",
        unix_seconds(pass.at)
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tests::{mount, pass_with};
    use crate::checks::{CheckResult, Verdict};

    #[test]
    fn prometheus_file_is_well_formed() {
        let p = pass_with(
            vec![
                CheckResult::pass(crate::checks::catalogue::nvidia_fs_loaded::ID, "ok"),
                CheckResult::fail(crate::checks::catalogue::rpcrdma_hooks::ID, "missing"),
            ],
            vec![mount("tcp", Verdict::NotReady)],
        );
        let text = prometheus_file(&p, &[("kernel_release", "6.8\"x".into())]).unwrap();
        assert!(text.ends_with('\n'));
        assert!(text.contains("nfs_gds_ready 0\n"));
        assert!(text.contains("nfs_gds_check_status{check=\"rpcrdma-hooks\",status=\"fail\"} 1\n"));
        assert!(text.contains("nfs_gds_check_status{check=\"rpcrdma-hooks\",status=\"pass\"} 0\n"));
        assert!(text.contains("nfs_gds_mount_ready{export=\"10.0.2.15:/export\",mountaddr=\"10.0.2.15\",protocol=\"tcp\",mountpoint=\"/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~nfs/data\",meant_by=\"policy\",pod_uid=\"u-1\",volume=\"data\"} 0\n"), "{text}");
        assert!(text.contains("nfs_gds_rdma_mounts_not_ready 1\n"));
        assert!(text.contains("kernel_release=\"6.8\\\"x\",tier=\"degraded\""));
        assert!(text.contains("nfs_gds_interval_seconds 60\n"));
        assert!(text.contains("nfs_gds_last_run_timestamp_seconds 1800000000\n"));
        // Every sample line's metric has HELP and TYPE before it.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(text.contains(&format!("# TYPE {name} gauge")), "{name}");
        }
    }
}
