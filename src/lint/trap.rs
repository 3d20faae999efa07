//! The transport trap, seen in manifests: with NFSv4 the kernel shares one client per server,
//! so when one volume mounts a server over TCP and another the same server over RDMA, whichever
//! mounts second gets the first one's transport — a GDS volume asked for RDMA runs over TCP.
//! `nosharecache` (which a vendor document teaches for exactly this) only stops superblock
//! sharing, not client sharing. NFSv3 clients are not shared across transports.

use super::volumes::NfsVolume;
use super::{Finding, Severity};
use crate::nfs::NfsVersion;

const RULE: &str = "transport-trap";

/// Whether the volume mounts with NFSv4 (the default when it names no version).
fn is_v4(v: &NfsVolume) -> bool {
    v.option(&["vers", "nfsvers"])
        .is_none_or(|(vers, _)| vers.parse::<NfsVersion>().is_ok_and(NfsVersion::is_v4))
}

fn same_server(a: &NfsVolume, b: &NfsVolume) -> bool {
    match (&a.server, &b.server) {
        (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
        _ => false,
    }
}

pub fn judge(volumes: &[NfsVolume], out: &mut Vec<Finding>) {
    for rdma in volumes
        .iter()
        .filter(|v| v.meant_for_gds && v.asks_for_rdma())
    {
        if let Some(o) = rdma.flag("nosharecache") {
            out.push(rdma.finding_at(
                o.line,
                Severity::Warn,
                RULE,
                format!("{}: nosharecache does not give this mount its own NFSv4 client: if the server is also mounted over TCP, this mount runs over TCP too", rdma.what),
            ));
        }
        if !is_v4(rdma) {
            continue;
        }
        let tcp = volumes
            .iter()
            .find(|t| !t.asks_for_rdma() && is_v4(t) && same_server(rdma, t));
        if let Some(t) = tcp {
            out.push(rdma.finding_at(
                rdma.line,
                Severity::Fail,
                RULE,
                format!(
                    "{}: {} ({}:{}) mounts the same server {} (export {}) over TCP with NFSv4; on a node with both, the second mount shares the first one's client and its transport, so this volume may run over TCP (use one transport per server, or NFSv3 for the TCP one)",
                    rdma.what,
                    t.what,
                    t.file,
                    t.line,
                    rdma.server.as_deref().unwrap_or_default(),
                    t.export.as_deref().unwrap_or("?")
                ),
            ));
        }
    }
}
