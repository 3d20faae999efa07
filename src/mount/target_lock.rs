//! One helper at a time per mount point: an exclusive `flock` on
//! `/run/nfs-gds/locks/<hash of DIR>.lock` (below the root, resolved inside it as every output
//! is), held from before the mount table is read for the mount until the new mount is verified,
//! undone or recorded.
//!
//! Two helpers mounting on one DIR at once (a `.mount` unit and `mount -a`, two fstab lines for
//! one point) would each see the other's mount appear during its own `mount.nfs`; serialised,
//! each sees only its own. The lock is released by the kernel when the helper exits, however it
//! exits, so a killed helper never leaves it held. A helper waits for it at most
//! [`MAX_WAIT`], polling, and then refuses without mounting. The file name is a hash of the
//! mount point (a path does not fit a file name); the file holds the mount point for people.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::FlockOperation;

use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
use crate::host::Root;
use crate::system::System;

/// Where the lock files live, below the root.
pub const DIR: &str = "run/nfs-gds/locks";

/// How long a helper waits for another one mounting on the same point.
pub const MAX_WAIT: Duration = Duration::from_secs(300);

const POLL: Duration = Duration::from_millis(50);

/// A held lock; dropping it releases it.
#[derive(Debug)]
pub struct TargetLock {
    _fd: OwnedFd,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot lock {} for mounting on {}: {source}", path.display(), target.display())]
    Io {
        path: PathBuf,
        target: PathBuf,
        source: std::io::Error,
    },
    #[error("another nfs-gds helper has been mounting on {} for {} s (it holds {}); nothing was mounted", target.display(), waited.as_secs(), path.display())]
    Busy {
        path: PathBuf,
        target: PathBuf,
        waited: Duration,
    },
}

/// 64-bit FNV-1a of the mount point's bytes: stable across runs and builds.
fn file_name(target: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let hash = target
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}.lock")
}

/// The lock file for `target`, below `root`.
pub fn path_for(root: &Root, target: &Path) -> PathBuf {
    root.join(DIR).join(file_name(target))
}

/// Takes the lock for `target`, waiting for another holder at most [`MAX_WAIT`] by `clock`.
pub fn take(root: &Root, target: &Path, system: &dyn System) -> Result<TargetLock, LockError> {
    let path = path_for(root, target);
    let io = |source: std::io::Error| LockError::Io {
        path: path.clone(),
        target: target.to_owned(),
        source,
    };
    // Resolved inside the root as every output is: a symlinked `<root>/run` leads inside the
    // tree, never out of it; and nfs-gds's own directories, which only root may write in.
    OutDir::open(root, RUN_DIR, Trust::Own).map_err(io)?;
    let fd = OutDir::open(root, DIR, Trust::Own)
        .and_then(|dir| dir.lock_file(&file_name(target)))
        .map_err(io)?;
    let start = system.now();
    loop {
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let waited = system.now().saturating_sub(start);
                if waited >= MAX_WAIT {
                    return Err(LockError::Busy {
                        path,
                        target: target.to_owned(),
                        waited,
                    });
                }
                system.sleep(POLL);
            }
            Err(e) => return Err(io(e.into())),
        }
    }
    let mut file = std::fs::File::from(fd);
    // For whoever looks at the lock: which mount point it is for.
    let _ = file.set_len(0).and_then(|()| {
        use std::os::unix::ffi::OsStrExt;
        file.write_all(target.as_os_str().as_bytes())?;
        file.write_all(b"\n")
    });
    Ok(TargetLock { _fd: file.into() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::Fake;

    #[test]
    fn a_second_helper_waits_and_then_gives_up_without_mounting() {
        let tree = tempfile::tempdir().unwrap();
        let root = Root::new(tree.path());
        let target = Path::new("/mnt/gds");
        let clock = Fake::new();
        let held = take(&root, target, &clock).unwrap();
        let path = path_for(&root, target);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "/mnt/gds\n");
        // Another mount point has its own lock.
        drop(take(&root, Path::new("/mnt/other"), &clock).unwrap());
        let e = take(&root, target, &clock).unwrap_err();
        assert!(matches!(e, LockError::Busy { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "another nfs-gds helper has been mounting on /mnt/gds for 300 s (it holds {}); nothing was mounted",
                path.display()
            )
        );
        assert_eq!(clock.sleeps().len(), 6000);
        drop(held);
        assert!(take(&root, target, &clock).is_ok());
    }

    #[test]
    fn the_lock_directory_and_file_are_not_writable_by_others() {
        use std::os::unix::fs::PermissionsExt;
        let tree = tempfile::tempdir().unwrap();
        let root = Root::new(tree.path());
        drop(take(&root, Path::new("/mnt/gds"), &Fake::new()).unwrap());
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(root.join(DIR)) & 0o022, 0);
        assert_eq!(mode(path_for(&root, Path::new("/mnt/gds"))) & 0o077, 0);
    }

    #[test]
    fn a_symlinked_run_leads_inside_the_root_never_out_of_it() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let (tree, outside) = (d.path().join("root"), d.path().join("outside"));
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        symlink(&outside, tree.join("run")).unwrap();
        let root = Root::new(&tree);
        let clock = Fake::new();
        // Where the link leads inside the tree does not exist: refused, nothing made anywhere.
        let e = take(&root, Path::new("/mnt/gds"), &clock).unwrap_err();
        assert!(
            e.to_string()
                .contains("symbolic link to nothing below the root"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // Once it leads somewhere inside the tree, the lock is made there.
        let inside = tree.join(outside.strip_prefix("/").unwrap());
        std::fs::create_dir_all(&inside).unwrap();
        drop(take(&root, Path::new("/mnt/gds"), &clock).unwrap());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        let lock = inside
            .join("nfs-gds/locks")
            .join(file_name(Path::new("/mnt/gds")));
        assert_eq!(std::fs::read_to_string(lock).unwrap(), "/mnt/gds\n");
    }
}
