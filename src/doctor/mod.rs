//! `nfs-gds doctor`: the whole decision tree for this node, and the fix for its stack.
//!
//! [`diagnose`] runs the same node checks as the mount helper on the host facts, composes the
//! [`stack`] from the stack facts the host readers gather, adds the [`sections`] only a human
//! needs (which stack provides rpcrdma, the GPU driver flavour, cufile.json, the kernel log), and
//! builds the remediation [`plan`] from the [`stacks`] catalogue. Rendering is in [`render`]; the
//! model serializes to JSON. Nothing here reads stack facts from the host itself.

pub mod collect;
mod diagnose;
mod finding;
pub mod fstab;
pub mod gdscheck;
pub mod io_path;
mod kernel_log;
pub mod mounts;
pub mod not_for_nfs;
pub mod plan;
pub mod provision;
pub mod redact;
mod redact_boot;
mod redact_cmdline;
pub mod render;
mod secret_names;
pub mod sections;
pub mod stack;
pub mod stacks;
pub mod step;
pub mod usage;

pub use diagnose::{diagnose, Diagnosis, Inputs};
pub use finding::Finding;
pub use kernel_log::relevant_log_lines;
