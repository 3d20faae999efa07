//! The GPU side of the plan: NVIDIA's GPU driver and its open flavour, nvidia-fs from packages or
//! from the GPU Operator's [driver container](driver_container), and what a node without any of
//! it would need.

use super::step::{Action, Step};
use crate::doctor::stack::{Family, Stack};
use crate::doctor::stacks::driver_container;
use crate::doctor::stacks::ofed::install_nfsrdma_step;

/// nvidia_fs is not loaded: the GPU Operator's switch, or the packages (and the open GPU
/// modules nvidia-fs needs).
pub(super) fn nvidia_fs_steps(s: &Stack) -> Vec<Step> {
    let mut steps = Vec::new();
    if driver_container::manages(s) {
        steps.push(driver_container::enable_gds_step(s));
    } else {
        steps.push(Step::manual(
            "Install the GDS kernel driver (nvidia-fs)",
            "nvidia_fs is not loaded; without it GPU reads over NFS always go through CPU bounce buffers",
            match s.family {
                Family::Debian => vec!["apt-get install nvidia-gds   # pulls nvidia-fs-dkms".into()],
                Family::Rhel => vec!["dnf install nvidia-gds   # pulls nvidia-fs-dkms".into()],
                _ => vec!["install NVIDIA's nvidia-gds / nvidia-fs-dkms package for this distribution".into()],
            },
        ));
        steps.push(Step::auto(
            "Load nvidia_fs",
            "load the driver now (it is loaded at boot once installed)",
            Action::LoadModule {
                module: "nvidia-fs".into(),
            },
        ));
    }
    steps
}

/// nvidia.ko is missing while a GPU is on the bus, or it is the proprietary flavour.
pub(super) fn gpu_driver_step(s: &Stack) -> Step {
    if s.gpu_driver.loaded {
        return Step::manual(
            "Switch to NVIDIA's open GPU kernel modules",
            "nvidia-fs 2.17.5 and later links nvidia_p2p_* directly and loads only against the open kernel modules; the proprietary nvidia.ko is loaded",
            match s.family {
                Family::Debian => vec!["apt-get install nvidia-open   # or nvidia-driver-<version>-open on Ubuntu".into()],
                _ => vec!["dnf module install nvidia-driver:<version>-open".into()],
            },
        );
    }
    let kernel = s.kernel();
    Step::manual(
        "Load NVIDIA's GPU driver",
        "an NVIDIA GPU is on the PCI bus but nvidia.ko is not loaded: the usual state after a kernel upgrade where the driver's DKMS build failed",
        vec![
            "dkms status | grep -i nvidia".into(),
            format!("dkms autoinstall -k {kernel}   # builds the open modules for this kernel; its log says why if it fails"),
            "modprobe nvidia".into(),
        ],
    )
}

/// For a machine with no NVIDIA stack at all: what a GDS node would need, not fixes to apply.
pub fn gds_node_needs(s: &Stack) -> Vec<Step> {
    let driver = match s.family {
        Family::Debian => "apt-get install nvidia-open nvidia-gds   # from NVIDIA's CUDA repository",
        Family::Rhel => "dnf module install nvidia-driver:open-dkms && dnf install nvidia-gds   # from NVIDIA's CUDA repository",
        _ => "install NVIDIA's open GPU kernel modules and nvidia-gds (nvidia-fs)",
    };
    vec![
        Step::manual(
            "If this node should use GDS: an NVIDIA GPU with the open kernel modules, and nvidia-fs",
            "GDS moves NFS data straight into GPU memory through nvidia_fs, which needs NVIDIA's open GPU kernel modules",
            vec![driver.to_string()],
        ),
        install_nfsrdma_step(s),
        Step::manual(
            "Mount with nfs-gds so a missing piece fails loudly",
            "the mount helper checks all of the above before mounting over RDMA, and verifies `xprt: rdma` afterwards",
            vec![
                "# an /etc/fstab line, with your server, export and mount point:".into(),
                "# server:/export  /mnt/data  nfs-gds  _netdev,vers=4.2  0 0".into(),
            ],
        ),
    ]
}
