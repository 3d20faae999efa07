//! Choosing the [`Mounter`]: `mount.nfs` when it is installed (or demanded), mount(2) otherwise.
//!
//! On a real host unmounting is umount2(2); below a fixture root every side effect is a program
//! found in the tree (`mount.nfs`, `umount`), which tests make recording fakes, and mount(2) is
//! never called.

use super::mount_nfs::MountNfs;
use super::mounter::Mounter;
use super::mover::Mover;
use super::syscall::SyscallMount;
use super::unmount::Unmounter;
use crate::host::io::programs as tools;
use std::path::PathBuf;

use crate::host::Root;
use crate::policy::Backend;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mount.nfs is not installed (searched {dirs} below {root}): install nfs-common (Debian, Ubuntu) or nfs-utils, or set backend = \"syscall\" in the policy")]
pub struct NoMountNfs {
    pub dirs: &'static str,
    pub root: String,
}

/// The mounter the policy asks for, on this root, undoing mounts with `unmounter` and moving
/// them from the staging point with `mover`. With a
/// `fixture_root`, the mount(2) backend only plans.
pub fn select(
    root: &Root,
    backend: Backend,
    unmounter: Unmounter,
    mover: Mover,
    fixture_root: Option<PathBuf>,
) -> Result<Box<dyn Mounter>, NoMountNfs> {
    let mount_nfs = tools::find(root, "mount.nfs");
    let syscall = |unmounter, mover| -> Box<dyn Mounter> {
        Box::new(SyscallMount {
            unmounter,
            mover,
            fixture_root: fixture_root.clone(),
        })
    };
    match (backend, mount_nfs) {
        (Backend::Syscall, _) => Ok(syscall(unmounter, mover)),
        (_, Some(program)) => Ok(Box::new(MountNfs {
            program,
            unmounter,
            mover,
        })),
        (Backend::Auto, None) => Ok(syscall(unmounter, mover)),
        (Backend::MountNfs, None) => Err(NoMountNfs {
            dirs: tools::SEARCH_PATH,
            root: root.dir().display().to_string(),
        }),
    }
}
