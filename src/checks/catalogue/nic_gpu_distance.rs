//! `nic-gpu-distance`: the NIC that carries each NFS server (by the route to its address) has a
//! GPU nearer than the CPU interconnect between sockets. Advisory: when it is `SYS` to every GPU,
//! GPU-direct reads cross sockets and can be *slower* than the bounce path through CPU memory —
//! gds-nvidia-fs issue #30 measured 6.9 GiB/s GPU-direct against 20.6 GiB/s through CPU memory
//! on such a pair.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::platform::io_path::{ServerPath, NFS_SERVERS};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("nic-gpu-distance");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the RDMA NIC that the route to each NFS server leaves by is nearer to some GPU than across sockets (`SYS`, as `nvidia-smi topo -m` says it) (advisory)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

/// The published figures for a NIC that is SYS to the GPU.
pub const ISSUE_30: &str = "gds-nvidia-fs issue #30: 6.9 GiB/s GPU-direct against 20.6 GiB/s through CPU memory with the NIC SYS to the GPU";

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let Some(servers) = &facts.io_paths.servers else {
        return CheckResult::skip(id, format!("no NFS client state: /{NFS_SERVERS} is absent"));
    };
    if facts.pci.gpus.is_empty() {
        return CheckResult::skip(id, "no NVIDIA GPU on the PCI bus");
    }
    let rdma: Vec<&ServerPath> = servers
        .iter()
        .filter(|p| p.net.as_ref().is_some_and(|n| !n.rdma_devices.is_empty()))
        .collect();
    if rdma.is_empty() {
        return CheckResult::skip(
            id,
            if servers.is_empty() {
                "this node has no NFS server in use".to_string()
            } else {
                format!(
                    "none of the {} NFS server(s) in use is reached by a network device with an RDMA device",
                    servers.len()
                )
            },
        );
    }
    let placed: Vec<&ServerPath> = rdma
        .iter()
        .copied()
        .filter(|p| !p.gpus.is_empty())
        .collect();
    let with_path = |mut r: CheckResult, paths: &[&ServerPath]| {
        for p in paths {
            r = r.with(format!("NFS server {}", p.server.hostname), p.describe());
            if !p.gpus.is_empty() {
                r = r.with("distance to the GPUs", p.distances());
            }
        }
        r
    };
    if placed.is_empty() {
        return with_path(
            CheckResult::unknown(
                id,
                "the PCIe place of the NIC carrying the NFS servers is not shown by sysfs (no PCI function under /sys/devices/pci*)",
            ),
            &rdma,
        );
    }
    let far: Vec<&ServerPath> = placed
        .iter()
        .copied()
        .filter(|p| p.only_across_sockets())
        .collect();
    if far.is_empty() {
        let nearest = placed
            .iter()
            .map(|p| format!("{} {}", p.server.hostname, p.gpus[0].distance.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        return with_path(
            CheckResult::pass(
                id,
                format!("each NFS server's RDMA NIC has a GPU nearer than across sockets (nearest: {nearest})"),
            ),
            &placed,
        );
    }
    let names: Vec<String> = far
        .iter()
        .map(|p| {
            let net = p.net.as_ref().map(|n| n.name.as_str()).unwrap_or("?");
            format!("{} (by {net})", p.server.hostname)
        })
        .collect();
    with_path(
        CheckResult::warn(
            id,
            format!(
                "the NIC carrying NFS server {} is SYS to every GPU: GPU-direct reads cross the CPU interconnect and can be slower than reading through CPU memory",
                names.join(", ")
            ),
        ),
        &far,
    )
    .with("published evidence", ISSUE_30)
    .remedy("route the storage network by a NIC under the same PCIe switch or host bridge as the GPUs (or run GPU jobs on a socket that has one); where there is none, compare `gdsio -x 0` (GPU-direct) with `-x 2` (through CPU memory) on this pair before choosing GPU-direct")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::host::platform::io_path::{GpuDistance, IoPaths, NfsServer};
    use crate::host::platform::net_route::Route;
    use crate::host::platform::pcie_tree::PcieDistance;
    use crate::host::platform::rdma_netdev::NetDevice;

    fn path(rdma: bool, distances: &[PcieDistance]) -> ServerPath {
        ServerPath {
            server: NfsServer {
                version: "v4".into(),
                address: "10.20.0.5".parse().unwrap(),
                port: 20049,
                hostname: "filer".into(),
            },
            route: Some(Route {
                device: "ib0".into(),
                destination: "10.20.0.0".parse().unwrap(),
                prefix_len: 16,
                gateway: None,
                metric: 0,
            }),
            net: Some(NetDevice {
                name: "ib0".into(),
                rdma_devices: if rdma { vec!["mlx5_0".into()] } else { vec![] },
                pci: Some("0000:af:00.0".into()),
            }),
            nic: None,
            gpus: distances
                .iter()
                .enumerate()
                .map(|(i, d)| GpuDistance {
                    gpu: format!("0000:{:02x}:00.0", 0x3d + i),
                    distance: *d,
                })
                .collect(),
        }
    }

    fn judge(servers: Option<Vec<ServerPath>>, gpus: usize) -> CheckResult {
        let empty = tempfile::tempdir().unwrap();
        let mut facts = HostFacts::read(&crate::host::Root::new(empty.path())).unwrap();
        facts.io_paths = IoPaths { servers };
        facts.pci.gpus = (0..gpus)
            .map(|i| crate::host::platform::pci::PciDevice {
                address: format!("0000:{:02x}:00.0", 0x3d + i),
                vendor: 0x10de,
                class: 0x030200,
                iommu_group_type: None,
                rdma_names: vec![],
            })
            .collect();
        run(&facts)
    }

    #[test]
    fn sys_to_every_gpu_warns_with_the_published_figures() {
        use PcieDistance::*;
        let r = judge(Some(vec![path(true, &[Sys, Sys])]), 2);
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(
            r.summary.contains("filer (by ib0) is SYS to every GPU"),
            "{}",
            r.summary
        );
        assert!(r.evidence.iter().any(|e| e.seen.contains("6.9 GiB/s")));
        assert!(r
            .evidence
            .iter()
            .any(|e| e.seen == "GPU 0000:3d:00.0 SYS, GPU 0000:3e:00.0 SYS"));
        let r = judge(Some(vec![path(true, &[Pix, Sys])]), 2);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert!(r.summary.contains("filer PIX"), "{}", r.summary);
    }

    #[test]
    fn nothing_to_judge_is_said_not_passed() {
        assert_eq!(judge(None, 2).status, Status::Skip);
        assert_eq!(judge(Some(vec![]), 2).status, Status::Skip);
        assert_eq!(judge(Some(vec![path(true, &[])]), 0).status, Status::Skip);
        let r = judge(Some(vec![path(false, &[PcieDistance::Sys])]), 1);
        assert_eq!(r.status, Status::Skip);
        assert!(r.summary.contains("RDMA device"), "{}", r.summary);
        let r = judge(Some(vec![path(true, &[])]), 1);
        assert_eq!(r.status, Status::Unknown, "{r:?}");
    }
}
