//! Who may run the helper: root with CAP_SYS_ADMIN, never through a setuid bit.
//!
//! mount(8) runs helpers as root for root, and as the user (privileges dropped) for `user`
//! mounts, which `mount.nfs` cannot do for a non-`nfs` fstab type anyway. A helper whose real and
//! effective uids differ was installed setuid, which nfs-gds refuses outright: it runs programs
//! and reads configuration on the caller's say-so (`NFS_GDS_ROOT`, `NFS_GDS_CONFIG`). `-f` needs
//! no privileges. Both are asked of the system: below a fixture root the capability is the
//! tree's `/proc/self/status` (CapEff), so tests can take both paths whoever runs them; the ids
//! are always the process's own.

use crate::system::System;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrivilegeError {
    #[error("refusing to run with real uid {real} and effective uid {effective}: nfs-gds must not be installed setuid (mount(8) runs helpers as root)")]
    Setuid { real: u32, effective: u32 },
    #[error("refusing to run with real gid {real} and effective gid {effective}: nfs-gds must not be installed setuid or setgid")]
    Setgid { real: u32, effective: u32 },
    #[error("mounting needs CAP_SYS_ADMIN: run it as root (uid {uid} lacks it); `-f` shows what would happen without mounting")]
    NotAdmin { uid: u32 },
    #[error("{0}")]
    Unknown(String),
}

impl PrivilegeError {
    pub fn exit_code(&self) -> u8 {
        match self {
            PrivilegeError::Unknown(_) => super::exit_code::SYSERR,
            _ => super::exit_code::USAGE,
        }
    }
}

/// Refuses a setuid or setgid start: every command, in every persona, calls this first.
pub fn refuse_setuid(system: &dyn System) -> Result<(), PrivilegeError> {
    let ids = system.credentials();
    let (real, effective) = ids.uids;
    if real != effective {
        return Err(PrivilegeError::Setuid { real, effective });
    }
    let (real, effective) = ids.gids;
    if real != effective {
        return Err(PrivilegeError::Setgid { real, effective });
    }
    Ok(())
}

/// Refuses setuid always, and a missing CAP_SYS_ADMIN when `need_admin`.
pub fn require(system: &dyn System, need_admin: bool) -> Result<(), PrivilegeError> {
    refuse_setuid(system)?;
    let (real, _) = system.credentials().uids;
    if need_admin && !system.has_sys_admin().map_err(PrivilegeError::Unknown)? {
        return Err(PrivilegeError::NotAdmin { uid: real });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::{Credentials, Fake};

    fn process(uids: (u32, u32), gids: (u32, u32), admin: Result<bool, String>) -> Fake {
        Fake::new().credentials(Credentials { uids, gids }, admin)
    }

    #[test]
    fn root_with_the_capability_may_mount() {
        assert_eq!(require(&Fake::new(), true), Ok(()));
    }

    #[test]
    fn setuid_is_refused_even_for_a_fake_mount() {
        let p = process((1000, 0), (0, 0), Ok(true));
        let e = require(&p, false).unwrap_err();
        assert_eq!(
            e,
            PrivilegeError::Setuid {
                real: 1000,
                effective: 0
            }
        );
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("setuid"));
    }

    #[test]
    fn setgid_is_refused_too() {
        let p = process((0, 0), (1000, 0), Ok(true));
        assert_eq!(
            refuse_setuid(&p),
            Err(PrivilegeError::Setgid {
                real: 1000,
                effective: 0
            })
        );
        assert_eq!(refuse_setuid(&Fake::new()), Ok(()));
    }

    #[test]
    fn a_user_without_the_capability_may_only_fake() {
        let p = process((1000, 1000), (1000, 1000), Ok(false));
        let e = require(&p, true).unwrap_err();
        assert_eq!(e, PrivilegeError::NotAdmin { uid: 1000 });
        assert_eq!(e.exit_code(), 1);
        assert_eq!(require(&p, false), Ok(()));
    }

    #[test]
    fn unreadable_capabilities_are_a_system_error() {
        let p = process((0, 0), (0, 0), Err("no".into()));
        assert_eq!(require(&p, true).unwrap_err().exit_code(), 2);
    }
}
