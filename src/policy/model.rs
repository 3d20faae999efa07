//! The policy as nfs-gds holds it: the levels of the checks, the `[options]` the helper mounts
//! with, the `[[mount]]` tables, the gates' `[oci-hook]` and `[slurm]` answers, and the rules
//! that check a value of each. [`super::file`] reads the TOML into it; [`super::effective`]
//! merges it with one mount's own options.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checks::level::Level;
use crate::checks::CheckId;
use crate::nfs::export_identity::{self, ServerAddrs, ShownExport};
use crate::nfs::{NfsSource, OptionDefaults};

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
