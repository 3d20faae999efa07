//! The catalogue: one file per check, each declaring its [`Check`] and ending with its unit
//! tests — and [`ALL`], the order in which an admin fixes them (node first, then the probe, then
//! mounts).
//!
//! To add a check: write `NAME.rs` with `pub const ID` and `pub static CHECK` (copy the
//! shortest one here) and its tests on facts from `HostFacts::builder()`, add it to [`ALL`],
//! and give a new fact a reader in `host/` and a field in [`HostFacts`](crate::host::HostFacts).
//! Everything else — the helper, `check`, `verify`, `doctor`, the agent, the policy's ids, the
//! guide's and manual-page tables (generated, see CONTRIBUTING.md) — reads the list.

use super::check::Check;

pub mod container;
pub mod cufile_config;
pub mod gdscheck_nfs;
pub mod gpu_driver;
pub mod iommu_mode;
pub mod known_bad_versions;
pub mod localio;
pub mod modprobe_config;
pub mod module_signature;
pub mod mount_connections;
pub mod mount_localio;
pub mod mount_options;
pub mod mount_pnfs;
pub mod mount_transport;
pub mod nconnect_kernel;
pub mod next_boot;
pub mod nic_gpu_distance;
pub mod nvfs_registration;
pub mod nvidia_fs_abi;
pub mod nvidia_fs_devices;
pub mod nvidia_fs_loaded;
pub mod pcie_acs;
pub mod pcie_path;
pub mod rpcrdma_abi;
pub mod rpcrdma_fresh;
pub mod rpcrdma_hook_export;
pub mod rpcrdma_hooks;
pub mod rpcrdma_loaded;
pub mod rpcrdma_module;
pub mod rpcrdma_next_load;
pub mod stack_ownership;
pub mod transport_trap;
pub mod trap_suspects;

mod abi_common;
mod nfs_mounts;
mod rpcrdma_common;

#[cfg(test)]
mod expect;
#[cfg(test)]
pub(crate) mod mount_fixtures;

/// Every check, in the order to fix them.
pub static ALL: &[&Check] = &[
    &gpu_driver::CHECK,
    &nvidia_fs_loaded::CHECK,
    &nvidia_fs_devices::CHECK,
    &rpcrdma_module::CHECK,
    &modprobe_config::CHECK,
    &rpcrdma_hooks::CHECK,
    &rpcrdma_hook_export::CHECK,
    &rpcrdma_abi::CHECK,
    &nvidia_fs_abi::CHECK,
    &module_signature::CHECK,
    &rpcrdma_loaded::CHECK,
    &rpcrdma_fresh::CHECK,
    &rpcrdma_next_load::CHECK,
    &next_boot::CHECK,
    &stack_ownership::CHECK,
    &known_bad_versions::CHECK,
    &iommu_mode::CHECK,
    &pcie_acs::CHECK,
    &pcie_path::CHECK,
    &nic_gpu_distance::CHECK,
    &localio::CHECK,
    &cufile_config::CHECK,
    &container::CHECK,
    &gdscheck_nfs::CHECK,
    &nvfs_registration::CHECK,
    &transport_trap::CHECK,
    &nconnect_kernel::CHECK,
    &mount_transport::CHECK,
    &mount_options::CHECK,
    &mount_connections::CHECK,
    &mount_pnfs::CHECK,
    &mount_localio::CHECK,
];
