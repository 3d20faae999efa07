//! The catalogue: one file per check, each declaring its [`Check`] — and [`ALL`], the order in
//! which an admin fixes them (node first, then the probe, then mounts).
//!
//! To add a check: write `NAME.rs` with `pub const ID` and `pub static CHECK` (copy the
//! shortest one here), add it to [`ALL`], give its facts a reader in `host/` and a field in
//! [`HostFacts`](crate::host::HostFacts), and a fixture node in the tests. Everything else —
//! the helper, `check`, `verify`, `doctor`, the agent, the policy's ids, the README table —
//! reads the list.

use super::check::Check;

pub mod container;
pub mod cufile_config;
pub mod gpu_driver;
pub mod iommu_mode;
pub mod known_bad_versions;
pub mod modprobe_config;
pub mod module_signature;
pub mod mount_options;
pub mod mount_transport;
pub mod next_boot;
pub mod nvfs_registration;
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
pub mod transport_trap;
pub mod trap_suspects;

mod nfs_mounts;
mod rpcrdma_common;

#[cfg(test)]
mod mount_tests;

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
    &module_signature::CHECK,
    &rpcrdma_loaded::CHECK,
    &rpcrdma_fresh::CHECK,
    &rpcrdma_next_load::CHECK,
    &next_boot::CHECK,
    &known_bad_versions::CHECK,
    &iommu_mode::CHECK,
    &pcie_acs::CHECK,
    &pcie_path::CHECK,
    &cufile_config::CHECK,
    &container::CHECK,
    &nvfs_registration::CHECK,
    &transport_trap::CHECK,
    &mount_transport::CHECK,
    &mount_options::CHECK,
];
