//! Doctor's I/O path section: for each NFS server this node talks to, the route, network device,
//! RDMA device and PCI function that carry it, how far that NIC is from each GPU, and which
//! mounts of the table are that server's (by the `addr=` the kernel shows).

use std::net::IpAddr;

use super::finding::{finding, Finding};
use crate::host::mounts::MountTable;
use crate::host::HostFacts;

/// The mount points of NFS mounts whose `addr=` is `server` (at most a few, then a count).
fn mounts_of(table: &MountTable, server: IpAddr) -> String {
    let points: Vec<String> = table
        .mounts
        .iter()
        .filter(|m| m.is_nfs())
        .filter(|m| {
            m.info
                .super_option("addr")
                .and_then(|a| a.parse::<IpAddr>().ok())
                .is_some_and(|a| a == server)
        })
        .map(|m| m.info.mount_point_shown().to_string())
        .collect();
    match points.len() {
        0 => String::new(),
        n if n <= 4 => format!(" (mounted on {})", points.join(", ")),
        n => format!(
            " (mounted on {} and {} more)",
            points[..3].join(", "),
            n - 3
        ),
    }
}

pub fn findings(facts: &HostFacts, table: Option<&MountTable>) -> Vec<Finding> {
    let Some(servers) = &facts.io_paths.servers else {
        return Vec::new();
    };
    servers
        .iter()
        .map(|p| {
            let mounts = table
                .map(|t| mounts_of(t, p.server.address))
                .unwrap_or_default();
            let mut text = format!(
                "NFS {} server {}{mounts}: {}",
                p.server.version,
                p.server.hostname,
                p.describe()
            );
            if !p.gpus.is_empty() {
                text.push_str(&format!("; to the GPUs: {}", p.distances()));
            } else if !facts.pci.gpus.is_empty() && p.net.is_some() {
                text.push_str("; its PCIe place is not shown by sysfs");
            }
            finding("io-path", text)
        })
        .collect()
}
