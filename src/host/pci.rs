//! The PCI devices GDS cares about: NVIDIA GPUs and RDMA NICs, with their IOMMU group's type.
//!
//! A GPU is vendor `0x10de` with class `0x0300xx` (VGA) or `0x0302xx` (3D controller) in
//! `/sys/bus/pci/devices/*/`; an RDMA NIC is the PCI device behind `/sys/class/infiniband/*`
//! (its `device/uevent` names it with `PCI_SLOT_NAME=`), or any Mellanox (`0x15b3`) network or
//! InfiniBand controller. `iommu_group/type` is `identity` in passthrough and `DMA` / `DMA-FQ`
//! when the IOMMU translates; absent when there is no IOMMU.

use serde::Serialize;

use super::{read_first_line, HostError, Root};

pub const NVIDIA_VENDOR: u32 = 0x10de;
pub const MELLANOX_VENDOR: u32 = 0x15b3;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciDevice {
    /// `0000:3b:00.0`.
    pub address: String,
    pub vendor: u32,
    /// The 24-bit class code (`0x030200`).
    pub class: u32,
    /// `iommu_group/type`, when the device has an IOMMU group.
    pub iommu_group_type: Option<String>,
    /// The InfiniBand device names (`mlx5_0`) on this PCI function, for NICs.
    pub rdma_names: Vec<String>,
}

impl PciDevice {
    /// Whether the IOMMU translates this device's DMA (neither off nor passthrough).
    pub fn iommu_translates(&self) -> bool {
        self.iommu_group_type
            .as_deref()
            .is_some_and(|t| t.starts_with("DMA"))
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PciFacts {
    pub gpus: Vec<PciDevice>,
    pub rdma_nics: Vec<PciDevice>,
}

/// Parses a sysfs id (`0x10de\n`).
pub fn parse_hex_id(text: &str) -> Option<u32> {
    let t = text.trim();
    u32::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

pub fn is_nvidia_gpu(vendor: u32, class: u32) -> bool {
    vendor == NVIDIA_VENDOR && matches!(class >> 8, 0x0300 | 0x0302)
}

/// Mellanox network (`0x02xx`) or InfiniBand (`0x0207`) controllers.
pub fn is_mellanox_nic(vendor: u32, class: u32) -> bool {
    vendor == MELLANOX_VENDOR && class >> 16 == 0x02
}

/// `PCI_SLOT_NAME=` of a device's `uevent`.
pub fn parse_pci_slot(uevent: &str) -> Option<String> {
    uevent
        .lines()
        .find_map(|l| l.trim().strip_prefix("PCI_SLOT_NAME="))
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

fn read_id(root: &Root, rel: &str) -> Result<Option<u32>, HostError> {
    Ok(read_first_line(root, rel)?.and_then(|l| parse_hex_id(&l)))
}

impl PciFacts {
    pub fn read(root: &Root) -> Result<Self, HostError> {
        let mut ib: Vec<(String, String)> = Vec::new();
        for name in root.list_dir("sys/class/infiniband")?.unwrap_or_default() {
            let uevent =
                root.read_text_lossy(format!("sys/class/infiniband/{name}/device/uevent"))?;
            if let Some(slot) = uevent.as_deref().and_then(parse_pci_slot) {
                ib.push((slot, name));
            }
        }
        let mut facts = PciFacts::default();
        for addr in root.list_dir("sys/bus/pci/devices")?.unwrap_or_default() {
            let dir = format!("sys/bus/pci/devices/{addr}");
            let Some(vendor) = read_id(root, &format!("{dir}/vendor"))? else {
                continue;
            };
            let rdma_names: Vec<String> = ib
                .iter()
                .filter(|(slot, _)| *slot == addr)
                .map(|(_, n)| n.clone())
                .collect();
            if vendor != NVIDIA_VENDOR && vendor != MELLANOX_VENDOR && rdma_names.is_empty() {
                continue;
            }
            let class = read_id(root, &format!("{dir}/class"))?.unwrap_or(0);
            let gpu = is_nvidia_gpu(vendor, class);
            let nic = !rdma_names.is_empty() || is_mellanox_nic(vendor, class);
            if !gpu && !nic {
                continue;
            }
            let device = PciDevice {
                iommu_group_type: read_first_line(root, &format!("{dir}/iommu_group/type"))?,
                address: addr,
                vendor,
                class,
                rdma_names,
            };
            if gpu {
                facts.gpus.push(device);
            } else {
                facts.rdma_nics.push(device);
            }
        }
        Ok(facts)
    }

    /// The GPUs and NICs whose DMA the IOMMU translates.
    pub fn translated(&self) -> Vec<&PciDevice> {
        self.gpus
            .iter()
            .chain(&self.rdma_nics)
            .filter(|d| d.iommu_translates())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_classes() {
        assert_eq!(parse_hex_id("0x10de\n"), Some(0x10de));
        assert_eq!(parse_hex_id("zz"), None);
        assert!(is_nvidia_gpu(0x10de, 0x030200));
        assert!(is_nvidia_gpu(0x10de, 0x030000));
        assert!(!is_nvidia_gpu(0x10de, 0x040300), "the GPU's audio function");
        assert!(!is_nvidia_gpu(0x8086, 0x030000));
        assert!(is_mellanox_nic(0x15b3, 0x020700));
        assert!(!is_mellanox_nic(0x15b3, 0x068000));
    }

    #[test]
    fn slot_name_from_uevent() {
        let u = "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_SLOT_NAME=0000:3b:00.0\n";
        assert_eq!(parse_pci_slot(u).as_deref(), Some("0000:3b:00.0"));
        assert_eq!(parse_pci_slot("DRIVER=x\n"), None);
    }

    #[test]
    fn dma_types_translate_identity_does_not() {
        let mut d = PciDevice {
            address: "0000:3b:00.0".into(),
            vendor: NVIDIA_VENDOR,
            class: 0x030200,
            iommu_group_type: Some("DMA-FQ".into()),
            rdma_names: vec![],
        };
        assert!(d.iommu_translates());
        d.iommu_group_type = Some("identity".into());
        assert!(!d.iommu_translates());
        d.iommu_group_type = None;
        assert!(!d.iommu_translates());
    }
}
