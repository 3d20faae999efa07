//! `nfs-gds provision [--apply]`: doctor's plan as a dry run, or its safe subset applied.

use std::os::unix::fs::MetadataExt;

use clap::Args;

use super::context::{CmdError, Ctx};
use super::exit;
use crate::doctor::{provision, usage::RpcrdmaUsage};
use crate::host::HostFacts;

#[derive(Debug, Args)]
pub struct ProvisionArgs {
    /// Run the steps marked as safe (module loads, DKMS rebuild, depmod, initramfs, reload of an
    /// unused rpcrdma); without it, only print the plan
    #[arg(long)]
    pub apply: bool,
}

fn running_as_root() -> bool {
    // /proc/self is owned by the effective uid of the process reading it.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

pub fn run(args: &ProvisionArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let d = super::doctor::diagnose_host(ctx, false)?;
    let system = ctx.host.system();
    if d.plan.is_empty() {
        outln!("nfs-gds provision: nothing to do ({})", d.headline);
        return Ok(exit::READY);
    }
    if !args.apply {
        outln!("nfs-gds provision: dry run; `--apply` runs the steps marked [auto]\n");
        for (i, s) in d.plan.iter().enumerate() {
            let tag = if s.is_manual() {
                "[manual]"
            } else {
                "[auto]  "
            };
            outln!("{tag} {}. {}", i + 1, s.title);
            for c in &s.commands {
                for l in c.lines() {
                    outln!("           {l}");
                }
            }
        }
        return Ok(exit::of(d.verdict));
    }
    if !ctx.host.may_change() {
        return Err(format!(
            "--apply changes this machine and cannot act on --root {}",
            ctx.host.root.dir().display()
        )
        .into());
    }
    if !running_as_root() {
        return Err("--apply loads modules and rebuilds packages: run it as root".into());
    }
    // Re-read right before acting: mounts may have appeared since the plan was made.
    let usage = RpcrdmaUsage::read(&HostFacts::read(&ctx.host.root)?)?;
    let applied = provision::apply(&d.plan, system, &usage, &mut std::io::stdout())?;
    outln!(
        "nfs-gds provision: ran {} command(s)",
        applied.commands.len()
    );
    let manual: Vec<&str> = d
        .plan
        .iter()
        .filter(|s| s.is_manual())
        .map(|s| s.title.as_str())
        .collect();
    if !manual.is_empty() {
        outln!("still to do by hand: {}", manual.join("; "));
    }
    outln!("run `nfs-gds check` to see the result");
    Ok(exit::READY)
}
