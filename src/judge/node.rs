//! The one node judge: the registry's node checks on the node's facts (the live registration
//! probe run first when asked for, or when the policy says so), under the policy's levels for the
//! node, with the fix each failing check points to. `check`, the agent, the container judge and
//! the Slurm commands judge the node through [`judge`]; the helper and `doctor` take the same
//! results from [`checks`] and judge them with what they add (the planned mount, the plan).
//!
//! Also here: what the kernel will do with the `nfs-gds` lines of fstab before any of them is
//! mounted ([`planned_lines`]), which `check` and `doctor` both judge with the node.

use crate::checks::asked::{Asked, AskedBy};
use crate::checks::catalogue::nconnect_kernel;
use crate::checks::{fix, registry, CheckResult};
use crate::host::kernel::KernelInfo;
use crate::host::mounts::fstab::FstabEntry;
use crate::host::HostFacts;
use crate::nfs::{NfsVersion, OptionDefaults};
use crate::policy::{MountPolicy, Policy};
use crate::system::System;
use crate::verdict::{self, Judgement};

/// How a caller asks for the node's checks.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The system the live registration probe opens the device through.
    pub system: &'a dyn System,
    /// The live registration probe, asked for by the caller (`--probe`); the policy may ask
    /// for it too.
    pub probe: bool,
    /// The kernel log the probe compares against, when the caller already read it.
    pub kernel_log: Option<&'a str>,
    /// Where each failing check's fix points ([`crate::checks::fix`]).
    pub pointer: &'static str,
}

impl<'a> Ask<'a> {
    /// As `check`, the agent and the gates ask: the probe (through `system`) when `probe` says,
    /// each fix pointing to `nfs-gds doctor`.
    pub fn new(system: &'a dyn System, probe: bool) -> Self {
        Ask {
            system,
            probe,
            kernel_log: None,
            pointer: fix::TO_DOCTOR,
        }
    }
}

/// The node checks on `facts` (the probe run first when `ask` or `levels` ask for it), each
/// pointing to `ask.pointer`.
pub fn checks(facts: &mut HostFacts, levels: &MountPolicy, ask: Ask) -> Vec<CheckResult> {
    let probe = levels.runs_probe(ask.probe);
    if probe {
        facts.run_probe(ask.system, ask.kernel_log.map(str::to_string));
    }
    registry::node_checks(facts, probe)
        .into_iter()
        .map(|r| r.with_pointer(ask.pointer))
        .collect()
}

/// The node's judgement under `policy`'s levels for the node, with `planned` (what the
/// `nfs-gds` lines of fstab will get, from [`planned_lines`]) judged beside the node checks.
pub fn judge(
    mut facts: HostFacts,
    policy: &Policy,
    ask: Ask,
    planned: Option<CheckResult>,
) -> (HostFacts, Judgement) {
    let levels = policy.for_node();
    let checks = checks(&mut facts, &levels, ask)
        .into_iter()
        .chain(planned.map(|r| r.with_pointer(ask.pointer)))
        .collect();
    (facts, verdict::judge(checks, &levels))
}

/// What the running kernel will do with the `nconnect=` of the `nfs-gds` lines of fstab, before
/// any of them is mounted (`nconnect-kernel`, each line at the version the helper mounts it
/// with: the one it names, else the policy's `[options] vers`, by
/// [`OptionDefaults::version_of`]); `None` without a line.
pub fn planned_lines(
    kernel: &KernelInfo,
    defaults: &OptionDefaults,
    entries: &[FstabEntry],
) -> Option<CheckResult> {
    if entries.is_empty() {
        return None;
    }
    let asks: Vec<(Asked, NfsVersion)> = entries
        .iter()
        .map(|e| {
            let version = defaults.version_of(e.options.iter().map(String::as_str));
            let asked = Asked::new(AskedBy::Fstab { line: e.line }, e.options.join(","));
            (asked, version)
        })
        .collect();
    let asks: Vec<(&Asked, NfsVersion)> = asks.iter().map(|(a, v)| (a, *v)).collect();
    Some(nconnect_kernel::judge(kernel, &asks))
}
