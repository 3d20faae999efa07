//! `nvidia-fs-devices`: nvidia_fs has its `/dev/nvidia-fs*` nodes, which cuFile opens.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("nvidia-fs-devices");

pub static CHECK: Check = Check {
    id: ID,
    doc: "`/dev/nvidia-fs*` nodes exist (skipped when nvidia_fs is not loaded)",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let nv = &facts.nvidia_fs;
    if !nv.loaded {
        return CheckResult::skip(id, "nvidia_fs is not loaded, so it has no device nodes");
    }
    if nv.devices.is_empty() {
        CheckResult::fail(
            id,
            "nvidia_fs is loaded but there is no /dev/nvidia-fs* node, so cuFile cannot open it",
        )
        .with("/dev/nvidia-fs*", "none")
        .remedy("check that devtmpfs/udev created the nodes (`ls -l /dev/nvidia-fs*`); on GPU Operator nodes make sure the nvidia-fs container runs and exposes them")
    } else {
        CheckResult::pass(
            id,
            format!(
                "{} device node(s), /dev/{} first",
                nv.devices.len(),
                nv.devices[0]
            ),
        )
        .with("/dev/nvidia-fs*", nv.devices.join(" "))
    }
}
