//! The kernels a node can boot: the installed ones, the boot entries (BLS, GRUB), which one the
//! next boot starts, DKMS's builds for each, and the order of kernel versions.

pub mod bls;
pub mod boot_kernels;
pub mod dkms;
pub mod grub;
pub mod installed_kernels;
pub mod next_boot;
pub mod version_order;
