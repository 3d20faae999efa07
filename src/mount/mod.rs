//! The mount(8) helper: from the argv mount(8) gives `mount.nfs-gds` to a verified GDS mount.
//!
//! Data flows one way: argv ([`args`]) → a validated [`request::MountRequest`] (source, target,
//! rebuilt [`options`]) → the effective [`crate::policy::MountPolicy`] → pre-checks (node checks
//! and the transport trap, with a bounded wait) → mount through a [`mounter::Mounter`] → the
//! post-checks on the *new* mount → accept, or unmount exactly that mount and refuse.
//! Every side effect (exec, mount(2), umount2, setns, modprobe, sleeping) goes through the one
//! [`crate::system::System`], whose fake records it, so the whole flow is tested without
//! touching the machine; the backends ([`mounter::Mounter`]) say how a mount is made and undone.

pub mod args;
pub mod backend;
pub mod exit_code;
#[cfg(test)]
pub mod fake;
pub mod flow;
pub mod identity;
pub mod modprobe;
pub mod mount_nfs;
pub mod mounter;
pub mod mover;
pub mod namespace;
pub mod near_miss;
pub mod options;
pub mod privilege;
pub mod record;
pub mod request;
pub mod signals;
pub mod stage;
pub mod syscall;
pub mod target_lock;
pub mod target_path;
pub mod unmount;
pub mod wait;
