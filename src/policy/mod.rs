//! The policy: how strictly each check is enforced, per node and per mount.
//!
//! Read from `/etc/nfs-gds/nfs-gds.toml` (below `--root`; `--config` / `NFS_GDS_CONFIG` name
//! another file). A missing default file means the built-in defaults: every check `enforce`,
//! `vers=4.2`, `port=20049`, load rpcrdma first, no wait, `mount.nfs` when installed. The file is
//! refused unless only root can change it ([`trust`]), since it can turn enforcement off.
//! [`file`](mod@file) is the TOML schema; [`effective`] merges it with one mount's own options.

pub mod effective;
pub mod file;
pub mod intent;
pub mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::checks::level::{BadLevel, Level};
use crate::checks::CheckId;
use crate::host::Root;
use crate::nfs::export_identity::{self, ServerAddrs, ShownExport};
use crate::nfs::{NfsSource, OptionDefaults};

pub use effective::MountPolicy;
pub use trust::{Trust, TrustError};

/// Where the policy lives on a host.
pub const DEFAULT_PATH: &str = "/etc/nfs-gds/nfs-gds.toml";

/// The longest wait for the pre-checks a policy or `gds_wait=` may ask for: one hour. A mount
/// that is not ready by then will not become ready by waiting, and an unbounded number would
/// hold mount(8) (and the boot) for good.
pub const MAX_WAIT_SECS: u64 = 3600;

/// How the helper mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// `mount.nfs` when it is installed, else mount(2).
    #[default]
    Auto,
    /// Always exec `mount.nfs` (nfs-utils / nfs-common); fail when it is missing.
    MountNfs,
    /// Call mount(2) directly: for hosts without nfs-utils. No retries, no nfsmount.conf.
    Syscall,
}

/// What the container hook (`nfs-gds oci-hook`) does with a container it cannot judge: its
/// state is unreadable, its bundle or `config.json` missing or hostile, the mount table or the
/// node unreadable. (`[oci-hook] when-unsure` in the file.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WhenUnsure {
    /// Let it start and log why, unless the state's annotations mark it for GDS: then refuse.
    #[default]
    StartUnlessMarked,
    /// Let it start and log why, marked or not.
    Start,
    /// Refuse it.
    Refuse,
}

/// What the Slurm prolog (`nfs-gds slurm prolog`) does when it cannot judge a job that wants
/// GDS: the policy file or the node unreadable. (`[slurm] when-unsure` in the file.) A typo in
/// the policy must not drain every node, so the job runs by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobWhenUnsure {
    /// Let the job start and log why.
    #[default]
    Start,
    /// Fail the prolog: Slurm drains the node and requeues the job.
    Refuse,
}

/// The node feature a Slurm job asks for with `--constraint` when it wants GDS over NFS.
pub const SLURM_FEATURE: &str = "gds_nfs";

/// `[slurm]`: the Slurm health check and prolog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmPolicy {
    /// The feature (`Feature=` in slurm.conf, `--constraint` of a job) that marks a job wanting
    /// GDS.
    pub feature: String,
    pub when_unsure: JobWhenUnsure,
}

impl Default for SlurmPolicy {
    fn default() -> Self {
        SlurmPolicy {
            feature: SLURM_FEATURE.to_string(),
            when_unsure: JobWhenUnsure::default(),
        }
    }
}

/// Whether `name` can be a Slurm node feature as a job names it in `--constraint`: letters,
/// digits, `_`, `-` and `.`; the operators of a constraint (`&|,*[]()!:`) and spaces cannot be
/// part of one.
pub fn check_slurm_feature(name: &str) -> Result<(), String> {
    if !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        Ok(())
    } else {
        Err(format!(
            "feature {name:?} is not a Slurm feature name: 1 to 64 letters, digits, `_`, `-` or `.`"
        ))
    }
}

