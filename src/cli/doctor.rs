//! `nfs-gds doctor`: what is wrong on this node, and the commands that fix it.

use clap::Args;

use super::context::{CmdError, Ctx};
use super::report::Format;
use crate::doctor;
use crate::host::HostFacts;
use crate::policy::intent::read_declared_strict;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub probe: super::shared::ProbeArgs,
    #[command(flatten)]
    pub output: super::shared::OutputArgs,
    /// Print the diagnosis as Markdown, for pasting into a ticket
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
}

/// Doctor's diagnosis of the host, with what the host handle chose (the system) and the policy
/// (its levels and whether the live probe runs, as for `check`); `provision` acts on the same
/// diagnosis.
pub fn diagnose_host(ctx: &Ctx, probe: bool) -> Result<doctor::Diagnosis, CmdError> {
    let facts = HostFacts::read(&ctx.host.root)?;
    let system = ctx.host.system();
    let policy = ctx.policy()?;
    let declared = read_declared_strict(&ctx.host.root)?;
    Ok(doctor::diagnose(
        &facts,
        doctor::Inputs {
            system,
            policy: &policy,
            probe: policy.for_node().runs_probe(probe),
            declared: &declared,
        },
    )?)
}

impl DoctorArgs {
    /// How the diagnosis is shown.
    pub fn format(&self) -> Format {
        if self.markdown {
            Format::Markdown
        } else {
            self.output.format()
        }
    }
}
