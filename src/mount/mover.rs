//! Moving the helper's verified mount from its staging point onto DIR, and keeping the staging
//! area private.
//!
//! On a real host DIR is opened before anything is mounted, with `open_tree(2)` and
//! `AT_NO_AUTOMOUNT | AT_SYMLINK_NOFOLLOW` (an automount point on DIR is held as it is, never
//! triggered; a symlink planted at DIR is refused), and must be a directory. The staged mount is
//! opened the same way, and `statx` of that descriptor must show the mount id the helper judged.
//! Then `move_mount(2)` moves the mount the one descriptor holds onto the place the other holds
//! (`/proc/self/fd/N` on both sides): a path component swapped meanwhile redirects nothing. The
//! kernel refuses to move a mount whose parent is shared, and systemd makes `/run` shared, so
//! the staging area is bound onto itself once and made private ([`Mover::isolate`]): then
//! nothing mounted below it propagates to another namespace, and the move is allowed. Below a
//! fixture root the tree's own `mount` program is run as `mount --move STAGED DIR` (a recording
//! fake), as unmounting runs the tree's `umount`; trees have no propagation to isolate.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{fstat, FileType};

use super::identity::MountIdentity;
use super::unmount::{fd_path, not_held};
use crate::host::mounts::MountTable;
use crate::system::held::hold;
use crate::system::System;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mover {
    /// move_mount(2) between held descriptors.
    Syscall,
    /// Below a fixture root: this program run as `mount --move STAGED DIR`.
    Program(PathBuf),
    /// A fixture root without a `mount` program: refuse.
    Unavailable { root: PathBuf },
}

#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error("cannot open the mount point {}: {source}", target.display())]
    Open {
        target: PathBuf,
        source: std::io::Error,
    },
    #[error("the mount point {} is not a directory", target.display())]
    NotADirectory { target: PathBuf },
    #[error("the staged mount at {} is not the one nfs-gds verified: {why}", staged.display())]
    NotThatMount { staged: PathBuf, why: String },
    #[error("cannot move the mount from {} onto {}: {source}", staged.display(), target.display())]
    Move {
        staged: PathBuf,
        target: PathBuf,
        source: std::io::Error,
    },
    #[error("`{} --move {} {}` failed ({status})", program.display(), staged.display(), target.display())]
    Failed {
        program: PathBuf,
        staged: PathBuf,
        target: PathBuf,
        status: String,
    },
    #[error("cannot make the staging area {} a private mount: {source}", area.display())]
    Isolate {
        area: PathBuf,
        source: std::io::Error,
    },
    #[error("no mount program below {}, and move_mount is never called on a fixture tree", root.display())]
    NoMountBelowRoot { root: PathBuf },
}

/// DIR, held from before mounting until the move: its path for messages and, on a real host,
/// the descriptor the move goes through.
#[derive(Debug)]
pub struct HeldTarget {
    pub path: PathBuf,
    fd: Option<OwnedFd>,
}

impl HeldTarget {
    /// A target held by path alone (fixture roots, and tests of the flow).
    pub fn by_path(path: &Path) -> Self {
        HeldTarget {
            path: path.to_owned(),
            fd: None,
        }
    }
}

/// Whether the staging area is a mount of its own that propagates nowhere.
fn is_private_mount(table: &MountTable, area: &Path) -> bool {
    table
        .topmost_at(area)
        .is_some_and(|m| !m.info.tags().any(|t| t.starts_with("shared:")))
}

