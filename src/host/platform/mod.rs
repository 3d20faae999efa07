//! The GPU side of the node: nvidia-fs and its live probe, counters and topology, the NVIDIA GPU driver,
//! the PCI devices, cufile.json, and whether nfs-gds runs in a container.

pub mod container;
pub mod cufile_json;
pub mod nvfs_probe;
pub mod nvfs_stats;
pub mod nvfs_topology;
pub mod nvidia_fs;
pub mod pci;
