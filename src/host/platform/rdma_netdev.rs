//! Which RDMA device sits on a network device, and which PCI function carries it.
//!
//! A network device's RDMA device is found, in order: in the PCI function's own
//! `/sys/class/net/<dev>/device/infiniband/` (mlx5 and other RDMA NICs, and IPoIB); in an RDMA
//! device's `parent` file (soft-RoCE `rxe`, `siw`: the net device they were added on); in the GID
//! table's `/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*` (RoCE: each GID names the net
//! device it belongs to; unused entries fail to read, and are skipped). The PCI function is the
//! net device's (`device/uevent`'s `PCI_SLOT_NAME=`): for soft-RoCE that is the plain NIC the
//! traffic really leaves by.

use serde::Serialize;

use super::pci::parse_pci_slot;
use crate::host::io::error::HostError;
use crate::host::io::root::{read_first_line, Root};

/// How many GID entries of a port are looked at: RoCE's default GIDs come first, and reading
/// every entry of a 256-entry table costs a read each.
const GID_ENTRIES: usize = 16;

/// A network device and what carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NetDevice {
    pub name: String,
    /// The RDMA devices on it (`mlx5_0`, `rxe0`); empty when it has none.
    pub rdma_devices: Vec<String>,
    /// Its PCI function, when it has one.
    pub pci: Option<String>,
}

impl NetDevice {
    pub fn read(root: &Root, name: &str) -> Result<Self, HostError> {
        let mut rdma_devices = root
            .list_dir(format!("sys/class/net/{name}/device/infiniband"))?
            .unwrap_or_default();
        if rdma_devices.is_empty() {
            for ib in root.list_dir("sys/class/infiniband")?.unwrap_or_default() {
                if carries(root, &ib, name)? {
                    rdma_devices.push(ib);
                }
            }
        }
        let uevent = root.read_text_lossy(format!("sys/class/net/{name}/device/uevent"))?;
        Ok(NetDevice {
            name: name.to_string(),
            rdma_devices,
            pci: uevent.as_deref().and_then(parse_pci_slot),
        })
    }
}

/// Whether RDMA device `ib` was added on, or has a GID of, net device `net`.
fn carries(root: &Root, ib: &str, net: &str) -> Result<bool, HostError> {
    let dir = format!("sys/class/infiniband/{ib}");
    if read_first_line(root, &format!("{dir}/parent"))?.as_deref() == Some(net) {
        return Ok(true);
    }
    for port in root.list_dir(format!("{dir}/ports"))?.unwrap_or_default() {
        let ndevs = format!("{dir}/ports/{port}/gid_attrs/ndevs");
        for entry in root
            .list_dir(&ndevs)?
            .unwrap_or_default()
            .iter()
            .take(GID_ENTRIES)
        {
            // An unused GID entry fails with EINVAL on the node: not this device's, not an error.
            if let Ok(Some(n)) = read_first_line(root, &format!("{ndevs}/{entry}")) {
                if n == net {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(files: &[(&str, &str)], dirs: &[&str]) -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        for (p, t) in files {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        }
        for p in dirs {
            std::fs::create_dir_all(d.path().join(p)).unwrap();
        }
        let root = Root::new(d.path());
        (d, root)
    }

    #[test]
    fn an_rdma_nic_names_its_device_under_its_pci_function() {
        let (_d, root) = root_with(
            &[(
                "sys/class/net/ens1f0np0/device/uevent",
                "DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:3e:00.0\n",
            )],
            &["sys/class/net/ens1f0np0/device/infiniband/mlx5_0"],
        );
        let n = NetDevice::read(&root, "ens1f0np0").unwrap();
        assert_eq!(n.rdma_devices, vec!["mlx5_0"]);
        assert_eq!(n.pci.as_deref(), Some("0000:3e:00.0"));
    }

    #[test]
    fn soft_roce_is_found_by_its_parent_and_rides_the_plain_nic() {
        let (_d, root) = root_with(
            &[
                (
                    "sys/class/net/enp0s2/device/uevent",
                    "DRIVER=virtio-pci\nPCI_SLOT_NAME=0000:00:02.0\n",
                ),
                ("sys/class/infiniband/rxe0/parent", "enp0s2\n"),
                ("sys/class/infiniband/rxe1/parent", "enp0s3\n"),
            ],
            &[],
        );
        let n = NetDevice::read(&root, "enp0s2").unwrap();
        assert_eq!(n.rdma_devices, vec!["rxe0"]);
        assert_eq!(n.pci.as_deref(), Some("0000:00:02.0"));
    }

    #[test]
    fn a_roce_gid_names_its_net_device_and_unused_entries_are_skipped() {
        let (_d, root) = root_with(
            &[
                (
                    "sys/class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/0",
                    "bond0\n",
                ),
                ("sys/class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/1", ""),
            ],
            &[],
        );
        let n = NetDevice::read(&root, "bond0").unwrap();
        assert_eq!(n.rdma_devices, vec!["mlx5_1"]);
        assert_eq!(n.pci, None, "a bond has no PCI function of its own");
        let n = NetDevice::read(&root, "eth0").unwrap();
        assert!(n.rdma_devices.is_empty());
    }
}
