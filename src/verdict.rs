//! Check results under a policy: the verdict. Which refuse the mount (or make `check` say not
//! ready), which only warn, and how to say so in a journal. Every command judges through here,
//! so `nfs-gds check` and `mount.nfs-gds -f` give the same verdict for the same node.
//!
//! A failing check at `enforce` refuses; at `warn` it is printed and the mount goes on; at `off`
//! it is not run (shown as skipped). A check that could not be proven (`warn` / `unknown`
//! status) never refuses, but is printed: loud, not blocking. Every problem is one line —
//! `journalctl -u mnt-data.mount` shows one entry per line — carrying the check id, the level,
//! what was found, the evidence and the fix.

use crate::checks::{CheckId, CheckResult, Report, Status, Verdict};
use crate::policy::{Level, MountPolicy};

/// Where to look next, printed under every refusal.
pub const DOCTOR_HINT: &str =
    "run `nfs-gds doctor` for the full diagnosis and the fix for this node's stack";

/// One result with the level it was judged at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub result: CheckResult,
    pub level: Level,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Judgement {
    /// Every result, `off` ones replaced by a skip.
    pub results: Vec<CheckResult>,
    /// Failed at `enforce`.
    pub refusals: Vec<Judged>,
    /// Failed at `warn`, or not proven at `enforce`/`warn`.
    pub warnings: Vec<Judged>,
}

impl Judgement {
    pub fn refused(&self) -> bool {
        !self.refusals.is_empty()
    }

    pub fn refusing_ids(&self) -> Vec<CheckId> {
        self.refusals.iter().map(|j| j.result.id).collect()
    }

    /// The verdict: not ready when something refuses, ready with warnings when anything
    /// failed at `warn` or could not be proven.
    pub fn verdict(&self) -> Verdict {
        if self.refused() {
            Verdict::NotReady
        } else if self.warnings.is_empty() {
            Verdict::Ready
        } else {
            Verdict::ReadyWithWarnings
        }
    }

    /// The results as a report, with this judgement's verdict.
    pub fn into_report(
        self,
        command: &str,
        root: &str,
        kernel_release: Option<String>,
        subject: Option<String>,
    ) -> Report {
        let verdict = self.verdict();
        Report {
            verdict,
            ..Report::new(command, root, kernel_release, subject, self.results)
        }
    }

    /// How many warnings are failures let through by `warn`.
    pub fn failed_warnings(&self) -> usize {
        self.warnings
            .iter()
            .filter(|j| j.result.status == Status::Fail)
            .count()
    }
}

/// Whether [`judge`] gives these results [`Verdict::Ready`] under any policy: every one passed
/// or was skipped (a level only ever makes a failure, warning or unknown count, and `off` makes
/// a skip). Lets a caller with thousands of plainly good mounts skip judging them.
pub fn all_clear(results: &[CheckResult]) -> bool {
    results
        .iter()
        .all(|r| matches!(r.status, Status::Pass | Status::Skip))
}

pub fn judge(results: Vec<CheckResult>, policy: &MountPolicy) -> Judgement {
    let mut j = Judgement::default();
    for mut r in results {
        let level = policy.level(r.id);
        if level == Level::Off {
            let mut off = CheckResult::skip(r.id, "turned off by policy");
            off.level = Some(level);
            j.results.push(off);
            continue;
        }
        r.level = Some(level);
        match (r.status, level) {
            (Status::Fail, Level::Enforce) => j.refusals.push(Judged {
                result: r.clone(),
                level,
            }),
            (Status::Fail | Status::Warn | Status::Unknown, _) => j.warnings.push(Judged {
                result: r.clone(),
                level,
            }),
            _ => {}
        }
        j.results.push(r);
    }
    j
}

/// One check as one line: `FAIL transport-trap [enforce]: … | evidence: … | fix: …`.
pub fn journal_line(j: &Judged) -> String {
    let r = &j.result;
    let mut line = format!(
        "{} {} [{}]: {}",
        r.status.as_str().to_uppercase(),
        r.id,
        j.level,
        r.summary
    );
    if !r.evidence.is_empty() {
        let ev: Vec<String> = r
            .evidence
            .iter()
            .map(|e| format!("{}: {}", e.what, e.seen.replace(['\t', '\n'], " ")))
            .collect();
        line.push_str(" | evidence: ");
        line.push_str(&ev.join("; "));
    }
    if let Some(fix) = &r.remedy {
        line.push_str(" | fix: ");
        line.push_str(fix);
    }
    line
}

