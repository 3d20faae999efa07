//! The container hook's counters: how many container starts `nfs-gds oci-hook` refused, and how
//! many it let start with a warning, since boot. Runtimes drop a hook's stderr, so each refusal
//! and warning is counted here (and logged to the system log) for the agent to export as
//! `nfs_gds_oci_hook_refusals_total` and `nfs_gds_oci_hook_warnings_total`; and the annotation
//! problems it found (an unknown `nfs-gds/` key, a listed volume the container does not have, a
//! `nfs-gds/gds` value neither yes nor no),
//! as `nfs_gds_hook_annotation_problems_total{kind}`.
//!
//! One small JSON file, `run/nfs-gds/oci-hook.counts` below the root, in nfs-gds's own run
//! directory (refused when another user could write there). Hooks of containers started at once
//! add under a lock on the directory and replace the file atomically, so no count is lost and a
//! reader never sees half a file. `/run` starts empty at boot: the counters start from zero, as
//! Prometheus counters may.

use std::io;

use serde::{Deserialize, Serialize};

use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
use crate::host::Root;

/// The file's name in [`RUN_DIR`].
pub const FILE: &str = "oci-hook.counts";

/// More than any counts file holds.
const MAX_BYTES: u64 = 4096;

/// The hook's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookCounts {
    pub refusals: u64,
    pub warnings: u64,
    #[serde(default, skip_serializing_if = "ProblemCounts::is_zero")]
    pub annotation_problems: ProblemCounts,
}

/// Annotation problems by kind (the `kind` label, [`crate::oci::AnnotationProblem::kind`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemCounts {
    #[serde(default)]
    pub unknown_key: u64,
    #[serde(default)]
    pub no_such_volume: u64,
    /// Left out of the file while zero: the file reads as it did before the kind was counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bad_value: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ProblemCounts {
    fn is_zero(&self) -> bool {
        *self == ProblemCounts::default()
    }

    /// Each kind with its label value.
    pub fn by_kind(&self) -> [(&'static str, u64); 3] {
        [
            (crate::oci::UNKNOWN_KEY, self.unknown_key),
            (crate::oci::NO_SUCH_VOLUME, self.no_such_volume),
            (crate::oci::BAD_VALUE, self.bad_value),
        ]
    }
}

/// The counts below the root: zero when the hook never counted anything. A file that cannot be
/// read or parsed is logged and read as zero (it never stops an agent pass).
pub fn read(root: &Root) -> HookCounts {
    let rel = format!("{RUN_DIR}/{FILE}");
    match root.read_bytes(&rel) {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!("ignoring {}: {e}", root.join(&rel).display());
            HookCounts::default()
        }),
        Ok(None) => HookCounts::default(),
        Err(e) => {
            tracing::warn!("{e}");
            HookCounts::default()
        }
    }
}

/// Adds `refusals` and `warnings` to the counts below the root; returns the new counts.
pub fn add(root: &Root, refusals: u64, warnings: u64) -> io::Result<HookCounts> {
    update(root, |c| {
        c.refusals = c.refusals.saturating_add(refusals);
        c.warnings = c.warnings.saturating_add(warnings);
    })
}

/// Counts one annotation problem of each of `kinds`; returns the new counts.
pub fn add_problems(root: &Root, kinds: &[&str]) -> io::Result<HookCounts> {
    update(root, |c| {
        for kind in kinds {
            let n = match *kind {
                crate::oci::UNKNOWN_KEY => &mut c.annotation_problems.unknown_key,
                crate::oci::BAD_VALUE => &mut c.annotation_problems.bad_value,
                _ => &mut c.annotation_problems.no_such_volume,
            };
            *n = n.saturating_add(1);
        }
    })
}

/// Changes the counts below the root under the directory's lock; returns the new counts.
fn update(root: &Root, change: impl FnOnce(&mut HookCounts)) -> io::Result<HookCounts> {
    let dir = OutDir::open(root, RUN_DIR, Trust::Own)
        .map_err(|e| io::Error::other(format!("{}: {e}", root.join(RUN_DIR).display())))?;
    let Some(_held) = dir.lock()? else {
        return Err(io::Error::other(format!(
            "{}: locked by another process for more than a second",
            dir.path().display()
        )));
    };
    let mut counts: HookCounts = dir
        .read_small(FILE, MAX_BYTES)?
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    change(&mut counts);
    let text = serde_json::to_vec(&counts).map_err(io::Error::other)?;
    dir.write_atomic(FILE, 0o644, |w| w.write_all(&text))?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_across_calls_and_start_from_zero() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert_eq!(read(&root), HookCounts::default());
        add(&root, 1, 0).unwrap();
        let c = add(&root, 2, 3).unwrap();
        assert_eq!(
            c,
            HookCounts {
                refusals: 3,
                warnings: 3,
                ..HookCounts::default()
            }
        );
        assert_eq!(read(&root), c);
    }

    #[test]
    fn hooks_counting_at_once_lose_no_count() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10 {
                        add(&root, 1, 1).unwrap();
                    }
                });
            }
        });
        assert_eq!(
            read(&root),
            HookCounts {
                refusals: 80,
                warnings: 80,
                ..HookCounts::default()
            }
        );
    }

    #[test]
    fn a_garbled_file_reads_as_zero_and_is_counted_over() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join(RUN_DIR)).unwrap();
        std::fs::write(dir.path().join(RUN_DIR).join(FILE), "garbage").unwrap();
        assert_eq!(read(&root), HookCounts::default());
        assert_eq!(add(&root, 1, 0).unwrap().refusals, 1);
    }

    #[test]
    fn annotation_problems_are_counted_by_kind_beside_an_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join(RUN_DIR)).unwrap();
        std::fs::write(
            dir.path().join(RUN_DIR).join(FILE),
            r#"{"refusals":2,"warnings":1}"#,
        )
        .unwrap();
        let c = add_problems(
            &root,
            &[crate::oci::UNKNOWN_KEY, crate::oci::NO_SUCH_VOLUME],
        )
        .unwrap();
        let c2 = add_problems(&root, &[crate::oci::UNKNOWN_KEY, crate::oci::BAD_VALUE]).unwrap();
        assert_eq!((c.refusals, c.warnings), (2, 1));
        assert_eq!(
            c2.annotation_problems,
            ProblemCounts {
                unknown_key: 2,
                no_such_volume: 1,
                bad_value: 1
            }
        );
    }
}
