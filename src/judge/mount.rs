//! The one judge of existing NFS mounts: whether a mount is meant for GDS, and the mount checks
//! `verify` runs on it, at the levels the policy sets for it. The agent, `doctor`, the container
//! judge and the Slurm commands all judge through [`MountJudge`], so one mount gets one verdict
//! whichever of them looks.
//!
//! Meant for GDS: the one decider of [`crate::policy::intent`] (the helper's record, a
//! `[[mount]]` table, an `nfs-gds` fstab line, `proto=rdma`), and last a container's annotation
//! that marks the volume on it ([`Intent::Annotation`]). The checks are the registry's mount
//! checks ([`registry::verify_mount`]) on the port [`expected_port`] says, with what the node
//! declares the mount asked for, each judged against the table narrowed to its server's
//! suspects ([`Suspects`]) so thousands of mounts are judged in linear time, under the levels of
//! the `[[mount]]` table that covers it (merged once per table), and with what NFS LOCALIO
//! could do to it ([`MountLocalio`], read once by the caller for the whole table).

use std::collections::HashSet;

use crate::checks::catalogue::trap_suspects::Suspects;
use crate::checks::registry::{self, Detail};
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::{Mount, MountTable};
use crate::nfs::ServerAddrs;
use crate::policy::intent::{expected_port, intent_of, rule_of, Declared};
use crate::policy::{MountPolicy, Policy};
use crate::verdict::{self, Judgement};

pub use crate::policy::intent::Intent;

/// Judges the mounts of one table under one policy, with what the node declares.
#[derive(Debug)]
pub struct MountJudge<'t, 'p> {
    table: &'t MountTable,
    declared: &'p Declared,
    policy: &'p Policy,
    /// Server names resolved for `[[mount]]` sources ([`crate::nfs::export_identity`]).
    addrs: &'p ServerAddrs<'p>,
    /// The node's LOCALIO facts and the kernel's own LOCALIO state of each mount.
    localio: &'p MountLocalio,
    covered: HashSet<u32>,
    suspects: Suspects<'t>,
    /// The levels under each `[[mount]]` table (the last: under none), merged once each.
    levels: Vec<Option<MountPolicy>>,
}

impl<'t, 'p> MountJudge<'t, 'p> {
    pub fn new(
        table: &'t MountTable,
        declared: &'p Declared,
        policy: &'p Policy,
        addrs: &'p ServerAddrs<'p>,
        localio: &'p MountLocalio,
    ) -> Self {
        MountJudge {
            table,
            declared,
            policy,
            addrs,
            localio,
            covered: table.stacked_over(),
            suspects: Suspects::new(table),
            levels: (0..=policy.mounts.len()).map(|_| None).collect(),
        }
    }

    /// Why `m` is meant for GDS, or `None` when it is not: the node's and the policy's word
    /// first; `annotated` says a container's annotation marks the volume on it.
    pub fn meant(&self, m: &Mount, annotated: bool) -> Option<Intent> {
        intent_of(m, self.declared, &self.policy.mounts, self.addrs)
            .or_else(|| (annotated && m.is_nfs()).then_some(Intent::Annotation))
    }

    /// Every mount applications see (not stacked over) that is meant for GDS, with why, in the
    /// table's order.
    pub fn meant_for_gds(&self) -> Vec<(&'t Mount, Intent)> {
        self.table
            .mounts
            .iter()
            .filter_map(|m| self.meant(m, false).map(|i| (m, i)))
            .filter(|(m, _)| !self.covered.contains(&m.info.mount_id))
            .collect()
    }

    /// The mount checks `verify` runs on `m`, judged at the levels of the first `[[mount]]`
    /// table that covers it (`doctor`, the container hook: every result is kept).
    pub fn judge(&mut self, m: &Mount) -> Judgement {
        self.judge_on(m, None)
    }

