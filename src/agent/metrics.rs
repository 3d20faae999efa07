//! The Prometheus textfile-collector file: node readiness, one-hot check status, and one
//! `nfs_gds_mount_ready` series per RDMA mount, labelled like node_exporter's mountstats series
//! (`export`, `mountaddr`, `protocol`) so the two join, plus `mountpoint` and, for kubelet
//! mounts, `pod_uid` and `volume`.

use std::io::{self, Write};

use super::nvfs_metrics;
use super::prom::{header, typed_header, write_labels};
use super::schedule::unix_seconds;
use super::Pass;
use crate::checks::Status;

const STATUSES: [Status; 5] = [
    Status::Pass,
    Status::Warn,
    Status::Unknown,
    Status::Fail,
    Status::Skip,
];

/// One-hot status per check. The one place to change when checks come from elsewhere.
fn check_series(pass: &Pass, out: &mut impl Write) -> io::Result<()> {
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

fn mount_series(pass: &Pass, out: &mut impl Write) -> io::Result<()> {
    header(
        out,
        "nfs_gds_mount_ready",
        "1 when a mount meant for RDMA passes the post-mount checks (every xprt is RDMA, proto and port right, no transport trap).",
    )?;
    for m in &pass.mounts {
        let mut pairs = [
            ("export", m.export),
            ("mountaddr", m.mountaddr.unwrap_or("")),
            ("protocol", m.protocol),
            ("mountpoint", m.mountpoint.as_ref()),
            ("meant_by", m.meant_by),
            ("pod_uid", ""),
            ("volume", ""),
        ];
        let n = match (m.pod_uid, m.volume) {
            (Some(uid), Some(volume)) => {
                pairs[5].1 = uid;
                pairs[6].1 = volume;
                7
            }
            _ => 5,
        };
        out.write_all(b"nfs_gds_mount_ready{")?;
        write_labels(out, &pairs[..n])?;
        out.write_all(if m.is_ready() { b"} 1\n" } else { b"} 0\n" })?;
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

/// The container hook's counters (`nfs-gds oci-hook`), since boot.
fn hook_series(pass: &Pass, out: &mut impl Write) -> io::Result<()> {
    typed_header(
        out,
        "nfs_gds_oci_hook_refusals_total",
        "Container starts nfs-gds oci-hook refused (a volume meant for GDS failed an enforced check, or the hook could not tell for a container marked for GDS).",
        "counter",
    )?;
    writeln!(
        out,
        "nfs_gds_oci_hook_refusals_total {}",
        pass.oci_hook.refusals
    )?;
    typed_header(
        out,
        "nfs_gds_oci_hook_warnings_total",
        "Container starts nfs-gds oci-hook let through with a warning (a check at warn failed, or the hook could not tell).",
        "counter",
    )?;
    writeln!(
        out,
        "nfs_gds_oci_hook_warnings_total {}",
        pass.oci_hook.warnings
    )?;
    typed_header(
        out,
        "nfs_gds_hook_annotation_problems_total",
        "Container starts whose nfs-gds/ annotations nfs-gds oci-hook could not use (kind: unknown-key, a misspelt key; no-such-volume, nfs-gds/gds-volumes names a path the container does not mount; bad-value, nfs-gds/gds is neither yes nor no).",
        "counter",
    )?;
    for (kind, n) in pass.oci_hook.annotation_problems.by_kind() {
        writeln!(
            out,
            "nfs_gds_hook_annotation_problems_total{{kind=\"{kind}\"}} {n}"
        )?;
    }
    typed_header(
        out,
        "nfs_gds_nri_connected",
        "1 while nfs-gds nri, the NRI plugin, runs (holds its lock) and registered with the runtime after the runtime last started; 0 otherwise: containers start unjudged (NRI fails open).",
        "gauge",
    )?;
    writeln!(
        out,
        "nfs_gds_nri_connected {}",
        u8::from(pass.nri_connected)
    )?;
    Ok(())
}

/// The whole file: HELP/TYPE for every metric, no client timestamps, trailing newline.
/// Buffered here: its many small writes are a line or a label each.
pub fn write_prometheus_file(
    pass: &Pass,
    info: &[(&str, String)],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut buffered = io::BufWriter::with_capacity(64 * 1024, out);
    write_all_series(pass, info, &mut buffered)?;
    buffered.flush()
}

fn write_all_series(pass: &Pass, info: &[(&str, String)], out: &mut impl Write) -> io::Result<()> {
    header(
        out,
        "nfs_gds_ready",
        "1 when no nfs-gds node check fails and every mount meant for RDMA runs over RDMA.",
    )?;
    writeln!(out, "nfs_gds_ready {}", u8::from(pass.is_ready()))?;
    check_series(pass, out)?;
    mount_series(pass, out)?;
    if let Some(stats) = &pass.nvfs_stats {
        nvfs_metrics::write_nvfs_series(stats.as_ref().ok(), out)?;
    }
    hook_series(pass, out)?;
    header(
        out,
        "nfs_gds_info",
        "Facts about this node's GDS stack, as labels.",
    )?;
    let pairs: Vec<(&str, &str)> = info
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain([("tier", pass.tier().as_str())])
        .collect();
    out.write_all(b"nfs_gds_info{")?;
    write_labels(out, &pairs)?;
    writeln!(out, "}} 1")?;
    header(
        out,
        "nfs_gds_interval_seconds",
        "Seconds between agent passes (alert when the last run is older than three).",
    )?;
    writeln!(out, "nfs_gds_interval_seconds {}", pass.interval.as_secs())?;
    header(
        out,
        "nfs_gds_last_run_timestamp_seconds",
        "When the agent last checked this node.",
    )?;
    writeln!(
        out,
        "nfs_gds_last_run_timestamp_seconds {}",
        unix_seconds(pass.at)
    )
}

/// [`write_prometheus_file`] into a string.
pub fn prometheus_file(pass: &Pass, info: &[(&str, String)]) -> String {
    let mut out = Vec::new();
    write_prometheus_file(pass, info, &mut out).expect("writing to memory does not fail");
    String::from_utf8(out).expect("the textfile is built from UTF-8 text")
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
        let text = prometheus_file(&p, &[("kernel_release", "6.8\"x".into())]);
        assert!(text.ends_with('\n'));
        assert!(text.contains("nfs_gds_ready 0\n"));
        assert!(text.contains("nfs_gds_check_status{check=\"rpcrdma-hooks\",status=\"fail\"} 1\n"));
        assert!(text.contains("nfs_gds_check_status{check=\"rpcrdma-hooks\",status=\"pass\"} 0\n"));
        assert!(text.contains("nfs_gds_mount_ready{export=\"10.0.2.15:/export\",mountaddr=\"10.0.2.15\",protocol=\"tcp\",mountpoint=\"/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~nfs/data\",meant_by=\"policy\",pod_uid=\"u-1\",volume=\"data\"} 0\n"), "{text}");
        assert!(text.contains("nfs_gds_rdma_mounts_not_ready 1\n"));
        assert!(text.contains("kernel_release=\"6.8\\\"x\",tier=\"degraded\""));
        assert!(text.contains("nfs_gds_interval_seconds 60\n"));
        assert!(text.contains(
            "# TYPE nfs_gds_oci_hook_refusals_total counter\nnfs_gds_oci_hook_refusals_total 0\n"
        ));
        assert!(text.contains("nfs_gds_oci_hook_warnings_total 0\n"));
        assert!(text.contains("# TYPE nfs_gds_nri_connected gauge\nnfs_gds_nri_connected 0\n"));
        let mut up = p.clone();
        up.nri_connected = true;
        assert!(prometheus_file(&up, &[]).contains("nfs_gds_nri_connected 1\n"));
        assert!(text.contains("nfs_gds_last_run_timestamp_seconds 1800000000\n"));
        // Every sample line's metric has HELP and TYPE before it.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            let kind = if name.ends_with("_total") {
                "counter"
            } else {
                "gauge"
            };
            assert!(text.contains(&format!("# TYPE {name} {kind}")), "{name}");
        }
    }
}
