//! Taking back a mount the helper made: `umount2(target, UMOUNT_NOFOLLOW)`.
//!
//! `UMOUNT_NOFOLLOW` keeps a symlink planted at the target from redirecting the unmount. It is
//! nix's `MntFlags::UMOUNT_NOFOLLOW` (8); sys-mount's `UnmountFlags::NOFOLLOW` is `O_NOFOLLOW`,
//! which umount2 rejects with EINVAL, so it is not used. The caller makes sure the mount on top
//! of the target is the one it made. Below a fixture root the tree's own `umount` program is run
//! instead, so tests can record it; umount2 is never called on a fixture path.

use std::path::{Path, PathBuf};

use super::mounter::UnmountError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmounter {
    /// umount2(2). `umount` is umount(8)'s path, for the command shown when it fails.
    Syscall { umount: Option<PathBuf> },
    /// Run this program with the target (fixture roots).
    Program(PathBuf),
    /// A fixture root without an `umount` program: refuse.
    Unavailable { root: PathBuf },
}

impl Unmounter {
    pub fn unmount(&self, target: &Path) -> Result<(), UnmountError> {
        match self {
            Unmounter::Syscall { .. } => {
                nix::mount::umount2(target, nix::mount::MntFlags::UMOUNT_NOFOLLOW).map_err(
                    |source| UnmountError::Syscall {
                        target: target.to_owned(),
                        source,
                    },
                )
            }
            Unmounter::Program(program) => {
                let status = crate::host::programs::command(program)
                    .arg(target)
                    .status()
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
    fn the_nofollow_flag_is_the_kernel_one() {
        assert_eq!(nix::mount::MntFlags::UMOUNT_NOFOLLOW.bits(), 8);
    }

    #[test]
    fn a_fixture_root_without_umount_refuses() {
        let u = Unmounter::Unavailable {
            root: "/tmp/x".into(),
        };
        assert!(matches!(
            u.unmount(Path::new("/mnt/data")),
            Err(UnmountError::NoUmountBelowRoot { .. })
        ));
    }
}
