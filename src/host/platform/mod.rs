//! The GPU side of the node and the software around it: nvidia-fs and its live probe, counters
//! and topology, the NVIDIA GPU driver, the PCI devices and the PCIe tree, the path from each NFS
//! server to the NIC and GPUs, the keys the kernel trusts for module signatures, cufile.json and
//! GDS's user-space pieces, what is installed (for the known-bad list), whether nfs-gds runs in a
//! container, the distribution, NVIDIA's OFED and the package records.

pub mod container;
pub mod cufile_json;
pub mod gdscheck;
pub mod inventory;
pub mod io_path;
pub mod kernel_packages;
pub mod libcufile;
pub mod module_keys;
pub mod net_route;
pub mod nvfs_probe;
pub mod nvfs_stats;
pub mod nvfs_topology;
pub mod nvidia_fs;
pub mod ofed;
pub mod os_release;
pub mod packages;
pub mod pci;
pub mod pcie_tree;
pub mod rdma_netdev;
