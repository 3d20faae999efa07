//! `iommu-mode`: the IOMMU is off or in passthrough for the GPUs and RDMA NICs, as NVIDIA
//! supports GDS ("IOMMU=off or pt"; Grace systems are the exception). Advisory: with the IOMMU
//! translating, P2P DMA through the root port is slow or fails.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::kernel_cmdline::kernel_words;
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("iommu-mode");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the IOMMU groups of the GPUs and RDMA NICs are passthrough (`identity`) or there is no IOMMU (advisory; not on Grace)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

/// The IOMMU words of a kernel command line.
pub fn iommu_words(cmdline: &str) -> Vec<&str> {
    kernel_words(cmdline)
        .filter(|w| {
            ["intel_iommu=", "amd_iommu=", "iommu=", "iommu.passthrough="]
                .iter()
                .any(|p| w.starts_with(p))
        })
        .collect()
}

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let pci = &facts.pci;
    if pci.gpus.is_empty() && pci.rdma_nics.is_empty() {
        return CheckResult::skip(id, "no NVIDIA GPU or RDMA NIC on the PCI bus");
    }
    let words = facts
        .cmdline
        .as_deref()
        .map(|c| iommu_words(c).join(" "))
        .map(|w| {
            if w.is_empty() {
                "no IOMMU options".to_string()
            } else {
                w
            }
        });
    let with_cmdline = |r: CheckResult| match &words {
        Some(w) => r.with("/proc/cmdline", w.clone()),
        None => r,
    };
    let groups = pci
        .gpus
        .iter()
        .chain(&pci.rdma_nics)
        .map(|d| {
            format!(
                "{}={}",
                d.address,
                d.iommu_group_type.as_deref().unwrap_or("no group")
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    let translated = pci.translated();
    if translated.is_empty() {
        return with_cmdline(
            CheckResult::pass(
                id,
                "the IOMMU is off or in passthrough for the GPUs and RDMA NICs",
            )
            .with("iommu_group/type", groups),
        );
    }
    let names = translated
        .iter()
        .map(|d| d.address.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    with_cmdline(
        CheckResult::warn(id, format!("the IOMMU translates DMA for {names}: GDS is supported with the IOMMU off or in passthrough"))
            .with("iommu_group/type", groups)
            .fix(Fix::IommuPassthrough)
            .remedy("boot with `iommu=pt` (with `intel_iommu=on` or `amd_iommu=on` if the IOMMU is needed at all), or turn the IOMMU off; on Grace systems keep it on and not in passthrough"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iommu_words_only() {
        assert_eq!(
            iommu_words("BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt quiet"),
            vec!["intel_iommu=on", "iommu=pt"]
        );
        assert!(iommu_words("ro quiet").is_empty());
    }
}

#[cfg(test)]
mod judged {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::{gpu, rdma_nic};

    fn node(gpu_group: &str, nic_group: &str, cmdline: &str) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.pci.gpus.push(gpu("0000:3b:00.0", Some(gpu_group)));
                f.pci
                    .rdma_nics
                    .push(rdma_nic("0000:5e:00.0", Some(nic_group)));
            })
            .cmdline(Some(cmdline.into()))
            .build()
    }

    #[test]
    fn skips_without_gpus_or_nics() {
        says(
            &run(&HostFacts::builder().build()),
            Status::Skip,
            &["no NVIDIA GPU or RDMA NIC"],
        );
    }

    #[test]
    fn passes_passthrough() {
        let r = run(&node("identity", "identity", "ro iommu=pt intel_iommu=on"));
        says(&r, Status::Pass, &["off or in passthrough"]);
        assert_eq!(
            seen(&r, "iommu_group/type"),
            "0000:3b:00.0=identity 0000:5e:00.0=identity"
        );
        assert_eq!(seen(&r, "/proc/cmdline"), "iommu=pt intel_iommu=on");
    }

    #[test]
    fn warns_of_a_translating_iommu() {
        let r = run(&node("DMA-FQ", "identity", "ro quiet"));
        says(&r, Status::Warn, &["translates DMA for 0000:3b:00.0"]);
        assert_eq!(seen(&r, "/proc/cmdline"), "no IOMMU options");
        assert_eq!(r.fixes, vec![Fix::IommuPassthrough]);
        assert!(remedy(&r).contains("iommu=pt"));
    }

    #[test]
    fn devices_without_an_iommu_group_pass() {
        let r = run(&HostFacts::builder()
            .with(|f| f.pci.gpus.push(gpu("0000:3b:00.0", None)))
            .cmdline(None)
            .build());
        says(&r, Status::Pass, &["off or in passthrough"]);
        assert_eq!(seen(&r, "iommu_group/type"), "0000:3b:00.0=no group");
        assert!(r.evidence.iter().all(|e| e.what != "/proc/cmdline"));
    }
}
