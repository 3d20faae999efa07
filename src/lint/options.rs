//! The mount options of a volume meant for GDS: RDMA asked for (`proto=rdma|rdma6` or `rdma`),
//! never TCP or UDP, the NFS/RDMA port (another one warns: some servers serve RDMA on 2049), an
//! NFS version that runs over RDMA, stated exactly and once, and an `nconnect=` the kernel takes.

use super::volumes::{MountOption, NfsVolume};
use super::{Finding, Severity};
use crate::nfs::{
    is_rdma_netid, rdma_port_warning, NfsVersion, NFS_MAX_CONNECTIONS, NFS_RDMA_PORT,
};

const RULE_PROTO: &str = "volume-proto";
const RULE_PORT: &str = "volume-port";
const RULE_VERS: &str = "volume-vers";
const RULE_NCONNECT: &str = "volume-nconnect";

pub fn judge(v: &NfsVolume, out: &mut Vec<Finding>) {
    if !v.meant_for_gds {
        return;
    }
    let what = &v.what;
    if let Some((proto, o)) = v.option(&["proto"]) {
        if !is_rdma_netid(proto) {
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
        match port.parse::<u16>() {
            Ok(p) => {
                if let Some(warning) = rdma_port_warning(p) {
                    out.push(v.finding_at(
                        o.line,
                        Severity::Warn,
                        RULE_PORT,
                        format!("{what}: {warning}"),
                    ));
                }
            }
            Err(_) => out.push(v.finding_at(
                o.line,
                Severity::Fail,
                RULE_PORT,
                format!("{what}: port={port}: a port is a number from 0 to 65535"),
            )),
        }
    }
    if let Some((n, o)) = v.option(&["nconnect"]) {
        if !n
            .parse::<u32>()
            .is_ok_and(|n| (1..=NFS_MAX_CONNECTIONS).contains(&n))
        {
            out.push(v.finding_at(
                o.line,
                Severity::Fail,
                RULE_NCONNECT,
                format!("{what}: nconnect={n}: the kernel takes 1 to {NFS_MAX_CONNECTIONS} connections and refuses the mount otherwise"),
            ));
        }
    }
    // Two versions that differ: mount.nfs would take the last one, the helper refuses both.
    let versions: Vec<(&MountOption, Option<NfsVersion>)> = v
        .options
        .iter()
        .filter_map(|o| match o.split() {
            ("vers" | "nfsvers", Some(val)) => Some((o, val.parse().ok())),
            _ => None,
        })
        .collect();
    if let Some((second, _)) = versions.iter().find(|(_, ver)| *ver != versions[0].1) {
        out.push(v.finding_at(
            second.line,
            Severity::Fail,
            RULE_VERS,
            format!(
                "{what}: options {} and {} contradict each other (the helper refuses them): say the NFS version once",
                versions[0].0.text, second.text
            ),
        ));
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
