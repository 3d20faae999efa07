//! `nfs-gds check`: the node-level pre-mount checks, exactly as the mount helper runs them —
//! under the same policy (levels, `probe`), so its verdict and exit code are those of
//! `mount.nfs-gds -f` for the node — and, for the `nfs-gds` lines of fstab, what the running
//! kernel will do with their options (`nconnect-kernel`), before any of them is mounted.

use clap::Args;

use super::{CmdError, Ctx};
use crate::checks::{fix, registry, CheckResult, Report};
use crate::doctor::fstab::{nconnect_before_mount, parse_nfs_gds_entries};
use crate::host::HostFacts;
use crate::policy::Policy;
use crate::verdict::{self, Judgement};

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub output: super::shared::OutputArgs,
    #[command(flatten)]
    pub probe: super::shared::ProbeArgs,
}

/// The node checks as the helper runs them, judged under `policy`'s levels for the node: the
/// probe runs when asked for or when the policy says so. `check` and the agent both say this.
pub fn judge_node(
    ctx: &Ctx,
    policy: &Policy,
    probe: bool,
) -> Result<(HostFacts, Judgement), CmdError> {
    let facts = HostFacts::read(&ctx.host.root)?;
    let planned = fstab_lines(&facts, policy)?;
    Ok(judge_with(facts, policy, probe, planned))
}

/// The node checks on facts already read, under `policy` (the probe run first when asked for
/// here or by the policy).
pub fn judge_facts(facts: HostFacts, policy: &Policy, probe: bool) -> (HostFacts, Judgement) {
    judge_with(facts, policy, probe, Vec::new())
}

/// The node checks and `planned` (what the `nfs-gds` fstab lines will get), under `policy`.
fn judge_with(
    mut facts: HostFacts,
    policy: &Policy,
    probe: bool,
    planned: Vec<CheckResult>,
) -> (HostFacts, Judgement) {
    let levels = policy.for_node();
    let probe = levels.runs_probe(probe);
    if probe {
        facts.run_probe(None);
    }
    let checks = registry::node_checks(&facts, probe)
        .into_iter()
        .chain(planned)
        .map(|r| r.with_pointer(fix::TO_DOCTOR))
        .collect();
    (facts, verdict::judge(checks, &levels))
}

/// What the running kernel will do with the options of the `nfs-gds` lines of fstab, before any
/// of them is mounted (`nconnect-kernel`, at the version `policy` has the helper mount them
/// with); nothing when fstab has no such line.
fn fstab_lines(facts: &HostFacts, policy: &Policy) -> Result<Vec<CheckResult>, CmdError> {
    let text = facts.root.read_text_lossy("etc/fstab")?.unwrap_or_default();
    let entries = parse_nfs_gds_entries(&text);
    Ok(
        nconnect_before_mount(&facts.kernel, &policy.options, &entries)
            .into_iter()
            .collect(),
    )
}

/// The node's report, for [`super::report::show`].
pub fn report(args: &CheckArgs, ctx: &Ctx) -> Result<Report, CmdError> {
    let (facts, judged) = judge_node(ctx, &ctx.policy()?, args.probe.probe)?;
    Ok(judged.into_report(
        "check",
        &ctx.host.root.dir().display().to_string(),
        facts.kernel.release,
        None,
    ))
}
