//! `nfs-gds check`: the node-level pre-mount checks, exactly as the mount helper runs them —
//! under the same policy (levels, `probe`), so its verdict and exit code are those of
//! `mount.nfs-gds -f` for the node.

use clap::Args;

use super::{exit, CmdError, Ctx};
use crate::checks::{fix, registry, render};
use crate::host::HostFacts;
use crate::verdict;

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

pub fn run(args: &CheckArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let policy = ctx.policy()?.for_node();
    let probe = args.probe || policy.probe;
    let mut facts = HostFacts::read(&ctx.host.root)?;
    if probe {
        facts.run_probe(None);
    }
    let checks = registry::node_checks(&facts, probe)
        .into_iter()
        .map(|r| r.with_pointer(fix::TO_DOCTOR))
        .collect();
    let report = verdict::judge(checks, &policy).into_report(
        "check",
        &ctx.host.root.dir().display().to_string(),
        facts.kernel.release,
        None,
    );
    if args.json {
        print!("{}", render::json(&report));
    } else {
        print!("{}", render::text(&report, ctx.style));
    }
    Ok(if report.verdict.is_ready() {
        exit::READY
    } else {
        exit::NOT_READY
    })
}
