//! A mount point held by a descriptor: `open_tree(2)` without cloning, which makes no mount and
//! changes nothing — an `O_PATH` open of what is mounted at a path, with no automount triggered
//! and no symlink followed at the end. It lives beside the effects because it speaks the mount
//! API; it is a read, so it is no [`Call`](super::Call): what the descriptor is used for (a
//! move, an unmount) is.

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{open_tree, OpenTreeFlags};

/// An `O_PATH` descriptor of what is mounted at `path`. Where the kernel or a seccomp filter has
/// no `open_tree`, an `O_PATH | O_NOFOLLOW` open without `O_DIRECTORY`, which triggers no
/// automount either.
pub fn hold(path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OpenTreeFlags::OPEN_TREE_CLOEXEC
        | OpenTreeFlags::AT_NO_AUTOMOUNT
        | OpenTreeFlags::AT_SYMLINK_NOFOLLOW;
    match open_tree(rustix::fs::CWD, path, flags) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => Ok(rustix::fs::open(
            path,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?),
        Err(e) => Err(e.into()),
    }
}
