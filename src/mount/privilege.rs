//! Who may run the helper: root with CAP_SYS_ADMIN, never through a setuid bit.
//!
//! mount(8) runs helpers as root for root, and as the user (privileges dropped) for `user`
//! mounts, which `mount.nfs` cannot do for a non-`nfs` fstab type anyway. A helper whose real and
//! effective uids differ was installed setuid, which nfs-gds refuses outright: it runs programs
//! and reads configuration on the caller's say-so (`NFS_GDS_ROOT`, `NFS_GDS_CONFIG`). `-f` needs
//! no privileges. Below a fixture root the capability is read from the tree's
//! `/proc/self/status` (CapEff), so tests can take both paths whoever runs them; the uids are
//! always the process's own.

use std::path::PathBuf;

/// `CAP_SYS_ADMIN`'s bit in the capability sets.
pub const CAP_SYS_ADMIN_BIT: u32 = 21;

pub trait Privileges {
    /// (real uid, effective uid).
    fn uids(&self) -> (u32, u32);
    /// (real gid, effective gid).
    fn gids(&self) -> (u32, u32);
    /// Whether the effective set holds CAP_SYS_ADMIN; `Err` says why it cannot be told.
    fn has_sys_admin(&self) -> Result<bool, String>;
}

/// The process's own privileges.
#[derive(Debug, Clone, Default)]
pub struct HostPrivileges {
    /// Read CapEff from this file instead of asking the kernel (fixture roots).
    pub status_file: Option<PathBuf>,
}

impl Privileges for HostPrivileges {
    fn uids(&self) -> (u32, u32) {
        (
            nix::unistd::getuid().as_raw(),
            nix::unistd::geteuid().as_raw(),
        )
    }

    fn gids(&self) -> (u32, u32) {
        (
            nix::unistd::getgid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    }

    fn has_sys_admin(&self) -> Result<bool, String> {
        match &self.status_file {
            None => caps::has_cap(
                None,
                caps::CapSet::Effective,
                caps::Capability::CAP_SYS_ADMIN,
            )
            .map_err(|e| format!("cannot read the process capabilities: {e}")),
            Some(path) => {
                let bytes = crate::host::io::reader::read_named(path, crate::host::FileKind::Text)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("cannot read {}: no such file", path.display()))?
                    .bytes;
                let text = String::from_utf8_lossy(&bytes);
                parse_cap_eff(&text)
                    .map(|bits| bits & (1 << CAP_SYS_ADMIN_BIT) != 0)
                    .ok_or_else(|| format!("{} has no CapEff: line", path.display()))
            }
        }
    }
}

/// The `CapEff:` hex mask of a `/proc/<pid>/status` text.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        l.strip_prefix("CapEff:")
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
    })
}

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
pub fn refuse_setuid(p: &dyn Privileges) -> Result<(), PrivilegeError> {
    let (real, effective) = p.uids();
    if real != effective {
        return Err(PrivilegeError::Setuid { real, effective });
    }
    let (real, effective) = p.gids();
    if real != effective {
        return Err(PrivilegeError::Setgid { real, effective });
    }
    Ok(())
}

/// Refuses setuid always, and a missing CAP_SYS_ADMIN when `need_admin`.
pub fn require(p: &dyn Privileges, need_admin: bool) -> Result<(), PrivilegeError> {
    refuse_setuid(p)?;
    let (real, _) = p.uids();
    if need_admin && !p.has_sys_admin().map_err(PrivilegeError::Unknown)? {
        return Err(PrivilegeError::NotAdmin { uid: real });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount::fake::FakePrivileges;

    #[test]
    fn root_with_the_capability_may_mount() {
        assert_eq!(require(&FakePrivileges::root(), true), Ok(()));
    }

    #[test]
    fn setuid_is_refused_even_for_a_fake_mount() {
        let p = FakePrivileges {
            uids: (1000, 0),
            gids: (0, 0),
            admin: Ok(true),
        };
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
        let p = FakePrivileges {
            gids: (1000, 0),
            ..FakePrivileges::root()
        };
        assert_eq!(
            refuse_setuid(&p),
            Err(PrivilegeError::Setgid {
                real: 1000,
                effective: 0
            })
        );
        assert_eq!(refuse_setuid(&FakePrivileges::root()), Ok(()));
    }

    #[test]
    fn a_user_without_the_capability_may_only_fake() {
        let p = FakePrivileges {
            uids: (1000, 1000),
            gids: (1000, 1000),
            admin: Ok(false),
        };
        let e = require(&p, true).unwrap_err();
        assert_eq!(e, PrivilegeError::NotAdmin { uid: 1000 });
        assert_eq!(e.exit_code(), 1);
        assert_eq!(require(&p, false), Ok(()));
    }

    #[test]
    fn unreadable_capabilities_are_a_system_error() {
        let p = FakePrivileges {
            uids: (0, 0),
            gids: (0, 0),
            admin: Err("no".into()),
        };
        assert_eq!(require(&p, true).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn cap_eff_is_read_from_a_status_file() {
        let status = "Name:\tmount.nfs-gds\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("CapEff:\tzz\n"), None);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("status");
        std::fs::write(&f, status).unwrap();
        let p = HostPrivileges {
            status_file: Some(f.clone()),
        };
        assert_eq!(p.has_sys_admin(), Ok(true));
        std::fs::write(&f, "CapEff:\t0000000000000000\n").unwrap();
        assert_eq!(p.has_sys_admin(), Ok(false));
        std::fs::write(&f, "Name: x\n").unwrap();
        assert!(p.has_sys_admin().is_err());
    }
}
