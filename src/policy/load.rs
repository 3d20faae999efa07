//! Finding and reading the policy file: the default path below the root or the one named,
//! read only through the trust check, parsed, and every error named with its file, line and
//! column.

use std::path::{Path, PathBuf};

use super::file;
use super::model::Policy;
use super::trust::{self, Trust, TrustError};
use crate::host::Root;

/// Where the policy lives on a host.
pub const DEFAULT_PATH: &str = "/etc/nfs-gds/nfs-gds.toml";

/// Why the policy could not be used. Always names the file; parse errors name line and column.
/// The file is only ever read through the trust check ([`trust::read`]), so a failed read is an
/// [`Untrusted`](PolicyError::Untrusted) error that names the path and the system's reason.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{}: no such policy file", path.display())]
    Missing { path: PathBuf },
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(transparent)]
    Untrusted(#[from] TrustError),
}

/// The policy file for a root: the default path below it, or an explicitly named file.
pub fn path_for(root: &Root, explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.join(DEFAULT_PATH))
}

/// The policy as every command loads it: the file named by `--config` / `NFS_GDS_CONFIG`, else
/// the default path below the root, trusted only if root alone can change it. Returns the path
/// it came from, for messages.
pub fn load_for(
    root: &Root,
    explicit: Option<&Path>,
    trust: &Trust,
) -> Result<(PathBuf, Policy), PolicyError> {
    let path = path_for(root, explicit);
    let policy = load(&path, explicit.is_some(), trust)?;
    Ok((path, policy))
}

