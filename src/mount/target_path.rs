//! Whether the mount point can take a mount at all, and whether anyone but root can change the
//! path to it while `mount.nfs` resolves it.
//!
//! `mount.nfs` refuses a DIR that does not exist or is not a directory before it mounts
//! anything (nfs-utils `chk_mountpoint`); the helper asks the same of DIR first, in a real run
//! and under `-f` alike, so `-f` says what the real run would do and a real run does not load a
//! module for a mount that cannot happen.
//!
//! The helper hands `mount.nfs` the canonical DIR, which resolves it again. Whoever can rename
//! an entry on that path (the owner of a directory on it, or anyone when a directory is writable
//! by group or others without being root's sticky `/tmp`) can swap DIR for another directory in
//! between, and the mount lands there. nfs-gds finds the new mount by its identity and names it
//! when it appeared elsewhere; this says beforehand that the path is open to such a swap.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::host::{HostError, Root};

/// Why DIR cannot take a mount.
#[derive(Debug, thiserror::Error)]
pub enum MountPointError {
    #[error("mount point {} does not exist; nothing was mounted", .0.display())]
    Missing(PathBuf),
    #[error("mount point {} is not a directory; nothing was mounted", .0.display())]
    NotADirectory(PathBuf),
    #[error("{0}; nothing was mounted")]
    Unreadable(HostError),
}

/// Whether `target` (below `root`, symlinks followed inside it) is a directory a mount can land
/// on, as `mount.nfs` asks before mounting.
pub fn check_mount_point(root: &Root, target: &Path) -> Result<(), MountPointError> {
    match root.metadata(target) {
        Ok(Some(m)) if m.is_dir() => Ok(()),
        Ok(Some(_)) => Err(MountPointError::NotADirectory(target.to_owned())),
        Ok(None) => Err(MountPointError::Missing(target.to_owned())),
        Err(e) => Err(MountPointError::Unreadable(e)),
    }
}

/// The first entry on `target`'s path (from `/` down to `target` itself) that someone other
/// than root could rename or replace, with why; `None` when only root can.
pub fn swappable_entry(target: &Path) -> Option<(PathBuf, String)> {
    let mut at = PathBuf::from("/");
    let mut parent_sticky_root = false;
    for c in target.components().skip(1) {
        let parent = at.clone();
        at.push(c);
        let Ok(m) = std::fs::symlink_metadata(&at) else {
            return None;
        };
        let pm = std::fs::symlink_metadata(&parent).ok()?;
        let open_parent = pm.mode() & 0o022 != 0;
        if open_parent && !parent_sticky_root {
            return Some((
                parent.clone(),
                format!(
                    "{} is writable by others (mode {:04o})",
                    parent.display(),
                    pm.mode() & 0o7777
                ),
            ));
        }
        if m.uid() != 0 {
            return Some((
                at.clone(),
                format!("{} is owned by uid {}, not root", at.display(), m.uid()),
            ));
        }
        parent_sticky_root = m.mode() & 0o1000 != 0;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_mount_point_must_be_a_directory_that_exists() {
        let tree = tempfile::tempdir().unwrap();
        let root = Root::new(tree.path());
        std::fs::create_dir_all(tree.path().join("mnt/gds")).unwrap();
        std::fs::create_dir_all(tree.path().join("etc")).unwrap();
        std::fs::write(
            tree.path().join("etc/passwd"),
            "root:x:0:0::/root:/bin/sh\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("/mnt/gds", tree.path().join("data")).unwrap();
        assert!(check_mount_point(&root, Path::new("/mnt/gds")).is_ok());
        assert!(
            check_mount_point(&root, Path::new("/data")).is_ok(),
            "a link to one"
        );
        let e = check_mount_point(&root, Path::new("/nonexistent")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mount point /nonexistent does not exist; nothing was mounted"
        );
        let e = check_mount_point(&root, Path::new("/etc/passwd")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mount point /etc/passwd is not a directory; nothing was mounted"
        );
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Whoever runs it: a directory owned by a user (the runner's own, or one root hands to
    /// uid 65534) is named, with its owner.
    #[test]
    fn a_directory_owned_by_a_user_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(&base, Some(65534), None).unwrap();
        }
        let uid = std::fs::metadata(&base).unwrap().uid();
        assert_ne!(uid, 0);
        let (path, why) = swappable_entry(&base).unwrap();
        assert_eq!(path, base);
        assert!(
            why.contains(&format!("owned by uid {uid}, not root")),
            "{why}"
        );
    }

    /// A tree that only root owns, opened and closed by mode: needs root to own it.
    #[test]
    #[ignore = "needs root (the tree must be root's): as root, `cargo test --lib -- --ignored mount::target_path::`"]
    fn an_open_directory_on_the_path_is_named() {
        assert!(
            nix::unistd::geteuid().is_root(),
            "needs root: the tree must be root's"
        );
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        chmod(&base, 0o755);
        let open = base.join("open");
        let target = open.join("mnt");
        std::fs::create_dir_all(&target).unwrap();
        chmod(&open, 0o755);
        assert_eq!(swappable_entry(&target), None, "all root's, closed");
        chmod(&open, 0o777);
        let (path, why) = swappable_entry(&target).unwrap();
        assert_eq!(path, open);
        assert!(why.contains("writable by others (mode 0777)"), "{why}");
        chmod(&open, 0o1777);
        assert_eq!(swappable_entry(&target), None, "root's sticky directory");
        std::os::unix::fs::chown(&target, Some(65534), None).unwrap();
        let (path, why) = swappable_entry(&target).unwrap();
        assert_eq!(path, target);
        assert!(why.contains("owned by uid 65534"), "{why}");
    }
}
