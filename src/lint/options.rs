//! The mount options of a volume meant for GDS: RDMA asked for (`proto=rdma|rdma6` or `rdma`),
//! never TCP or UDP, the NFS/RDMA port, and an NFS version that runs over RDMA, stated exactly.

use super::volumes::NfsVolume;
use super::{Finding, Severity};
use crate::nfs::{NfsVersion, NFS_RDMA_PORT};

const RULE_PROTO: &str = "volume-proto";
const RULE_PORT: &str = "volume-port";
const RULE_VERS: &str = "volume-vers";

pub fn judge(v: &NfsVolume, out: &mut Vec<Finding>) {
    if !v.meant_for_gds {
        return;
    }
    let what = &v.what;
    if let Some((proto, o)) = v.option(&["proto"]) {
        if proto != "rdma" && proto != "rdma6" {
            out.push(v.finding_at(
                o.line,
                Severity::Fail,
                RULE_PROTO,
                format!("{what}: proto={proto}: a GDS volume must be mounted over RDMA (proto=rdma), or GDS I/O goes through CPU bounce buffers"),
            ));
        }
    } else if let Some(o) = v.flag("tcp").or_else(|| v.flag("udp")) {
        out.push(v.finding_at(
            o.line,
            Severity::Fail,
            RULE_PROTO,
            format!(
                "{what}: {}: a GDS volume must be mounted over RDMA (proto=rdma)",
                o.text
            ),
        ));
    } else if !v.asks_for_rdma() {
        out.push(v.finding(
            Severity::Fail,
            RULE_PROTO,
            format!("{what}: its mountOptions do not ask for RDMA, so it is mounted over TCP; add proto=rdma and port={NFS_RDMA_PORT}"),
        ));
    }
    if let Some((port, o)) = v.option(&["port"]) {
        if port.parse::<u16>() != Ok(NFS_RDMA_PORT) {
            out.push(v.finding_at(
                o.line,
                Severity::Fail,
                RULE_PORT,
                format!("{what}: port={port}: NFS/RDMA servers listen on {NFS_RDMA_PORT}"),
            ));
        }
    }
    match v.option(&["vers", "nfsvers"]) {
        Some((vers, o)) => match vers.parse::<NfsVersion>() {
            Ok(NfsVersion::V4(None)) => out.push(v.finding_at(
                o.line,
                Severity::Warn,
                RULE_VERS,
                format!("{what}: vers=4 lets mount.nfs negotiate the minor version; say vers=4.1 or vers=4.2 (or 3) as the server supports over RDMA"),
            )),
            Ok(_) => {}
            Err(e) => out.push(v.finding_at(o.line, Severity::Fail, RULE_VERS, format!("{what}: {e}"))),
        },
        None => out.push(v.finding(
            Severity::Warn,
            RULE_VERS,
            format!("{what}: no vers= in its mountOptions: mount.nfs negotiates one; state the version the server supports over RDMA (e.g. vers=4.2, or 3)"),
        )),
    }
}
