//! Whether a policy file may be believed: only its owner may write it, and the owner is root.
//!
//! The policy can turn enforcement off, so a file (or its directory) that anyone but root can
//! change is refused, as sshd refuses a writable `authorized_keys`. Symlinks are followed and the
//! real file and its real directory are checked. Tests, and fixture trees under `--root`, name
//! the owners they trust instead of root ([`Trust::for_tree`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The owners whose files are believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    owners: Vec<u32>,
}

impl Trust {
    /// Only root (uid 0).
    pub fn root_only() -> Self {
        Trust { owners: vec![0] }
    }

    pub fn owners(owners: Vec<u32>) -> Self {
        Trust { owners }
    }

    /// Below a tree other than `/`: root, and the owner of the tree's top directory — a tree
    /// someone built for themselves is theirs to configure (it controls nothing else).
    pub fn for_tree(dir: &std::path::Path) -> Self {
        let mut owners = vec![0];
        if let Ok(m) = std::fs::metadata(dir) {
            owners.push(m.uid());
        }
        Trust { owners }
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self
            .owners
            .iter()
            .map(|u| {
                if *u == 0 {
                    "root".to_string()
                } else {
                    format!("uid {u}")
                }
            })
            .collect();
        names.join(" or ")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{}: {source}", path.display())]
    Stat {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is owned by uid {uid}, not {expected}: refusing it, because whoever can write it can turn enforcement off (chown root: {})", path.display(), path.display())]
    Owner {
        path: PathBuf,
        uid: u32,
        expected: String,
    },
    #[error("{} is writable by {who} (mode {mode:04o}): refusing it, because whoever can write it can turn enforcement off (chmod go-w {})", path.display(), path.display())]
    Writable {
        path: PathBuf,
        mode: u32,
        who: &'static str,
    },
}

fn check_one(path: &Path, trust: &Trust) -> Result<(), TrustError> {
    let m = std::fs::metadata(path).map_err(|source| TrustError::Stat {
        path: path.to_owned(),
        source,
    })?;
    if !trust.owners.contains(&m.uid()) {
        return Err(TrustError::Owner {
            path: path.to_owned(),
            uid: m.uid(),
            expected: trust.describe(),
        });
    }
    let mode = m.mode() & 0o7777;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "its group and everyone",
        (true, false) => "its group",
        (false, true) => "everyone",
        (false, false) => return Ok(()),
    };
    Err(TrustError::Writable {
        path: path.to_owned(),
        mode,
        who,
    })
}

/// Checks the file and the directory that holds it.
pub fn check(path: &Path, trust: &Trust) -> Result<(), TrustError> {
    let real = std::fs::canonicalize(path).map_err(|source| TrustError::Stat {
        path: path.to_owned(),
        source,
    })?;
    check_one(&real, trust)?;
    if let Some(dir) = real.parent() {
        check_one(dir, trust)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn me() -> Trust {
        Trust::owners(vec![nix::unistd::getuid().as_raw()])
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_file_in_a_private_dir_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let f = dir.path().join("nfs-gds.toml");
        std::fs::write(&f, "").unwrap();
        chmod(&f, 0o644);
        check(&f, &me()).unwrap();
    }

    #[test]
    fn group_or_world_writable_files_and_dirs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let f = dir.path().join("nfs-gds.toml");
        std::fs::write(&f, "").unwrap();
        for (mode, who) in [
            (0o664, "its group"),
            (0o646, "everyone"),
            (0o666, "its group and everyone"),
        ] {
            chmod(&f, mode);
            let e = check(&f, &me()).unwrap_err();
            assert!(
                matches!(&e, TrustError::Writable { who: w, .. } if *w == who),
                "{e}"
            );
            assert!(e.to_string().contains("chmod go-w"), "{e}");
        }
        chmod(&f, 0o644);
        chmod(dir.path(), 0o777);
        let e = check(&f, &me()).unwrap_err();
        assert!(
            matches!(&e, TrustError::Writable { path, .. } if path == &std::fs::canonicalize(dir.path()).unwrap()),
            "{e}"
        );
    }

    #[test]
    fn a_file_owned_by_someone_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("nfs-gds.toml");
        std::fs::write(&f, "").unwrap();
        let stranger = Trust::owners(vec![nix::unistd::getuid().as_raw().wrapping_add(4242)]);
        let e = check(&f, &stranger).unwrap_err();
        assert!(matches!(e, TrustError::Owner { .. }), "{e}");
        assert!(e.to_string().contains("chown root:"), "{e}");
    }

    #[test]
    fn symlinks_are_judged_by_their_target() {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let real = open.join("real.toml");
        std::fs::write(&real, "").unwrap();
        chmod(&real, 0o644);
        let link = dir.path().join("nfs-gds.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(
            check(&link, &me()).is_err(),
            "the real directory is world-writable"
        );
    }

    #[test]
    fn fixture_roots_trust_their_owner() {
        let dir = tempfile::tempdir().unwrap();
        let t = Trust::for_tree(dir.path());
        assert!(t.owners.contains(&nix::unistd::getuid().as_raw()));
    }
}
