//! The policy for one mount: the file's layers merged with the mount's own options.
//!
//! Later layers win: the check's own default level < the file's `default` < its `[checks]` <
//! the first matching `[[mount]]` (`default`, then its `checks`) < the `gds_policy=` mount
//! option. A `default` (and `gds_policy=`) sets every check, except that it never makes a check
//! stricter than its own default level (an advisory `warn` check stays `warn` under `default =
//! "enforce"`); naming a check under `checks` sets exactly that level. The wait is the file's
//! `wait` < the rule's `wait` < `gds_wait=`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::model::{Backend, Policy};
use crate::checks::level::Level;
use crate::checks::{registry, CheckId};
use crate::nfs::{ServerAddrs, ShownExport};

/// What applies to one mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountPolicy {
    levels: BTreeMap<CheckId, Level>,
    pub wait: Duration,
    pub modprobe_rpcrdma: bool,
    pub probe: bool,
    pub backend: Backend,
    /// Index of the `[[mount]]` table that matched, for messages.
    pub rule: Option<usize>,
}

impl MountPolicy {
    /// Whether the live registration probe runs: when the command line asks for it or the
    /// policy says `probe = true`. The one answer for `check`, `doctor`, `provision`, the agent
    /// and the helper.
    pub fn runs_probe(&self, asked: bool) -> bool {
        asked || self.probe
    }

    pub fn level(&self, id: CheckId) -> Level {
        self.levels
            .get(&id)
            .copied()
            .unwrap_or_else(|| registry::get(id).default_level)
    }
}

impl Policy {
    /// The levels for the node as a whole (`check`, the agent, doctor's node checks): the file's
    /// `default` and `[checks]`, no `[[mount]]` table.
    pub fn for_node(&self) -> MountPolicy {
        self.merge(None, None, None)
    }

    /// Merges the layers for the mount of `export` on `target`.
    pub fn for_mount(
        &self,
        target: &Path,
        export: ShownExport,
        addrs: &ServerAddrs,
        option_level: Option<Level>,
        option_wait: Option<u64>,
    ) -> MountPolicy {
        self.merge(
            self.rule_for(target, export, addrs),
            option_level,
            option_wait,
        )
    }

    /// The index of the `[[mount]]` table that applies to the mount of `export` on `target`
    /// ([`MountRule::matches`](super::model::MountRule::matches)).
    pub fn rule_for(
        &self,
        target: &Path,
        export: ShownExport,
        addrs: &ServerAddrs,
    ) -> Option<usize> {
        self.mounts
            .iter()
            .position(|r| r.matches(target, export, addrs))
    }

    /// The levels under `[[mount]]` table `rule` (none: `None`), without per-mount options:
    /// [`Policy::for_mount`] of every mount that table applies to, so a caller judging
    /// thousands of mounts merges once per table.
    pub fn for_rule(&self, rule: Option<usize>) -> MountPolicy {
        self.merge(rule, None, None)
    }

    fn merge(
        &self,
        rule_index: Option<usize>,
        option_level: Option<Level>,
        option_wait: Option<u64>,
    ) -> MountPolicy {
        let rule = rule_index.map(|i| &self.mounts[i]);
        let levels = registry::all()
            .iter()
            .map(|c| {
                // A default (the file's, a rule's, `gds_policy=`) can loosen a check's own
                // level but not tighten it; naming the check sets its level exactly.
                let loosened = |by: Level| c.default_level.max(by);
                let mut level = loosened(self.default);
                if let Some(l) = self.checks.get(&c.id) {
                    level = *l;
                }
                if let Some(r) = rule {
                    if let Some(l) = r.default {
                        level = loosened(l);
                    }
                    if let Some(l) = r.checks.get(&c.id) {
                        level = *l;
                    }
                }
                if let Some(l) = option_level {
                    level = loosened(l);
                }
                (c.id, level)
            })
            .collect();
        let wait = option_wait
            .or(rule.and_then(|r| r.wait))
            .unwrap_or(self.wait);
        MountPolicy {
            levels,
            wait: Duration::from_secs(wait),
            modprobe_rpcrdma: self.modprobe_rpcrdma,
            probe: self.probe,
            backend: self.backend,
            rule: rule_index,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::{
        nvidia_fs_devices, nvidia_fs_loaded, rpcrdma_fresh, transport_trap,
    };
    use crate::policy::file::parse;

    fn policy() -> Policy {
        parse(
            r#"
default = "enforce"
wait = 5
[checks]
nvidia-fs-devices = "warn"
rpcrdma-fresh = "off"

[[mount]]
target = "/mnt/scratch"
default = "warn"
wait = 60
[mount.checks]
transport-trap = "enforce"

[[mount]]
target = "/mnt/scratch"
default = "off"
"#,
        )
        .unwrap()
    }

    #[test]
    fn the_file_default_and_per_check_levels_apply_to_unmatched_mounts() {
        let m = policy().for_mount(
            Path::new("/mnt/data"),
            ShownExport::written("srv:/x"),
            &ServerAddrs::blind(),
            None,
            None,
        );
        assert_eq!(m.level(nvidia_fs_loaded::ID), Level::Enforce);
        assert_eq!(m.level(nvidia_fs_devices::ID), Level::Warn);
        assert_eq!(m.level(rpcrdma_fresh::ID), Level::Off);
        assert_eq!(m.wait, Duration::from_secs(5));
        assert_eq!(m.rule, None);
        assert!(m.modprobe_rpcrdma);
    }

    #[test]
    fn the_first_matching_mount_rule_overrides_the_file() {
        let m = policy().for_mount(
            Path::new("/mnt/scratch/"),
            ShownExport::written("srv:/x"),
            &ServerAddrs::blind(),
            None,
            None,
        );
        assert_eq!(m.rule, Some(0));
        assert_eq!(m.level(nvidia_fs_loaded::ID), Level::Warn);
        assert_eq!(
            m.level(rpcrdma_fresh::ID),
            Level::Warn,
            "the rule's default beats the file's per-check level"
        );
        assert_eq!(m.level(transport_trap::ID), Level::Enforce);
        assert_eq!(m.wait, Duration::from_secs(60));
    }

    #[test]
    fn mount_options_win_over_everything() {
        let m = policy().for_mount(
            Path::new("/mnt/scratch"),
            ShownExport::written("srv:/x"),
            &ServerAddrs::blind(),
            Some(Level::Enforce),
            Some(0),
        );
        for c in registry::all() {
            assert_eq!(m.level(c.id), c.default_level, "{}", c.id);
        }
        assert_eq!(m.wait, Duration::ZERO);
    }

    #[test]
    fn the_builtin_policy_keeps_each_default_without_waiting() {
        let m = Policy::default().for_mount(
            Path::new("/x"),
            ShownExport::written("s:/x"),
            &ServerAddrs::blind(),
            None,
            None,
        );
        for c in registry::all() {
            assert_eq!(m.level(c.id), c.default_level, "{}", c.id);
            // Advisory checks declare `warn`; none is off unless a policy says so.
            assert_ne!(c.default_level, Level::Off, "{}", c.id);
        }
        assert_eq!(
            m.level(crate::checks::catalogue::nvidia_fs_loaded::ID),
            Level::Enforce
        );
        assert_eq!(m.wait, Duration::ZERO);
        assert_eq!(m.backend, Backend::Auto);
    }
}
