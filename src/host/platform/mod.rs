//! The GPU side of the node and the software around it: nvidia-fs and its live probe and
//! topology, the NVIDIA GPU driver, the PCI devices, the keys the kernel trusts for module
//! signatures, cufile.json and libcufile_rdma, what is installed (for the known-bad list),
//! whether nfs-gds runs in a container, the distribution, NVIDIA's OFED and the package records.

pub mod container;
pub mod cufile_json;
pub mod inventory;
pub mod libcufile;
pub mod module_keys;
pub mod nvfs_probe;
pub mod nvfs_topology;
pub mod nvidia_fs;
pub mod ofed;
pub mod os_release;
pub mod packages;
pub mod pci;