/// One `[[mount]]` table: overrides for the mounts it matches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MountRule {
    /// Matches the mount point exactly (compared by path components, so a trailing slash does
    /// not matter).
    pub target: Option<PathBuf>,
    /// Matches the export (`server:/export`) and every directory below it: as written, or by
    /// server identity ([`crate::nfs::export_identity`]), since the kernel shows a mount that
    /// shares an NFS superblock under that superblock's first name.
    pub source: Option<String>,
    pub default: Option<Level>,
    pub checks: BTreeMap<CheckId, Level>,
    pub wait: Option<u64>,
}

impl MountRule {
    /// Whether this table covers the mount of `export` on `target`: every criterion it has
    /// matches. The one rule every command asks (the helper, `verify`, `doctor`, the agent,
    /// `policy show`). The export is compared as written first, then by server identity (the
    /// rule's server resolved through `addrs`, against the server and `addr=` the kernel shows).
    pub fn matches(&self, target: &Path, export: ShownExport, addrs: &ServerAddrs) -> bool {
        self.target.as_deref().is_none_or(|t| t == target)
            && self.source.as_deref().is_none_or(|s| {
                export_covers(s, export.source)
                    || NfsSource::parse(s)
                        .is_ok_and(|rule| export_identity::export_covers(&rule, export, addrs))
            })
    }
}

/// Whether `target` can be a `[[mount]]` target (or `policy show --target`): an absolute path,
/// as a mount point is in fstab and the mount table; a relative one would match nothing.
pub fn check_rule_target(target: &Path) -> Result<(), String> {
    if target.is_absolute() {
        Ok(())
    } else {
        Err(format!(
            "target {:?} must be an absolute path, as a mount point is in fstab",
            target.display()
        ))
    }
}

/// Whether `source` can be a `[[mount]]` source (or `policy show --source`): SERVER:/EXPORT as
/// mount sources are written, since [`export_covers`] compares them as written.
pub fn check_rule_source(source: &str) -> Result<(), String> {
    match crate::nfs::NfsSource::parse(source) {
        Ok(s) if s.path.starts_with('/') => Ok(()),
        Ok(_) => Err(format!(
            "source {source:?} must be SERVER:/EXPORT, with the export's absolute path"
        )),
        Err(e) => Err(format!("{e}: a [[mount]] source is SERVER:/EXPORT")),
    }
}

/// Whether the export `source` is `rule` or below it (`srv:/a` covers `srv:/a` and `srv:/a/b`,
/// not `srv:/ab`; `srv:/` covers every export of `srv`): csi-driver-nfs mounts one
/// subdirectory of a share per volume. Both are compared as written, server included: the
/// cheap first test of [`MountRule::matches`].
pub fn export_covers(rule: &str, source: &str) -> bool {
    let rule = if rule.ends_with('/') && !rule.ends_with(":/") {
        rule.trim_end_matches('/')
    } else {
        rule
    };
    match source.strip_prefix(rule) {
        Some("") => true,
        Some(rest) => rest.starts_with('/') || rule.ends_with('/'),
        None => false,
    }
}

/// The validated policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub default: Level,
    pub checks: BTreeMap<CheckId, Level>,
    pub modprobe_rpcrdma: bool,
    /// Run the live registration probe (`nvfs-registration`) among the pre-checks.
    pub probe: bool,
    /// Seconds to wait for the pre-checks to pass, at most [`MAX_WAIT_SECS`].
    pub wait: u64,
    pub backend: Backend,
    pub options: OptionDefaults,
    pub mounts: Vec<MountRule>,
    /// The container hook's answer when it cannot tell.
    pub oci_hook_when_unsure: WhenUnsure,
    pub slurm: SlurmPolicy,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            default: Level::Enforce,
            checks: BTreeMap::new(),
            modprobe_rpcrdma: true,
            probe: false,
            wait: 0,
            backend: Backend::Auto,
            options: OptionDefaults::default(),
            mounts: Vec::new(),
            oci_hook_when_unsure: WhenUnsure::default(),
            slurm: SlurmPolicy::default(),
        }
    }
}

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