/// The per-check lines: refusals first, then warnings.
pub fn journal_lines(j: &Judgement) -> Vec<String> {
    j.refusals
        .iter()
        .chain(&j.warnings)
        .map(journal_line)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::file::parse;
    use std::path::Path;

    fn policy(text: &str) -> MountPolicy {
        parse(text).unwrap().for_mount(
            Path::new("/mnt/data"),
            crate::nfs::ShownExport::written("s:/x"),
            &crate::nfs::ServerAddrs::blind(),
            None,
            None,
        )
    }

    fn results() -> Vec<CheckResult> {
        vec![
            CheckResult::pass(crate::checks::catalogue::nvidia_fs_loaded::ID, "loaded"),
            CheckResult::fail(crate::checks::catalogue::rpcrdma_hooks::ID, "no hooks")
                .with("file", "/lib/modules/x/rpcrdma.ko")
                .remedy("install mlnx-nfsrdma"),
            CheckResult::warn(crate::checks::catalogue::rpcrdma_fresh::ID, "cannot tell"),
            CheckResult::fail(
                crate::checks::catalogue::transport_trap::ID,
                "tcp mount exists",
            ),
        ]
    }

    #[test]
    fn all_clear_results_are_ready_under_every_policy_and_only_they() {
        use crate::checks::catalogue::{mount_options, mount_transport, transport_trap};
        let policies = [
            "",
            "default = \"enforce\"\n",
            "default = \"warn\"\n",
            "default = \"off\"\n",
            "[checks]\ntransport-trap = \"off\"\nmount-options = \"warn\"\n",
        ];
        let statuses = [
            Status::Pass,
            Status::Skip,
            Status::Warn,
            Status::Unknown,
            Status::Fail,
        ];
        for a in statuses {
            for b in statuses {
                let results = vec![
                    CheckResult::new(transport_trap::ID, a, "a"),
                    CheckResult::new(mount_transport::ID, b, "b"),
                    CheckResult::pass(mount_options::ID, "c"),
                ];
                let clear = all_clear(&results);
                assert_eq!(clear, [a, b].iter().all(|s| *s <= Status::Pass));
                for p in policies {
                    let v = judge(results.clone(), &policy(p)).verdict();
                    if clear {
                        assert_eq!(v, Verdict::Ready, "{a:?} {b:?} under {p:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn enforce_refuses_warn_warns_off_skips() {
        let j = judge(
            results(),
            &policy("[checks]\ntransport-trap = \"warn\"\nrpcrdma-fresh = \"off\"\n"),
        );
        assert!(j.refused());
        assert_eq!(
            j.refusing_ids(),
            [crate::checks::catalogue::rpcrdma_hooks::ID]
        );
        assert_eq!(j.warnings.len(), 1);
        assert_eq!(
            j.warnings[0].result.id,
            crate::checks::catalogue::transport_trap::ID
        );
        assert_eq!(j.failed_warnings(), 1);
        let fresh = j
            .results
            .iter()
            .find(|r| r.id == crate::checks::catalogue::rpcrdma_fresh::ID)
            .unwrap();
        assert_eq!(fresh.status, Status::Skip);
        assert_eq!(j.results.len(), 4);
    }

    #[test]
    fn unproven_checks_never_refuse() {
        let j = judge(results(), &policy("default = \"enforce\"\n"));
        assert_eq!(
            j.refusing_ids(),
            [
                crate::checks::catalogue::rpcrdma_hooks::ID,
                crate::checks::catalogue::transport_trap::ID
            ]
        );
        assert_eq!(j.warnings.len(), 1);
        assert_eq!(j.failed_warnings(), 0);
        let j = judge(results(), &policy("default = \"off\"\n"));
        assert!(!j.refused() && j.warnings.is_empty());
    }

    #[test]
    fn one_line_per_check_with_evidence_and_fix() {
        let j = judge(results(), &policy(""));
        let lines = journal_lines(&j);
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            "FAIL rpcrdma-hooks [enforce]: no hooks | evidence: file: /lib/modules/x/rpcrdma.ko | fix: install mlnx-nfsrdma"
        );
        assert_eq!(lines[1], "FAIL transport-trap [enforce]: tcp mount exists");
        assert_eq!(lines[2], "WARN rpcrdma-fresh [enforce]: cannot tell");
        assert!(lines.iter().all(|l| !l.contains('\n')));
    }
}
