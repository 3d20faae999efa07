//! Taking back a mount the helper made, by its identity rather than by its path.
//!
//! On a real host the target is opened with `O_PATH|O_NOFOLLOW|O_DIRECTORY` (a symlink planted
//! at the target cannot redirect it), `statx` of that descriptor must show the mount id and the
//! device the helper found in mountinfo (and the unique mount id, where the kernel has one),
//! and then that very descriptor is unmounted: `umount2("/proc/self/fd/N")` resolves to the
//! mount the descriptor holds, so nothing mounted or swapped in on the path between the check
//! and the unmount can be hit. The descriptor itself keeps the mount busy, so the unmount is
//! `MNT_DETACH`; because a detach also takes the mounts stacked on it, the mount table is read
//! while the descriptor pins the mount (its id cannot be reused meanwhile) and a mount with
//! anything mounted on it is not touched. Below a fixture root the tree's own `umount` program
//! is run with the mount point instead, so tests can record it; umount2 is never called on a
//! fixture path.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{statx, AtFlags, Mode, OFlags, StatxFlags};

use super::identity::MountIdentity;
use crate::system::System;

#[derive(Debug, thiserror::Error)]
pub enum UnmountError {
    #[error("umount2 of {}: {source}", target.display())]
    Syscall {
        target: PathBuf,
        source: std::io::Error,
    },
    #[error("not unmounting {}: {why}", target.display())]
    NotThatMount { target: PathBuf, why: String },
    #[error("cannot run {}: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("`{} {}` failed ({status})", program.display(), target.display())]
    Failed {
        program: PathBuf,
        target: PathBuf,
        status: std::process::ExitStatus,
    },
    #[error("no umount program below {}, and umount2 is never called on a fixture tree", root.display())]
    NoUmountBelowRoot { root: PathBuf },
}

/// `STATX_MNT_ID_UNIQUE` (Linux 6.8): `stx_mnt_id` becomes the 64-bit id that is never reused.
const STATX_MNT_ID_UNIQUE: u32 = 0x4000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmounter {
    /// umount2(2). `umount` is umount(8)'s path, for the command shown when it fails.
    Syscall { umount: Option<PathBuf> },
    /// Run this program with the mount point (fixture roots).
    Program(PathBuf),
    /// A fixture root without an `umount` program: refuse.
    Unavailable { root: PathBuf },
}

/// What `statx` says about the mount a descriptor is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    mount_id: u64,
    unique_id: Option<u64>,
    device: (u32, u32),
}

fn open_target(target: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        target,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn seen(fd: &OwnedFd) -> std::io::Result<Seen> {
    let old = statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)?;
    if old.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return Err(std::io::Error::other(
            "statx reports no mount id (Linux 5.8 or later is needed)",
        ));
    }
    let unique = statx(
        fd,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE),
    )
    .ok()
    .filter(|s| s.stx_mask & STATX_MNT_ID_UNIQUE != 0)
    .map(|s| s.stx_mnt_id);
    Ok(Seen {
        mount_id: old.stx_mnt_id,
        unique_id: unique,
        device: (old.stx_dev_major, old.stx_dev_minor),
    })
}

/// Why the mount the descriptor `fd` holds is not `mount`, when it is not (the check before
/// acting on a held mount, an unmount or a move).
pub(super) fn not_held(fd: &OwnedFd, mount: &MountIdentity) -> std::io::Result<Option<String>> {
    Ok(mismatch(mount, &seen(fd)?))
}

/// What a path-taking system call is given to act on exactly the mount `fd` holds.
pub(super) fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The mount points of the mounts whose parent is mount `id`, in this thread's namespace.
fn children_of(id: u32) -> std::io::Result<Vec<String>> {
    let text = std::fs::read("/proc/thread-self/mountinfo")?;
    let entries = crate::host::mounts::parse_mountinfo(&text)
        .map_err(|e| std::io::Error::other(format!("mountinfo:{}: {}", e.line, e.reason)))?;
    Ok(entries
        .iter()
        .filter(|m| m.parent_id == id && m.mount_id != id)
        .map(|m| m.mount_point().display().to_string())
        .collect())
}

/// Why the mount on the descriptor is not `mount`, if it is not.
fn mismatch(mount: &MountIdentity, seen: &Seen) -> Option<String> {
    if seen.mount_id != u64::from(mount.mount_id) {
        return Some(format!(
            "the mount on it now has id {}, not {}",
            seen.mount_id, mount.mount_id
        ));
    }
    if mount.device_numbers() != Some(seen.device) {
        return Some(format!(
            "the mount on it now is device {}:{}, not {}",
            seen.device.0, seen.device.1, mount.device
        ));
    }
    match (mount.unique_id, seen.unique_id) {
        (Some(want), Some(got)) if want != got => Some(format!(
            "the mount on it now has unique id {got}, not {want}"
        )),
        _ => None,
    }
}

impl Unmounter {
    /// Adds what only the live kernel can tell (the unique mount id) to a mount found in
    /// mountinfo, when the mount on its mount point is that mount. Fixture roots add nothing.
    pub fn identify(&self, mut mount: MountIdentity) -> MountIdentity {
        if let Unmounter::Syscall { .. } = self {
            if let Ok(s) = open_target(&mount.mount_point).and_then(|fd| seen(&fd)) {
                if mismatch(&mount, &s).is_none() {
                    mount.unique_id = s.unique_id;
                }
            }
        }
        mount
    }