impl Mover {
    /// Holds DIR before mounting (see the module).
    pub fn hold_target(&self, target: &Path) -> Result<HeldTarget, MoveError> {
        match self {
            Mover::Syscall => {
                let open = |source| MoveError::Open {
                    target: target.to_owned(),
                    source,
                };
                let fd = hold(target).map_err(open)?;
                let stat = fstat(&fd).map_err(|e| open(e.into()))?;
                if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
                    return Err(MoveError::NotADirectory {
                        target: target.to_owned(),
                    });
                }
                Ok(HeldTarget {
                    path: target.to_owned(),
                    fd: Some(fd),
                })
            }
            Mover::Program(_) | Mover::Unavailable { .. } => Ok(HeldTarget::by_path(target)),
        }
    }

    /// Makes the staging area `area` a private mount of its own, unless `table` (the mounts on
    /// `area`, [`crate::host::mounts::read_mounts_at`]) shows it is one: bound onto itself when it is no mount point, then
    /// `MS_PRIVATE`. `true` when something was done.
    pub fn isolate(
        &self,
        system: &dyn System,
        area: &Path,
        table: &MountTable,
    ) -> Result<bool, MoveError> {
        if *self != Mover::Syscall || is_private_mount(table, area) {
            return Ok(false);
        }
        let isolate = |source| MoveError::Isolate {
            area: area.to_owned(),
            source,
        };
        if table.topmost_at(area).is_none() {
            system.bind(area, area).map_err(isolate)?;
        }
        system.make_private(area).map_err(isolate)?;
        Ok(true)
    }

    /// Moves `staged`, the helper's own mount on its staging point, onto the held target.
    pub fn move_onto(
        &self,
        system: &dyn System,
        staged: &MountIdentity,
        target: &HeldTarget,
    ) -> Result<(), MoveError> {
        let from = &staged.mount_point;
        match self {
            Mover::Syscall => {
                let failed = |source| MoveError::Move {
                    staged: from.clone(),
                    target: target.path.clone(),
                    source,
                };
                let src = hold(from).map_err(failed)?;
                if let Some(why) = not_held(&src, staged).map_err(failed)? {
                    return Err(MoveError::NotThatMount {
                        staged: from.clone(),
                        why,
                    });
                }
                let Some(to) = target.fd.as_ref() else {
                    return Err(failed(std::io::Error::other(
                        "the mount point was not held before mounting",
                    )));
                };
                system
                    .move_mount(&fd_path(&src), &fd_path(to))
                    .map_err(failed)
            }
            Mover::Program(program) => {
                let status = system
                    .exec(
                        program,
                        vec!["--move".into(), from.into(), target.path.clone().into()],
                    )
                    .map_err(|source| MoveError::Move {
                        staged: from.clone(),
                        target: target.path.clone(),
                        source,
                    })?;
                if status.success() {
                    Ok(())
                } else {
                    Err(MoveError::Failed {
                        program: program.clone(),
                        staged: from.clone(),
                        target: target.path.clone(),
                        status: status.to_string(),
                    })
                }
            }
            Mover::Unavailable { root } => Err(MoveError::NoMountBelowRoot { root: root.clone() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::parse_mountinfo;

    /// This thread's mount table (after `unshare`, `/proc/self` is still the process's).
    fn table() -> MountTable {
        let text = std::fs::read("/proc/thread-self/mountinfo").unwrap();
        MountTable::join(parse_mountinfo(&text).unwrap(), Vec::new())
    }

    /// Against the real kernel, in a private mount namespace of one thread, below a tmpfs made
    /// shared as systemd makes `/run`: a mount below the shared tmpfs cannot be moved (EINVAL);
    /// once the staging area is bound onto itself and made private it can, through the held
    /// descriptors, onto DIR, keeping its mount id; and a wrong identity moves nothing.
    #[test]
    fn moves_a_staged_mount_once_the_area_is_private() {
        use nix::mount::{mount, MsFlags};
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_owned();
        crate::testkit::in_private_mount_namespace(move || {
            let none: Option<&str> = None;
            mount(Some("run"), &base, Some("tmpfs"), MsFlags::empty(), none).unwrap();
            mount(none, &base, none, MsFlags::MS_SHARED, none).unwrap();
            let (area, target) = (base.join("stage"), base.join("data"));
            let point = area.join("1/mnt");
            std::fs::create_dir_all(&point).unwrap();
            std::fs::create_dir_all(&target).unwrap();
            let live = crate::system::Live::new(true);
            let sys: &dyn System = &live;
            let mover = Mover::Syscall;
            let held = mover.hold_target(&target).unwrap();
            let stage = || {
                mount(
                    Some("nfs-like"),
                    &point,
                    Some("tmpfs"),
                    MsFlags::empty(),
                    none,
                )
                .unwrap()
            };

            stage();
            let staged = |t: &MountTable| MountIdentity::of(&t.topmost_at(&point).unwrap().info);
            let first = staged(&table());
            let e = mover.move_onto(sys, &first, &held).unwrap_err();
            assert!(e.to_string().contains("Invalid argument"), "{e}");
            nix::mount::umount(&point).unwrap();

            assert!(mover.isolate(sys, &area, &table()).unwrap());
            assert!(
                !mover.isolate(sys, &area, &table()).unwrap(),
                "once is enough"
            );
            stage();
            let ours = staged(&table());
            let wrong = MountIdentity {
                mount_id: ours.mount_id + 1000,
                ..ours.clone()
            };
            assert!(matches!(
                mover.move_onto(sys, &wrong, &held),
                Err(MoveError::NotThatMount { .. })
            ));
            mover.move_onto(sys, &ours, &held).unwrap();
            let after = table();
            assert!(after.topmost_at(&point).is_none(), "nothing left staged");
            let on_dir = after.topmost_at(&target).unwrap();
            assert_eq!(on_dir.info.mount_id, ours.mount_id, "the move keeps the id");
            assert_eq!(on_dir.info.source(), "nfs-like");
        });
    }

    #[test]
    fn a_fixture_root_without_mount_refuses_and_a_tree_isolates_nothing() {
        let m = Mover::Unavailable {
            root: "/tmp/r".into(),
        };
        let fake = crate::system::Fake::new();
        let id = MountIdentity {
            mount_id: 70,
            parent_id: 1,
            device: "0:50".into(),
            mount_point: "/run/nfs-gds/stage/1/mnt".into(),
            unique_id: None,
        };
        assert!(matches!(
            m.move_onto(&fake, &id, &HeldTarget::by_path(Path::new("/mnt/gds"))),
            Err(MoveError::NoMountBelowRoot { .. })
        ));
        let p = Mover::Program("/t/usr/bin/mount".into());
        assert!(!p
            .isolate(
                &fake,
                Path::new("/run/nfs-gds/stage"),
                &MountTable::default()
            )
            .unwrap());
        p.move_onto(&fake, &id, &HeldTarget::by_path(Path::new("/mnt/gds")))
            .unwrap();
        assert_eq!(
            fake.calls(),
            ["exec /t/usr/bin/mount --move /run/nfs-gds/stage/1/mnt /mnt/gds"]
        );
    }
}
