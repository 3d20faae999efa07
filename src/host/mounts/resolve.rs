//! A path resolved as the kernel would, without ever looking below an NFS mount point: the
//! container hook's view of a bind source (a runtime binds what the source's symbolic links
//! lead to, so a link on the local disk may lead into an NFS mount).
//!
//! One component at a time, from `/` of the root: while the directory walked so far lies on a
//! mount that is not NFS (mountinfo says which, [`MountPoints`]), the next component is looked
//! at; a symbolic link is read and its target spliced in (an absolute target from the root's
//! `/`, as `openat2(RESOLVE_IN_ROOT)` takes it; `..` stops at the root). As soon as the walk
//! reaches an NFS mount point, the rest of the path is joined lexically and nothing more is
//! looked at: a hard mount of a dead server would hang a `stat` or `readlink` there. More than
//! [`MAX_LINKS`] links (a loop) is an error naming the path.

use std::path::{Component, Path, PathBuf};

use super::points::MountPoints;
use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// Symbolic links followed in one resolution before giving up, as the kernel does (`ELOOP`).
pub const MAX_LINKS: usize = 40;

/// Why a path could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("{}: more than {MAX_LINKS} symbolic links to follow (a loop?)", path.display())]
    TooManyLinks { path: PathBuf },
    #[error(transparent)]
    Host(#[from] HostError),
}

/// A resolved path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute and clean: every link on a mount that is not NFS followed.
    pub path: PathBuf,
    /// The walk stopped at an NFS mount point with this much of the path left below it, taken
    /// lexically (empty when the path is the mount point, or lies on no NFS mount).
    pub unresolved: PathBuf,
    /// How many symbolic links were followed on the way.
    pub links: usize,
}

impl Resolved {
    /// Whether a link led the path into an NFS mount with components left below its mount
    /// point: resolving would have to go on inside the NFS mount (a link there could lead
    /// elsewhere), which nfs-gds never does.
    pub fn stopped_inside_nfs_after_a_link(&self) -> bool {
        self.links > 0 && !self.unresolved.as_os_str().is_empty()
    }
}

/// `path` (absolute) resolved below `root` as described in the module's text.
pub fn resolve_beside_nfs(
    root: &Root,
    points: &MountPoints,
    path: &Path,
) -> Result<Resolved, ResolveError> {
    let mut done = PathBuf::from("/");
    // What remains to walk, the next component last.
    let mut todo: Vec<PathBuf> = parts(path);
    todo.reverse();
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name.as_os_str() == ".." {
            done.pop();
            continue;
        }
        if points.under(&done).is_some_and(|u| u.nfs) {
            todo.push(name);
            return Ok(lexical(done, todo, links));
        }
        let next = done.join(&name);
        // The NFS mount's root itself: not even a `readlink` of it.
        if points.under(&next).is_some_and(|u| u.nfs) {
            return Ok(lexical(next, todo, links));
        }
        match root.read_link(&next)? {
            Some(target) => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(ResolveError::TooManyLinks {
                        path: path.to_path_buf(),
                    });
                }
                if target.starts_with('/') {
                    done = PathBuf::from("/");
                }
                let mut spliced = parts(Path::new(&target));
                spliced.reverse();
                todo.extend(spliced);
            }
            None => done = next,
        }
    }
    Ok(Resolved {
        path: done,
        unresolved: PathBuf::new(),
        links,
    })
}

/// The walk stopped at `at` (on an NFS mount): the rest (`todo`, next last) joined lexically.
fn lexical(at: PathBuf, mut todo: Vec<PathBuf>, links: usize) -> Resolved {
    let mut path = at;
    let mut rest = PathBuf::new();
    while let Some(name) = todo.pop() {
        if name.as_os_str() == ".." {
            path.pop();
            rest.pop();
        } else {
            path.push(&name);
            rest.push(&name);
        }
    }
    Resolved {
        path,
        unresolved: rest,
        links,
    }
}

/// The components of `path` that name something (`.` and empty ones dropped; `..` kept).
fn parts(path: &Path) -> Vec<PathBuf> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("..")),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A root with `/` on ext4 and an NFS mount at `/mnt/gds`.
    fn node() -> (tempfile::TempDir, Root, MountPoints) {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("mnt/gds")).unwrap();
        let points = MountPoints::parse(
            b"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n\
              70 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw\n",
        )
        .unwrap();
        let root = Root::new(tree.path());
        (tree, root, points)
    }

    fn resolve(root: &Root, points: &MountPoints, path: &str) -> Resolved {
        resolve_beside_nfs(root, points, Path::new(path)).unwrap()
    }

    #[test]
    fn a_link_on_the_local_disk_into_an_nfs_mount_is_followed_and_stops_there() {
        let (tree, root, points) = node();
        std::fs::create_dir_all(tree.path().join("srv")).unwrap();
        symlink("/mnt/gds/train", tree.path().join("srv/data")).unwrap();
        symlink("../mnt/gds", tree.path().join("srv/rel")).unwrap();
        let r = resolve(&root, &points, "/srv/data/x");
        assert_eq!(r.path, Path::new("/mnt/gds/train/x"));
        assert_eq!(r.unresolved, Path::new("train/x"));
        assert_eq!(
            resolve(&root, &points, "/srv/rel/y").path,
            Path::new("/mnt/gds/y")
        );
        // Below the NFS mount point nothing is looked at: a link there (as the fixture's
        // directory shows it) is not followed.
        symlink("/etc", tree.path().join("mnt/gds/train")).unwrap();
        assert_eq!(
            resolve(&root, &points, "/mnt/gds/train").path,
            Path::new("/mnt/gds/train")
        );
        // A plain local path is itself.
        let r = resolve(&root, &points, "/srv/local/../other");
        assert_eq!(r.path, Path::new("/srv/other"));
        assert_eq!(r.unresolved, Path::new(""));
    }

    #[test]
    fn an_absolute_target_stays_inside_the_root() {
        let (tree, root, points) = node();
        symlink("/../../mnt/gds", tree.path().join("up")).unwrap();
        assert_eq!(
            resolve(&root, &points, "/up/a").path,
            Path::new("/mnt/gds/a")
        );
    }

    #[test]
    fn a_loop_is_an_error_naming_the_path() {
        let (tree, root, points) = node();
        symlink("/b", tree.path().join("a")).unwrap();
        symlink("/a", tree.path().join("b")).unwrap();
        let e = resolve_beside_nfs(&root, &points, Path::new("/a/data")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/a/data: more than 40 symbolic links to follow (a loop?)"
        );
    }
}
