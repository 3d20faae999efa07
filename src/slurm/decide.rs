//! What the health check does with slurmctld: a pure function of the node's [`Health`], whether
//! nfs-gds drained this node (its state file, [`super::state`]) and, only when that decides
//! anything, what `scontrol show node` said.
//!
//! A node that is ready (or warned, or not a GDS node) and that nfs-gds did not drain costs
//! slurmctld nothing: [`needs_node_state`] says no, and nothing is asked. Otherwise the node's
//! state is read first, right before acting on it:
//!
//! | health | drained by nfs-gds | slurmctld shows | action |
//! |---|---|---|---|
//! | ready, warned, not applicable | no | (not asked) | nothing |
//! | ready, warned, not applicable | yes | reason `nfs-gds:…` | resume, forget |
//! | ready, warned, not applicable | yes | held for another reason | keep theirs, forget |
//! | ready, warned, not applicable | yes | not held | forget |
//! | not ready | either | not held | drain, remember |
//! | not ready | either | held, reason `nfs-gds:…` | keep ours, remember |
//! | not ready | either | held for another reason | keep theirs (and forget) |

use super::health::Health;
use super::reason::DrainReason;
use super::scontrol::NodeState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing to ask or do.
    Nothing,
    /// `scontrol update … State=DRAIN Reason=…`, then remember that nfs-gds drained it.
    Drain(DrainReason),
    /// Already drained by nfs-gds: keep it so, and remember (a state file lost at reboot is
    /// written again).
    KeepOurs,
    /// Drained or down for someone else's reason: keep it, say so, and forget any drain of
    /// ours (theirs replaced it).
    KeepTheirs { reason: Option<String> },
    /// `scontrol update … State=RESUME`, then forget.
    Resume,
    /// Nfs-gds's drain is gone (someone resumed the node): only forget it.
    Forget,
}

/// Whether `scontrol show node` must be asked before deciding.
pub fn needs_node_state(health: &Health, drained_by_us: bool) -> bool {
    health.is_not_ready() || drained_by_us
}

/// The action; `node` is what `scontrol show node` said, `None` when it was not asked (only
/// when [`needs_node_state`] said no).
pub fn decide(health: &Health, drained_by_us: bool, node: Option<&NodeState>) -> Action {
    let Some(node) = node.filter(|_| needs_node_state(health, drained_by_us)) else {
        return Action::Nothing;
    };
    let theirs = || Action::KeepTheirs {
        reason: node.reason.clone(),
    };
    match health {
        Health::NotReady { reason, .. } => {
            if !node.is_held() {
                Action::Drain(reason.clone())
            } else if node.reason_is_ours() {
                Action::KeepOurs
            } else {
                theirs()
            }
        }
        Health::Ready | Health::Warned(_) | Health::NotApplicable => {
            if node.reason_is_ours() {
                Action::Resume
            } else if node.is_held() {
                theirs()
            } else {
                Action::Forget
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::{nvidia_fs_devices, rpcrdma_hooks};
    use crate::slurm::health::tests::finding;

    fn node(state: &str, reason: Option<&str>) -> NodeState {
        NodeState {
            state: state.into(),
            reason: reason.map(Into::into),
        }
    }

    fn not_ready() -> Health {
        Health::of(true, vec![finding(rpcrdma_hooks::ID, "rpcrdma", true)])
    }

    fn healthy() -> [Health; 3] {
        [
            Health::Ready,
            Health::Warned(vec![finding(nvidia_fs_devices::ID, "nvidia_fs", false)]),
            Health::NotApplicable,
        ]
    }

    #[test]
    fn a_healthy_node_nfs_gds_did_not_drain_asks_nothing() {
        for h in healthy() {
            assert!(!needs_node_state(&h, false), "{h:?}");
            assert_eq!(decide(&h, false, None), Action::Nothing);
        }
    }

    #[test]
    fn a_healthy_node_is_resumed_only_from_a_drain_of_ours() {
        let ours = node("IDLE+DRAIN", Some("nfs-gds: rpcrdma-hooks rpcrdma"));
        let admin = node("IDLE+DRAIN", Some("bad DIMM"));
        let down = node("DOWN*", Some("Not responding"));
        let idle = node("IDLE", None);
        for h in healthy() {
            assert!(needs_node_state(&h, true));
            assert_eq!(decide(&h, true, Some(&ours)), Action::Resume, "{h:?}");
            assert_eq!(
                decide(&h, true, Some(&admin)),
                Action::KeepTheirs {
                    reason: Some("bad DIMM".into())
                }
            );
            assert_eq!(
                decide(&h, true, Some(&down)),
                Action::KeepTheirs {
                    reason: Some("Not responding".into())
                }
            );
            assert_eq!(decide(&h, true, Some(&idle)), Action::Forget);
            // Without a drain of ours on record, even a reason of ours is left alone (NHC's
            // or a copy's), and nothing is asked.
            assert_eq!(decide(&h, false, Some(&ours)), Action::Nothing);
        }
    }

    #[test]
    fn a_node_that_is_not_ready_is_drained_unless_someone_holds_it() {
        let h = not_ready();
        for drained_by_us in [false, true] {
            assert!(needs_node_state(&h, drained_by_us));
            assert_eq!(
                decide(&h, drained_by_us, Some(&node("MIXED", None))),
                Action::Drain(DrainReason::new(rpcrdma_hooks::ID, "rpcrdma"))
            );
            assert_eq!(
                decide(
                    &h,
                    drained_by_us,
                    Some(&node(
                        "IDLE+DRAIN",
                        Some("nfs-gds: transport-trap /mnt/gds")
                    ))
                ),
                Action::KeepOurs
            );
            assert_eq!(
                decide(&h, drained_by_us, Some(&node("DOWN+DRAIN", Some("reboot")))),
                Action::KeepTheirs {
                    reason: Some("reboot".into())
                }
            );
        }
    }
}
