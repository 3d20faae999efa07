//! `pcie-path`: each GPU and RDMA NIC nvidia-fs knows share a PCIe switch or root port, from the
//! `p2pdist` column of `/proc/driver/nvidia-fs/peer_distance` (127 and more: different root
//! complexes). Advisory: P2P across root complexes is slow or unsupported.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("pcie-path");

pub static CHECK: Check = Check {
    id: ID,
    doc: "in `/proc/driver/nvidia-fs/peer_distance`, every GPU has an RDMA NIC under the same root complex (advisory; skipped when absent)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rows = match &facts.nvfs_topology.peer_distance {
        None => return CheckResult::skip(id, absent(facts, "peer_distance")),
        Some(Err(e)) => return CheckResult::unknown(id, e.clone()),
        Some(Ok(rows)) => rows,
    };
    let nics: Vec<&str> = facts
        .pci
        .rdma_nics
        .iter()
        .map(|d| d.address.as_str())
        .collect();
    let is_nic = |peer: &str| nics.contains(&peer) || nics.is_empty();
    let pairs: Vec<_> = rows
        .iter()
        .filter(|r| r.class == "network" && is_nic(&r.peer))
        .collect();
    if pairs.is_empty() {
        return CheckResult::skip(id, "nvidia-fs lists no GPU and RDMA NIC pair");
    }
    let seen = pairs
        .iter()
        .map(|r| format!("{}->{} p2pdist {:#06x}", r.gpu, r.peer, r.p2pdist))
        .collect::<Vec<_>>()
        .join(", ");
    let mut gpus: Vec<&str> = pairs.iter().map(|r| r.gpu.as_str()).collect();
    gpus.dedup();
    let far: Vec<&str> = gpus
        .into_iter()
        .filter(|g| {
            pairs
                .iter()
                .filter(|r| r.gpu == *g)
                .all(|r| r.crosses_root_complex())
        })
        .collect();
    if far.is_empty() {
        CheckResult::pass(id, "every GPU has an RDMA NIC under the same root complex")
            .with("peer_distance", seen)
    } else {
        CheckResult::warn(
            id,
            format!("GPU {} has no RDMA NIC under its root complex: P2P DMA crosses the CPU interconnect", far.join(", ")),
        )
        .with("peer_distance", seen)
        .remedy("put the NIC that carries the NFS mounts under the same PCIe switch or root port as the GPU, or run the job on the GPU next to that NIC")
    }
}

fn absent(facts: &HostFacts, file: &str) -> String {
    if facts.nvidia_fs.loaded {
        format!("nvidia_fs publishes no /proc/driver/nvidia-fs/{file}")
    } else {
        "nvidia_fs is not loaded".to_string()
    }
}
