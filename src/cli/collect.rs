//! `nfs-gds collect -o FILE`: a support bundle that `doctor --root` can read elsewhere.

use std::path::PathBuf;

use clap::Args;

use super::{exit, CmdError, Ctx};
use crate::doctor::collect;

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Where to write the archive (gzip-compressed tar)
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

pub fn run(args: &CollectArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let (policy_path, policy) = ctx.policy_with_path()?;
    let runner = ctx.host.runner();
    let c = collect::collect(
        &ctx.host.root,
        &policy_path,
        &policy,
        runner.as_ref(),
        ctx.host.cufile_override().as_deref(),
        &args.output,
    )?;
    outln!(
        "nfs-gds collect: wrote {} ({} files, {} command outputs)",
        args.output.display(),
        c.files.len(),
        c.commands.len()
    );
    outln!(
        "unpack it with `mkdir bundle && tar -xzf {} -C bundle` and run `nfs-gds --root bundle doctor`",
        args.output.display()
    );
    Ok(exit::READY)
}
