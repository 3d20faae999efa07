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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;

    fn loaded_with(devices: &[&str]) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.nvidia_fs.loaded = true;
                f.nvidia_fs.devices = devices.iter().map(|d| d.to_string()).collect();
            })
            .build()
    }

    #[test]
    fn skips_while_nvidia_fs_is_not_loaded() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["not loaded"]);
        assert!(r.evidence.is_empty(), "{r:?}");
    }

    #[test]
    fn fails_a_loaded_module_without_nodes() {
        let r = run(&loaded_with(&[]));
        says(
            &r,
            Status::Fail,
            &["no /dev/nvidia-fs* node", "cuFile cannot open"],
        );
        assert_eq!(seen(&r, "/dev/nvidia-fs*"), "none");
        assert!(remedy(&r).contains("udev"));
    }

    #[test]
    fn passes_and_lists_the_nodes() {
        let r = run(&loaded_with(&["nvidia-fs0", "nvidia-fs1"]));
        says(
            &r,
            Status::Pass,
            &["2 device node(s)", "/dev/nvidia-fs0 first"],
        );
        assert_eq!(seen(&r, "/dev/nvidia-fs*"), "nvidia-fs0 nvidia-fs1");
    }
}