/// Loads the policy. A missing file is the built-in default unless it was named explicitly.
pub fn load(path: &Path, explicit: bool, trust: &Trust) -> Result<Policy, PolicyError> {
    // The bytes parsed are those read from the descriptor whose owner, mode and directories
    // were checked: nothing is read before the check, nothing can be swapped in after it.
    let read = if explicit {
        trust::read
    } else {
        trust::read_confined
    };
    let text = match read(path, trust) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() && path.symlink_metadata().is_err() => {
            if !explicit {
                tracing::info!(
                    "policy: {} does not exist; the built-in defaults apply",
                    crate::escape::escape_control(&path.display().to_string())
                );
            }
            return if explicit {
                Err(PolicyError::Missing {
                    path: path.to_owned(),
                })
            } else {
                Ok(Policy::default())
            };
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!(
        "policy: read {}",
        crate::escape::escape_control(&path.display().to_string())
    );
    parse_bytes(path, text)
}

/// Parses a policy file's bytes; errors name `path`, line and column.
pub fn parse_bytes(path: &Path, text: Vec<u8>) -> Result<Policy, PolicyError> {
    let text = String::from_utf8(text).map_err(|e| PolicyError::Parse {
        path: path.to_owned(),
        line: 1,
        column: 1,
        message: format!("not UTF-8 text: {e}"),
    })?;
    file::parse(&text).map_err(|e| first_of_all(path, &text, e))
}

/// The error to stop on: the first in the file (the parser may meet a later one first), and
/// when there are more, how many and the command that lists them.
fn first_of_all(path: &Path, text: &str, met: file::ParseError) -> PolicyError {
    let all = file::all_errors(text);
    let more = all.len().saturating_sub(1);
    let first = all.into_iter().next().unwrap_or(met);
    let message = match more {
        0 => first.message,
        n => format!(
            "{} (and {n} more error{}: `nfs-gds policy check {}` lists them all)",
            first.message,
            if n == 1 { "" } else { "s" },
            path.display()
        ),
    };
    PolicyError::Parse {
        path: path.to_owned(),
        line: first.line,
        column: first.column,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs::{ServerAddrs, ShownExport};
    use crate::policy::model::*;
    use crate::policy::Level;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn levels_parse() {
        assert_eq!("warn".parse::<Level>(), Ok(Level::Warn));
        assert_eq!("off".parse::<Level>(), Ok(Level::Off));
        assert_eq!("enforce".parse::<Level>(), Ok(Level::Enforce));
        assert!("Enforce".parse::<Level>().is_err());
    }

    #[test]
    fn rules_match_on_every_given_criterion() {
        let r = MountRule {
            target: Some("/mnt/data/".into()),
            ..Default::default()
        };
        assert!(r.matches(
            Path::new("/mnt/data"),
            ShownExport::written("srv:/x"),
            &ServerAddrs::blind()
        ));
        assert!(!r.matches(
            Path::new("/mnt/other"),
            ShownExport::written("srv:/x"),
            &ServerAddrs::blind()
        ));
        let r = MountRule {
            target: Some("/mnt/data".into()),
            source: Some("srv:/x".into()),
            ..Default::default()
        };
        assert!(r.matches(
            Path::new("/mnt/data"),
            ShownExport::written("srv:/x"),
            &ServerAddrs::blind()
        ));
        assert!(!r.matches(
            Path::new("/mnt/data"),
            ShownExport::written("srv:/y"),
            &ServerAddrs::blind()
        ));
        // A source covers the directories below its export, never a look-alike name.
        assert!(r.matches(
            Path::new("/mnt/data"),
            ShownExport::written("srv:/x/pvc-1"),
            &ServerAddrs::blind()
        ));
        assert!(!r.matches(
            Path::new("/mnt/data"),
            ShownExport::written("srv:/xy"),
            &ServerAddrs::blind()
        ));
    }

    #[test]
    fn exports_cover_themselves_and_what_is_below() {
        assert!(export_covers("filer:/datasets", "filer:/datasets"));
        assert!(export_covers("filer:/datasets", "filer:/datasets/pvc-1"));
        assert!(export_covers("filer:/datasets/", "filer:/datasets/pvc-1"));
        assert!(!export_covers("filer:/datasets", "filer:/datasetsX"));
        assert!(export_covers("filer:/", "filer:/anything"));
        assert!(!export_covers("filer:/", "filer2:/anything"));
    }

    fn trusted_here() -> Trust {
        Trust::owners(vec![nix::unistd::getuid().as_raw()])
    }

    #[test]
    fn a_missing_default_file_is_the_builtin_policy() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nfs-gds.toml");
        assert_eq!(load(&p, false, &trusted_here()).unwrap(), Policy::default());
        let e = load(&p, true, &trusted_here()).unwrap_err();
        assert!(matches!(e, PolicyError::Missing { .. }), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nfs-gds.toml");
        std::fs::write(
            &p,
            "default = \"warn\"\n\n[checks]\nno-such-check = \"off\"\n",
        )
        .unwrap();
        let e = load(&p, true, &trusted_here()).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}:4:1: unknown check id `no-such-check`",
                p.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn the_default_policy_of_a_bundle_cannot_link_out_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.toml");
        std::fs::write(&outside, "default = \"off\"\n").unwrap();
        let root = Root::new(dir.path().join("bundle"));
        let p = path_for(&root, None);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &p).unwrap();
        let tree = Trust::for_tree(&root);
        let e = load(&p, false, &tree).unwrap_err();
        assert!(
            matches!(e, PolicyError::Untrusted(TrustError::OutsideRoot { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("outside the root"), "{e}");
        // Named on the command line, the same link is the user's to follow.
        assert_eq!(load(&p, true, &tree).unwrap().default, Level::Off);
    }

    #[test]
    fn a_fifo_policy_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nfs-gds.toml");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = load(&p, true, &trusted_here()).unwrap_err().to_string();
        assert!(e.contains("is a FIFO, not a regular file"), "{e}");
    }

    #[test]
    fn a_writable_file_is_refused_before_it_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nfs-gds.toml");
        std::fs::write(&p, "default = \"off\"\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = load(&p, true, &trusted_here()).unwrap_err();
        assert!(matches!(e, PolicyError::Untrusted(_)), "{e}");
    }

    fn set_mode(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A symlink flipped between a trusted file and one in a world-writable directory: the
    /// bytes returned are always those of a file that passed the check.
    #[test]
    fn a_swapped_symlink_never_gives_unchecked_policy() {
        let dir = tempfile::tempdir().unwrap();
        set_mode(dir.path(), 0o755);
        let good = dir.path().join("good.toml");
        std::fs::write(&good, "default = \"enforce\"\n").unwrap();
        set_mode(&good, 0o644);
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        set_mode(&open, 0o777);
        let bad = open.join("bad.toml");
        std::fs::write(&bad, "default = \"off\"\n").unwrap();
        set_mode(&bad, 0o644);
        let link = dir.path().join("nfs-gds.toml");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flipper = {
            let (stop, dir, good, bad, link) =
                (stop.clone(), dir.path().to_owned(), good, bad, link.clone());
            std::thread::spawn(move || {
                let tmp = dir.join("tmp.lnk");
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let to = if n.is_multiple_of(2) { &bad } else { &good };
                    let _ = std::fs::remove_file(&tmp);
                    std::os::unix::fs::symlink(to, &tmp).unwrap();
                    std::fs::rename(&tmp, &link).unwrap();
                    n += 1;
                }
                n
            })
        };
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..3000 {
            match load(&link, true, &trusted_here()) {
                Ok(policy) => {
                    assert_eq!(
                        policy.default,
                        Level::Enforce,
                        "unchecked bytes were parsed"
                    );
                    accepted += 1;
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let flips = flipper.join().unwrap();
        assert!(
            flips > 10 && accepted > 0 && refused > 0,
            "{flips} {accepted} {refused}"
        );
    }
}
