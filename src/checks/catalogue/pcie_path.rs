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
    // Each GPU once, in the order of the file, whose rows need not be grouped by GPU.
    let mut gpus: Vec<&str> = Vec::new();
    for r in &pairs {
        if !gpus.contains(&r.gpu.as_str()) {
            gpus.push(&r.gpu);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::rdma_nic;
    use crate::host::platform::nvfs_topology::PeerDistance;

    fn row(gpu: &str, peer: &str, p2pdist: u32, class: &str) -> PeerDistance {
        PeerDistance {
            gpu: gpu.into(),
            peer: peer.into(),
            p2pdist,
            numa: Some(0),
            class: class.into(),
        }
    }

    fn node(rows: Option<Result<Vec<PeerDistance>, String>>) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.nvidia_fs.loaded = true;
                f.nvfs_topology.peer_distance = rows;
                f.pci
                    .rdma_nics
                    .push(rdma_nic("0000:5e:00.0", Some("identity")));
            })
            .build()
    }

    #[test]
    fn passes_when_every_gpu_has_a_near_nic() {
        let r = run(&node(Some(Ok(vec![
            row("0000:3b:00.0", "0000:5e:00.0", 0x7f, "network"),
            row("0000:3b:00.0", "0000:5e:00.0", 0x10, "network"),
        ]))));
        says(
            &r,
            Status::Pass,
            &["every GPU has an RDMA NIC under the same root complex"],
        );
        assert_eq!(
            seen(&r, "peer_distance"),
            "0000:3b:00.0->0000:5e:00.0 p2pdist 0x007f, 0000:3b:00.0->0000:5e:00.0 p2pdist 0x0010"
        );
    }

    #[test]
    fn warns_of_a_gpu_whose_nics_are_all_far() {
        let r = run(&node(Some(Ok(vec![row(
            "0000:3b:00.0",
            "0000:5e:00.0",
            0x7f,
            "network",
        )]))));
        says(
            &r,
            Status::Warn,
            &["GPU 0000:3b:00.0 has no RDMA NIC under its root complex"],
        );
        assert!(remedy(&r).contains("same PCIe switch"));
    }

    #[test]
    fn names_each_far_gpu_once_when_its_rows_are_not_together() {
        let r = run(&node(Some(Ok(vec![
            row("0000:3b:00.0", "0000:5e:00.0", 0x7f, "network"),
            row("0000:86:00.0", "0000:5e:00.0", 0x10, "network"),
            row("0000:3b:00.0", "0000:5e:00.0", 0x80, "network"),
        ]))));
        says(&r, Status::Warn, &["GPU 0000:3b:00.0 has no RDMA NIC"]);
        assert!(
            !r.summary.contains("0000:3b:00.0, 0000:3b:00.0"),
            "{}",
            r.summary
        );
    }

    #[test]
    fn ignores_peers_that_are_not_the_rdma_nics() {
        let r = run(&node(Some(Ok(vec![
            row("0000:3b:00.0", "0000:99:00.0", 0x7f, "network"),
            row("0000:3b:00.0", "0000:5e:00.0", 0x7f, "nvme"),
        ]))));
        says(&r, Status::Skip, &["no GPU and RDMA NIC pair"]);
    }

    #[test]
    fn skips_without_the_file_and_is_unknown_when_it_does_not_parse() {
        says(
            &run(&node(None)),
            Status::Skip,
            &["publishes no /proc/driver/nvidia-fs/peer_distance"],
        );
        let r = run(&node(Some(Err(
            "/proc/driver/nvidia-fs/peer_distance line 2: bad p2pdist".into(),
        ))));
        says(&r, Status::Unknown, &["line 2: bad p2pdist"]);
    }
}
