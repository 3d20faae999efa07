//! Doctor's I/O path section: for each NFS server this node talks to, the route, network device,
//! RDMA device and PCI function that carry it, and how far that NIC is from each GPU.

use super::{finding, Finding};
use crate::host::HostFacts;

pub fn findings(facts: &HostFacts) -> Vec<Finding> {
    let Some(servers) = &facts.io_paths.servers else {
        return Vec::new();
    };
    servers
        .iter()
        .map(|p| {
            let mut text = format!(
                "NFS {} server {}: {}",
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
