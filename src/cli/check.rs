//! `nfs-gds check`: the node-level pre-mount checks, exactly as the mount helper runs them —
//! under the same policy (levels, `probe`), so its verdict and exit code are those of
//! `mount.nfs-gds -f` for the node — and, for the `nfs-gds` lines of fstab, what the running
//! kernel will do with their options (`nconnect-kernel`), before any of them is mounted.

use clap::Args;

use super::context::{CmdError, Ctx};
use crate::checks::Report;
use crate::host::mounts::fstab::read_fstab;
use crate::host::HostFacts;
use crate::judge::node::{self, Ask};
use crate::policy::Policy;
use crate::verdict::Judgement;

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub output: super::shared::OutputArgs,
    #[command(flatten)]
    pub probe: super::shared::ProbeArgs,
}

/// The node checks as the helper runs them, and what the `nfs-gds` lines of fstab will get,
/// judged under `policy`'s levels for the node: the probe runs when asked for or when the policy
/// says so.
pub fn judge_node(
    ctx: &Ctx,
    policy: &Policy,
    probe: bool,
) -> Result<(HostFacts, Judgement), CmdError> {
    let facts = HostFacts::read(&ctx.host.root)?;
    let planned = node::planned_lines(&facts.kernel, &policy.options, &read_fstab(&facts.root)?);
    Ok(node::judge(
        facts,
        policy,
        Ask::new(ctx.host.system(), probe),
        planned,
    ))
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