    /// Unmounts exactly `mount` through `system` (umount2 of the held descriptor, or the tree's
    /// `umount` program).
    pub fn unmount(&self, system: &dyn System, mount: &MountIdentity) -> Result<(), UnmountError> {
        let target = &mount.mount_point;
        match self {
            Unmounter::Syscall { .. } => {
                let syscall = |source: std::io::Error| UnmountError::Syscall {
                    target: target.to_owned(),
                    source,
                };
                let fd = open_target(target).map_err(syscall)?;
                if let Some(why) = not_held(&fd, mount).map_err(syscall)? {
                    return Err(UnmountError::NotThatMount {
                        target: target.to_owned(),
                        why,
                    });
                }
                let children = children_of(mount.mount_id).map_err(syscall)?;
                if !children.is_empty() {
                    return Err(UnmountError::NotThatMount {
                        target: target.to_owned(),
                        why: format!("something is mounted on it now ({})", children.join(", ")),
                    });
                }
                system.unmount(&fd_path(&fd), true).map_err(syscall)
            }
            Unmounter::Program(program) => {
                let status = system
                    .exec(program, vec![target.into()])
                    .map_err(|source| UnmountError::Spawn {
                        program: program.clone(),
                        source,
                    })?;
                if status.success() {
                    Ok(())
                } else {
                    Err(UnmountError::Failed {
                        program: program.clone(),
                        target: target.to_owned(),
                        status,
                    })
                }
            }
            Unmounter::Unavailable { root } => {
                Err(UnmountError::NoUmountBelowRoot { root: root.clone() })
            }
        }
    }

    pub fn command(&self, target: &Path) -> String {
        let program = match self {
            Unmounter::Syscall { umount: Some(p) } | Unmounter::Program(p) => {
                p.display().to_string()
            }
            _ => "umount".to_string(),
        };
        format!("{program} {}", target.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(id: u32, device: &str, point: &str) -> MountIdentity {
        MountIdentity {
            mount_id: id,
            parent_id: 1,
            device: device.into(),
            mount_point: point.into(),
            unique_id: None,
        }
    }

    #[test]
    fn the_suggested_command_uses_the_found_umount() {
        let u = Unmounter::Syscall {
            umount: Some("/usr/bin/umount".into()),
        };
        assert_eq!(
            u.command(Path::new("/mnt/data")),
            "/usr/bin/umount /mnt/data"
        );
        let u = Unmounter::Syscall { umount: None };
        assert_eq!(u.command(Path::new("/mnt/data")), "umount /mnt/data");
    }

    #[test]
    fn a_fixture_root_without_umount_refuses() {
        let u = Unmounter::Unavailable {
            root: "/tmp/x".into(),
        };
        assert!(matches!(
            u.unmount(
                &crate::system::Fake::new(),
                &identity(70, "0:50", "/mnt/data")
            ),
            Err(UnmountError::NoUmountBelowRoot { .. })
        ));
    }

    #[test]
    fn another_mount_on_the_descriptor_is_named() {
        let m = identity(40, "0:50", "/mnt/gds");
        let s = |mount_id, unique_id, device| Seen {
            mount_id,
            unique_id,
            device,
        };
        assert_eq!(mismatch(&m, &s(40, Some(9), (0, 50))), None);
        assert!(mismatch(&m, &s(41, None, (0, 50)))
            .unwrap()
            .contains("id 41, not 40"));
        assert!(mismatch(&m, &s(40, None, (0, 51)))
            .unwrap()
            .contains("device 0:51, not 0:50"));
        let m = MountIdentity {
            unique_id: Some(1_000_123),
            ..m
        };
        assert!(mismatch(&m, &s(40, Some(1_000_200), (0, 50)))
            .unwrap()
            .contains("unique id 1000200, not 1000123"));
    }

    /// Against the real kernel, in a private mount namespace of one thread: a wrong identity
    /// unmounts nothing, the right one unmounts exactly the top mount through its descriptor.
    #[test]
    fn unmounts_the_held_mount_in_a_private_namespace() {
        use nix::mount::{mount, MsFlags};
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().to_owned();
        crate::testkit::in_private_mount_namespace(move || {
            let none: Option<&str> = None;
            for _ in 0..2 {
                mount(Some("t"), &target, Some("tmpfs"), MsFlags::empty(), none).unwrap();
            }
            let table = || {
                let text = std::fs::read("/proc/thread-self/mountinfo").unwrap();
                let all = crate::host::mounts::parse_mountinfo(&text).unwrap();
                all.into_iter()
                    .filter(|m| m.mount_point() == target)
                    .collect::<Vec<_>>()
            };
            let before = table();
            assert_eq!(before.len(), 2);
            let top = MountIdentity::of(&before[1]);
            let u = Unmounter::Syscall { umount: None };
            let live = crate::system::Live::new(true);
            let sys: &dyn System = &live;
            let top = u.identify(top);
            assert_eq!(
                top.mount_id, before[1].mount_id,
                "identify keeps what mountinfo said"
            );
            let lower = MountIdentity::of(&before[0]);
            let e = u.unmount(sys, &lower).unwrap_err();
            assert!(e.to_string().contains(", not "), "{e}");
            let sub = target.join("sub");
            std::fs::create_dir(&sub).unwrap();
            mount(Some("t"), &sub, Some("tmpfs"), MsFlags::empty(), none).unwrap();
            let e = u.unmount(sys, &top).unwrap_err();
            assert!(
                e.to_string().contains("something is mounted on it now"),
                "{e}"
            );
            nix::mount::umount(&sub).unwrap();
            assert_eq!(table().len(), 2, "the wrong identity unmounted nothing");
            u.unmount(sys, &top).unwrap();
            let after = table();
            assert_eq!(after.len(), 1);
            assert_eq!(after[0], before[0]);
            u.unmount(sys, &lower).unwrap();
            assert!(table().is_empty());
        });
    }
}
