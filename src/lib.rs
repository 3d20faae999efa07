//! nfs-gds: make GPUDirect Storage over NFS/RDMA fail loudly instead of silently.
//!
//! GDS over NFS/RDMA works only when `nvidia_fs` is loaded, the `rpcrdma` module the kernel uses
//! was built with the nvfs DMA hooks and exports them in a way this kernel accepts, and the mount
//! really runs over RDMA. When any of that is wrong nothing errors: I/O silently falls back to CPU
//! bounce buffers. This crate reads the facts ([`host`], [`kmod`]), judges them in one check
//! catalogue ([`checks`]) and serves the mount helper, `check`, `verify`, `doctor` and `agent`.

pub mod agent;
pub mod checks;
pub mod cli;
pub mod doctor;
pub mod escape;
pub mod host;
pub mod judge;
pub mod kmod;
pub mod lint;
pub mod mount;
pub mod nfs;
pub mod nri;
pub mod oci;
pub mod policy;
pub mod slurm;
pub mod system;
#[cfg(test)]
mod testkit;
pub mod verdict;
pub mod watch;