    /// [`MountJudge::judge`], on `port` when the caller names one (`verify --port`), else on
    /// the port the node declares for `m`.
    pub fn judge_on(&mut self, m: &Mount, port: Option<u16>) -> Judgement {
        let MountJudge {
            declared,
            policy,
            addrs,
            localio,
            suspects,
            levels,
            ..
        } = self;
        let rule = rule_of(m, declared, &policy.mounts, addrs);
        let under = levels[rule.unwrap_or(policy.mounts.len())]
            .get_or_insert_with(|| policy.for_rule(rule));
        let port = port.unwrap_or_else(|| expected_port(m, declared, policy.options.port));
        let results = registry::verify_mount(
            m,
            suspects.narrowed_for(m),
            port,
            &declared.asked(m),
            localio,
            Detail::Full,
        );
        verdict::judge(results, under)
    }

    /// [`MountJudge::judge`] for a caller that keeps nothing of a mount whose checks all pass
    /// (the agent, with thousands of good mounts): the checks first say only their status, and
    /// only a mount that is not all clear is judged in full; `None` when all passed (ready
    /// under any policy).
    pub fn problems(&mut self, m: &Mount) -> Option<Judgement> {
        let port = expected_port(m, self.declared, self.policy.options.port);
        let asked = self.declared.asked(m);
        let narrowed = self.suspects.narrowed_for(m);
        let statuses =
            registry::verify_mount(m, narrowed, port, &asked, self.localio, Detail::StatusOnly);
        if verdict::all_clear(&statuses) {
            return None;
        }
        Some(self.judge(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Verdict;
    use crate::policy::MountRule;
    use crate::testkit::table;

    const INFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
42 1 0:51 / /mnt/gds rw - nfs4 10.0.2.20:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
43 1 0:52 / /mnt/home rw - nfs4 10.0.0.9:/home rw,vers=4.2,proto=tcp,addr=10.0.0.9
44 1 0:53 / /mnt/local rw - tmpfs tmpfs rw
";

    #[test]
    fn an_annotation_marks_a_mount_nothing_else_declares_and_only_an_nfs_one() {
        let t = table(INFO, "");
        let policy = Policy::default();
        let declared = Declared::default();
        let addrs = ServerAddrs::blind();
        let localio = MountLocalio::without_localio();
        let judge = MountJudge::new(&t, &declared, &policy, &addrs, &localio);
        let home = t.by_id(43).unwrap();
        assert_eq!(judge.meant(home, false), None);
        assert_eq!(judge.meant(home, true), Some(Intent::Annotation));
        assert_eq!(judge.meant(t.by_id(44).unwrap(), true), None);
        // The node's word comes first.
        assert_eq!(
            judge.meant(t.by_id(42).unwrap(), true),
            Some(Intent::Options)
        );
        let meant: Vec<_> = judge
            .meant_for_gds()
            .into_iter()
            .map(|(m, _)| m.info.mount_id)
            .collect();
        assert_eq!(meant, [42]);
    }

    #[test]
    fn a_mount_is_judged_at_the_levels_of_the_rule_that_covers_it() {
        let t = table(INFO, "");
        let policy = Policy {
            mounts: vec![MountRule {
                source: Some("10.0.2.15:/export".into()),
                default: Some(crate::policy::Level::Warn),
                ..Default::default()
            }],
            ..Default::default()
        };
        let declared = Declared::default();
        let addrs = ServerAddrs::blind();
        let localio = MountLocalio::without_localio();
        let mut judge = MountJudge::new(&t, &declared, &policy, &addrs, &localio);
        let tcp = t.by_id(40).unwrap();
        let j = judge.judge(tcp);
        assert_eq!(j.verdict(), Verdict::ReadyWithWarnings, "{j:?}");
        // The same mount under the file's levels (enforce) is refused.
        let home = t.by_id(43).unwrap();
        let j = judge.problems(home).unwrap();
        assert_eq!(j.verdict(), Verdict::NotReady, "{j:?}");
    }
}
