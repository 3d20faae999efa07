//! The GPU side of the plan: NVIDIA's GPU driver and its open flavour, nvidia-fs from packages or
//! from the GPU Operator's [driver container](driver_container), and what a node without any of
//! it would need.

use crate::doctor::stack::{Family, Stack};
use crate::doctor::stacks::driver_container;
use crate::doctor::stacks::ofed::install_nfsrdma_step;
use crate::doctor::step::{Action, Step};

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
                Family::Debian => vec!["apt-get install nvidia-gds   # from NVIDIA's CUDA repository; pulls nvidia-fs-dkms".into()],
                Family::Rhel => vec!["dnf install nvidia-gds   # from NVIDIA's CUDA repository; pulls nvidia-fs-dkms".into()],
                Family::Suse => vec!["zypper install nvidia-gds   # from NVIDIA's CUDA repository; pulls nvidia-fs-dkms".into()],
                Family::Other => vec!["install NVIDIA's nvidia-gds / nvidia-fs-dkms package for this distribution".into()],
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

/// The nvidia-fs on the node is on the known-bad list, fixed in `release`: upgrade it where it
/// comes from (the GPU Operator's container, or the family's packages, rebuilt by DKMS).
pub(super) fn upgrade_nvidia_fs_step(s: &Stack, release: &str) -> Step {
    let title = format!("Upgrade nvidia-fs to {release} or later (advisory)");
    let why = format!("the nvidia-fs on this node is on the known-bad list (see known-bad-versions); {release} fixes it");
    if driver_container::manages(s) {
        return Step::manual(
            title,
            why,
            vec![format!("# set the GPU Operator's gds.version to a release whose nvidia-fs is {release} or later:"),
                 "kubectl patch clusterpolicies.nvidia.com/cluster-policy --type merge -p '{\"spec\":{\"gds\":{\"version\":\"<release>\"}}}'".into()],
        );
    }
    let upgrade = match s.family {
        Family::Debian => "apt-get install --only-upgrade nvidia-gds nvidia-fs-dkms   # from NVIDIA's CUDA repository; DKMS rebuilds it",
        Family::Rhel => "dnf upgrade nvidia-gds nvidia-fs-dkms   # from NVIDIA's CUDA repository; DKMS rebuilds it",
        Family::Suse => "zypper update nvidia-gds nvidia-fs-dkms   # from NVIDIA's CUDA repository; DKMS rebuilds it",
        Family::Other => "upgrade NVIDIA's nvidia-gds / nvidia-fs-dkms package for this distribution; DKMS rebuilds it",
    };
    Step::manual(
        title,
        why,
        vec![
            upgrade.into(),
            "modprobe -r nvidia_fs; modprobe nvidia_fs   # or reboot while GDS I/O runs".into(),
        ],
    )
}

/// nvidia-fs was built against another GPU driver than the one installed: rebuild it where it
/// comes from (the GPU Operator's container, DKMS, or the distribution's package).
pub(super) fn rebuild_nvidia_fs_step(s: &Stack) -> Step {
    let why = "the nvidia-fs modprobe would load was built against another GPU driver: its nvidia_p2p_* CRCs disagree with nvidia.ko's, so the load is refused; from driver R580.82.05 on, NVIDIA requires nvidia-fs to be rebuilt after every GPU-driver install";
    if driver_container::manages(s) {
        return Step::manual(
            "Restart the GPU Operator's nvidia-fs container",
            why,
            vec![
                "# the driver pod builds nvidia-fs against the driver it runs; delete it on this node so it rebuilds both:".into(),
                "kubectl delete pod -n gpu-operator -l app=nvidia-driver-daemonset --field-selector spec.nodeName=$(hostname)".into(),
            ],
        );
    }
    let kernel = s.kernel();
    let mut commands = match s.dkms_entry("nvidia-fs") {
        Some(e) => vec![format!(
            "dkms remove nvidia-fs/{v} -k {kernel} && dkms install nvidia-fs/{v} -k {kernel}",
            v = e.version
        )],
        None => Vec::new(),
    };
    commands.push(match s.family {
        Family::Debian => {
            "apt-get install --reinstall nvidia-fs-dkms   # rebuilds against the installed driver"
                .into()
        }
        Family::Rhel => {
            "dnf reinstall nvidia-fs-dkms   # rebuilds against the installed driver".into()
        }
        Family::Suse => {
            "zypper install --force nvidia-fs-dkms   # rebuilds against the installed driver".into()
        }
        Family::Other => {
            "reinstall the nvidia-fs-dkms package so DKMS rebuilds it against the installed driver"
                .into()
        }
    });
    commands
        .push("modprobe -r nvidia_fs; modprobe nvidia_fs   # or reboot while GDS I/O runs".into());
    Step::manual(
        "Rebuild nvidia-fs against the installed GPU driver",
        why,
        commands,
    )
}

/// nvidia.ko is missing while a GPU is on the bus, or it is the proprietary flavour.
pub(super) fn gpu_driver_step(s: &Stack) -> Step {
    if s.gpu_driver.loaded {
        return Step::manual(
            "Switch to NVIDIA's open GPU kernel modules",
            "nvidia-fs 2.17.5 and later links nvidia_p2p_* directly and loads only against the open kernel modules; the proprietary nvidia.ko is loaded",
            match s.family {
                Family::Debian if super::mok::is_ubuntu(s) => vec!["apt-get install nvidia-driver-<version>-open   # Canonical's build, with linux-modules-nvidia-<version>-open-<flavour> signed for Secure Boot".into()],
                Family::Debian => vec!["apt-get install nvidia-open   # NVIDIA's CUDA repository (Debian's own: nvidia-open-kernel-dkms); remove nvidia-kernel-dkms".into()],
                Family::Rhel => vec!["dnf module install nvidia-driver:<version>-open".into()],
                Family::Suse => vec!["zypper install nvidia-open-driver-G06-signed-kmp-default   # SUSE's signed open modules".into()],
                Family::Other => vec!["install NVIDIA's open GPU kernel modules (nvidia-open) for this distribution".into()],
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
        Family::Suse => "zypper install nvidia-open-driver-G06-signed-kmp-default nvidia-gds   # nvidia-gds from NVIDIA's CUDA repository",
        Family::Other => "install NVIDIA's open GPU kernel modules and nvidia-gds (nvidia-fs)",
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
