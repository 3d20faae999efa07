//! The judge layer: every verdict nfs-gds gives is made here, once, from facts the layers below
//! read — so the helper, `check`, `verify`, `doctor`, the agent, the container gates and the
//! Slurm commands give one answer for one node, one mount and one container.
//!
//! - [`node`]: the node checks (nvidia_fs, the rpcrdma hooks, …) under the policy's levels.
//! - [`mount`]: whether an existing NFS mount is meant for GDS, and its mount checks.
//! - [`container`]: a container's volumes meant for GDS, from a runtime-neutral description of
//!   the container (the OCI hook and the NRI plugin are adapters over it).

pub mod container;
pub mod mount;
pub mod node;

pub use mount::{Intent, MountJudge};
