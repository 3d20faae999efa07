//! `gpu-driver`: every NVIDIA GPU on the PCI bus has NVIDIA's driver loaded, and it is the open
//! kernel module flavour that nvidia-fs needs (against the proprietary one nvidia_fs fails to
//! load with "GPL-only symbols … from proprietary module nvidia").

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::platform::nvidia_fs::GpuDriverFlavour;
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("gpu-driver");

pub static CHECK: Check = Check {
    id: ID,
    doc: "an NVIDIA GPU on the PCI bus has nvidia.ko loaded, in the open kernel module flavour nvidia-fs needs (skipped without a GPU)",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let gpus: Vec<&str> = facts.pci.gpus.iter().map(|d| d.address.as_str()).collect();
    let drv = &facts.gpu_driver;
    if gpus.is_empty() && !drv.loaded {
        return CheckResult::skip(id, "no NVIDIA GPU on the PCI bus").with(
            "/sys/bus/pci/devices",
            "no vendor 0x10de display or 3D controller",
        );
    }
    let on_bus = if gpus.is_empty() {
        "none seen".to_string()
    } else {
        gpus.join(" ")
    };
    if !drv.loaded {
        return CheckResult::fail(
            id,
            format!("GPU {} present, nvidia.ko not loaded", gpus[0]),
        )
        .with("NVIDIA GPUs", on_bus)
        .with("/sys/module/nvidia", "absent")
        .fix(Fix::GpuDriver)
        .remedy("load NVIDIA's open GPU driver; after a kernel upgrade its DKMS build often failed: `dkms status`, then `dkms autoinstall` and `modprobe nvidia`");
    }
    let version = drv.version.as_deref().unwrap_or("(version unknown)");
    let with_evidence = |r: CheckResult| {
        let r = r
            .with("NVIDIA GPUs", on_bus.clone())
            .with("nvidia.ko", version);
        match &drv.evidence {
            Some(e) => r.with("flavour from", e.clone()),
            None => r,
        }
    };
    match drv.flavour {
        GpuDriverFlavour::Open => {
            with_evidence(CheckResult::pass(id, format!("nvidia.ko {version} is the open kernel module")))
        }
        GpuDriverFlavour::Proprietary => with_evidence(
            CheckResult::fail(id, format!("nvidia.ko {version} is the PROPRIETARY kernel module: nvidia-fs does not load against it (GPL-only symbols from a proprietary module)"))
                .fix(Fix::GpuDriver)
                .remedy("install NVIDIA's open GPU kernel modules of the same driver branch and reboot"),
        ),
        GpuDriverFlavour::Unknown => with_evidence(CheckResult::unknown(
            id,
            "nvidia.ko is loaded but neither /proc/driver/nvidia/version nor its taint flags tell open from proprietary",
        )),
    }
}
