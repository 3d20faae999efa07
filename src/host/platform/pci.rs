//! The PCI devices GDS cares about: NVIDIA GPUs and RDMA NICs, with their IOMMU group's type.
//!
//! A GPU is vendor `0x10de` with class `0x0300xx` (VGA) or `0x0302xx` (3D controller) in
//! `/sys/bus/pci/devices/*/`; an RDMA NIC is the PCI device behind `/sys/class/infiniband/*`
//! (its `device/uevent` names it with `PCI_SLOT_NAME=`), or any Mellanox (`0x15b3`) network or
//! InfiniBand controller. `iommu_group/type` is `identity` in passthrough and `DMA` / `DMA-FQ`
//! when the IOMMU translates; absent when there is no IOMMU. `/proc/bus/pci/devices`, when
//! present, picks the functions worth reading, so a bus of hundreds costs one read.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::{read_first_line, Root};

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

/// The `(bus, devfn)` of every NVIDIA or Mellanox function in `/proc/bus/pci/devices` (one line
/// per function: `BBDF\tVVVVDDDD\t…`, without the PCI domain). Only a prefilter: it spares
/// reading `vendor` of every other function one file at a time.
pub fn parse_proc_bus_pci(text: &str) -> Vec<(u8, u8)> {
    text.lines()
        .filter_map(|l| {
            let mut cols = l.split_whitespace();
            let bdf = u16::from_str_radix(cols.next()?, 16).ok()?;
            let vendor = u32::from_str_radix(cols.next()?.get(..4)?, 16).ok()?;
            let wanted = vendor == NVIDIA_VENDOR || vendor == MELLANOX_VENDOR;
            wanted.then_some(((bdf >> 8) as u8, bdf as u8))
        })
        .collect()
}

/// The `(bus, devfn)` of a sysfs PCI name (`0000:3b:00.1`).
fn bus_devfn(addr: &str) -> Option<(u8, u8)> {
    let mut parts = addr.rsplitn(3, ':');
    let slot_func = parts.next()?;
    let bus = u8::from_str_radix(parts.next()?, 16).ok()?;
    let (slot, func) = slot_func.split_once('.')?;
    let slot = u8::from_str_radix(slot, 16).ok()?;
    let func = func.parse::<u8>().ok()?;
    Some((bus, (slot << 3) | (func & 7)))
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
        let candidates = root
            .read_text_lossy("proc/bus/pci/devices")?
            .map(|t| parse_proc_bus_pci(&t));
        let mut facts = PciFacts::default();
        for addr in root.list_dir("sys/bus/pci/devices")?.unwrap_or_default() {
            let is_ib = ib.iter().any(|(slot, _)| *slot == addr);
            let maybe = match (&candidates, bus_devfn(&addr)) {
                (Some(c), Some(bd)) => c.contains(&bd),
                _ => true,
            };
            if !is_ib && !maybe {
                continue;
            }
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
    fn proc_bus_pci_prefilter() {
        let t = "0000\t80861237\t0\n3b00\t10de20b5\t10\n3b01\t10de1aef\t0\n3c00\t15b3101b\t0\n";
        assert_eq!(parse_proc_bus_pci(t), vec![(0x3b, 0), (0x3b, 1), (0x3c, 0)]);
        assert_eq!(bus_devfn("0000:3b:00.1"), Some((0x3b, 1)));
        assert_eq!(bus_devfn("0001:3b:1f.7"), Some((0x3b, (0x1f << 3) | 7)));
        assert_eq!(bus_devfn("junk"), None);
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
