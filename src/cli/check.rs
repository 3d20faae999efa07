//! `nfs-gds check`: the node-level pre-mount checks, exactly as the mount helper runs them —
//! under the same policy (levels, `probe`), so its verdict and exit code are those of
//! `mount.nfs-gds -f` for the node.

use clap::Args;

use super::{exit, CmdError, Ctx};
use crate::checks::{fix, registry, render};
use crate::host::HostFacts;
use crate::policy::Policy;
use crate::verdict::{self, Judgement};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the result as JSON (schema in the README)
    #[arg(long)]
    pub json: bool,
    /// Also run the live registration probe: open /dev/nvidia-fs0 and see whether rpcrdma
    /// registers its hooks with nvidia-fs (the close may block about 1 s)
    #[arg(long)]
    pub probe: bool,
}

/// The node checks as the helper runs them, judged under `policy`'s levels for the node: the
/// probe runs when asked for or when the policy says so. `check` and the agent both say this.
pub fn judge_node(
    ctx: &Ctx,
    policy: &Policy,
    probe: bool,
) -> Result<(HostFacts, Judgement), CmdError> {
    let facts = HostFacts::read(&ctx.host.root)?;
    Ok(judge_facts(facts, policy, probe))
}

/// The node checks on facts already read, under `policy` (the probe run first when asked for
/// here or by the policy).
pub fn judge_facts(mut facts: HostFacts, policy: &Policy, probe: bool) -> (HostFacts, Judgement) {
    let levels = policy.for_node();
    let probe = levels.runs_probe(probe);
    if probe {
        facts.run_probe(None);
    }
    let checks = registry::node_checks(&facts, probe)
        .into_iter()
        .map(|r| r.with_pointer(fix::TO_DOCTOR))
        .collect();
    (facts, verdict::judge(checks, &levels))
}

pub fn run(args: &CheckArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let (facts, judged) = judge_node(ctx, &ctx.policy()?, args.probe)?;
    let report = judged.into_report(
        "check",
        &ctx.host.root.dir().display().to_string(),
        facts.kernel.release,
        None,
    );
    if args.json {
        out!("{}", render::json(&report));
    } else {
        out!("{}", render::text(&report, ctx.style));
    }
    Ok(exit::of(report.verdict))
}
