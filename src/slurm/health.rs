//! The node's health for Slurm, from the judge's verdicts: a pure function of what failed, at
//! which level, on which mount or module.
//!
//! `HealthCheckProgram` runs cluster-wide, on CPU nodes too, often all booted from one image: a
//! node that is not a GDS node ([`GdsNode`]) is [`Health::NotApplicable`] and is never drained. Otherwise a check failing at `enforce` makes
//! it [`Health::NotReady`], with the reason of the first such failure (the node's checks
//! first, then the mounts in the table's order); a check failing at `warn`, or one that could
//! not be proven, is a warning: logged, never drained.

use super::reason::DrainReason;
use crate::checks::CheckId;

/// What makes a node a GDS node, which the health check may drain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GdsNode {
    /// nvidia_fs is loaded, or its device nodes exist.
    pub driver: bool,
    /// The node declares a mount for GDS: one `mount.nfs-gds` made, an `nfs-gds` fstab line.
    pub declared_mount: bool,
    /// nvidia-fs is installed (its DKMS source).
    pub installed: bool,
    /// An NVIDIA GPU is on the PCI bus.
    pub gpu: bool,
}

impl GdsNode {
    /// The driver is there, or a mount declared for GDS, or nvidia-fs installed beside a GPU
    /// (where it should have loaded). An image shared with CPU nodes that carries nvidia-fs, a
    /// cluster-wide policy's `[[mount]]` table or a `proto=rdma` mount alone do not make a CPU
    /// node one.
    pub fn is_one(self) -> bool {
        self.driver || self.declared_mount || (self.installed && self.gpu)
    }
}

/// One failed (or unproven) check: on which mount point or module, whether its level refuses,
/// and what it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub check: CheckId,
    /// The mount point, or the module ([`super::reason::module_of`]).
    pub subject: String,
    /// Failed at `enforce`.
    pub enforced: bool,
    pub summary: String,
}

impl Finding {
    /// One line for a log: `CHECK SUBJECT: SUMMARY`.
    pub fn line(&self) -> String {
        format!("{} {}: {}", self.check, self.subject, self.summary)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Not a GDS node: nothing to judge, never drained.
    NotApplicable,
    Ready,
    /// Ready, with these findings to log.
    Warned(Vec<Finding>),
    /// A check at `enforce` failed: the first such finding, and every finding.
    NotReady {
        reason: DrainReason,
        first: Finding,
        all: Vec<Finding>,
    },
}

impl Health {
    /// The health of a node: `applicable` says it has a GDS stack or a mount declared for GDS;
    /// `findings` are every failed or unproven check, the node's first.
    pub fn of(applicable: bool, findings: Vec<Finding>) -> Health {
        if !applicable {
            return Health::NotApplicable;
        }
        match findings.iter().find(|f| f.enforced) {
            Some(first) => Health::NotReady {
                reason: DrainReason::new(first.check, &first.subject),
                first: first.clone(),
                all: findings,
            },
            None if findings.is_empty() => Health::Ready,
            None => Health::Warned(findings),
        }
    }

    pub fn is_not_ready(&self) -> bool {
        matches!(self, Health::NotReady { .. })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::checks::catalogue::{nvidia_fs_devices, rpcrdma_hooks, transport_trap};

    pub fn finding(check: CheckId, subject: &str, enforced: bool) -> Finding {
        Finding {
            check,
            subject: subject.into(),
            enforced,
            summary: "found wanting".into(),
        }
    }

    #[test]
    fn the_first_enforced_failure_is_the_reason_and_warnings_never_are() {
        let warn = finding(nvidia_fs_devices::ID, "nvidia_fs", false);
        let hooks = finding(rpcrdma_hooks::ID, "rpcrdma", true);
        let trap = finding(transport_trap::ID, "/mnt/gds", true);
        match Health::of(true, vec![warn.clone(), hooks.clone(), trap]) {
            Health::NotReady { reason, first, all } => {
                assert_eq!(reason.as_str(), "nfs-gds: rpcrdma-hooks rpcrdma");
                assert_eq!(first, hooks);
                assert_eq!(all.len(), 3);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            Health::of(true, vec![warn.clone()]),
            Health::Warned(vec![warn])
        );
        assert_eq!(Health::of(true, vec![]), Health::Ready);
    }

    #[test]
    fn a_cpu_node_from_a_shared_image_is_not_a_gds_node() {
        let none = GdsNode::default();
        assert!(!none.is_one());
        let shared_image = GdsNode {
            installed: true,
            ..none
        };
        assert!(!shared_image.is_one());
        for one in [
            GdsNode {
                driver: true,
                ..none
            },
            GdsNode {
                declared_mount: true,
                ..none
            },
            GdsNode {
                gpu: true,
                ..shared_image
            },
        ] {
            assert!(one.is_one(), "{one:?}");
        }
        assert!(!GdsNode { gpu: true, ..none }.is_one());
    }

    #[test]
    fn a_node_without_gds_is_not_applicable_whatever_failed() {
        let missing = finding(
            crate::checks::catalogue::nvidia_fs_loaded::ID,
            "nvidia_fs",
            true,
        );
        assert_eq!(Health::of(false, vec![missing]), Health::NotApplicable);
    }
}
