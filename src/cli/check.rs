//! `nfs-gds check`: the node-level pre-mount checks, exactly as the mount helper runs them.

use clap::Args;

use super::{exit, CmdError, Ctx};
use crate::checks::{fix, registry, render, Report};
use crate::host::HostFacts;

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
    let mut facts = HostFacts::read(&ctx.root)?;
    if args.probe {
        facts.run_probe(None);
    }
    let checks = registry::node_checks(&facts, args.probe)
        .into_iter()
        .map(|r| r.with_pointer(fix::TO_DOCTOR))
        .collect();
    let report = Report::new(
        "check",
        &ctx.root.dir().display().to_string(),
        facts.kernel.release,
        None,
        checks,
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
