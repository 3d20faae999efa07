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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::gpu;

    fn driver(
        loaded: bool,
        flavour: GpuDriverFlavour,
    ) -> crate::host::platform::nvidia_fs::GpuDriver {
        crate::host::platform::nvidia_fs::GpuDriver {
            loaded,
            version: loaded.then(|| "560.35.03".to_string()),
            flavour,
            evidence: loaded.then(|| {
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03".to_string()
            }),
        }
    }

    fn with_gpu(loaded: bool, flavour: GpuDriverFlavour) -> HostFacts {
        HostFacts::builder()
            .with(|f| f.pci.gpus.push(gpu("0000:3b:00.0", Some("identity"))))
            .gpu_driver(driver(loaded, flavour))
            .build()
    }

    #[test]
    fn skips_without_a_gpu() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["no NVIDIA GPU"]);
        assert_eq!(
            seen(&r, "/sys/bus/pci/devices"),
            "no vendor 0x10de display or 3D controller"
        );
    }

    #[test]
    fn passes_the_open_module() {
        let r = run(&with_gpu(true, GpuDriverFlavour::Open));
        says(&r, Status::Pass, &["560.35.03", "open kernel module"]);
        assert_eq!(seen(&r, "NVIDIA GPUs"), "0000:3b:00.0");
        assert!(seen(&r, "flavour from").contains("Open Kernel Module"));
    }

    #[test]
    fn fails_a_gpu_without_its_driver() {
        let r = run(&with_gpu(false, GpuDriverFlavour::Unknown));
        says(
            &r,
            Status::Fail,
            &["GPU 0000:3b:00.0 present", "not loaded"],
        );
        assert_eq!(seen(&r, "/sys/module/nvidia"), "absent");
        assert_eq!(r.fixes, vec![Fix::GpuDriver]);
        assert!(remedy(&r).contains("dkms autoinstall"));
    }

    #[test]
    fn fails_the_proprietary_module() {
        let r = run(&with_gpu(true, GpuDriverFlavour::Proprietary));
        says(&r, Status::Fail, &["PROPRIETARY", "GPL-only"]);
        assert_eq!(seen(&r, "nvidia.ko"), "560.35.03");
        assert!(remedy(&r).contains("open GPU kernel modules"));
    }

    #[test]
    fn an_unknown_flavour_is_unknown() {
        let r = run(&with_gpu(true, GpuDriverFlavour::Unknown));
        says(&r, Status::Unknown, &["neither", "open from proprietary"]);
    }

    #[test]
    fn a_loaded_driver_without_a_gpu_on_the_bus_is_still_judged() {
        let r = run(&HostFacts::builder()
            .gpu_driver(driver(true, GpuDriverFlavour::Open))
            .build());
        says(&r, Status::Pass, &["open kernel module"]);
        assert_eq!(seen(&r, "NVIDIA GPUs"), "none seen");
    }
}
