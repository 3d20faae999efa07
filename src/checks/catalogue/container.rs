//! `container`: when nfs-gds runs in a container (from evidence, never guessed), the container
//! sees what cuFile needs from the host: the `/dev/nvidia-fs*` nodes and `/run/udev`.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("container");

pub static CHECK: Check = Check {
    id: ID,
    doc: "in a container: `/dev/nvidia-fs*` and `/run/udev` are visible (advisory; skipped outside one)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let c = &facts.container;
    if !c.in_container() {
        return CheckResult::skip(id, "not in a container (no /.dockerenv, runtime cgroup or container= in PID 1's environment)");
    }
    let evidence = c.evidence.join("; ");
    let devices = &facts.nvidia_fs.devices;
    let mut missing = Vec::new();
    if devices.is_empty() {
        missing.push("no /dev/nvidia-fs* node");
    }
    if !c.run_udev {
        missing.push("no /run/udev");
    }
    let r = |r: CheckResult| {
        r.with("container", evidence.clone())
            .with(
                "/dev/nvidia-fs*",
                if devices.is_empty() {
                    "none".into()
                } else {
                    devices.join(" ")
                },
            )
            .with("/run/udev", if c.run_udev { "present" } else { "absent" })
    };
    if missing.is_empty() {
        r(CheckResult::pass(
            id,
            "in a container that sees /dev/nvidia-fs* and /run/udev",
        ))
    } else {
        r(CheckResult::warn(id, format!("in a container with {}: cuFile falls back to POSIX I/O here", missing.join(" and ")))
            .remedy("run the container with the nvidia-fs devices (`--device /dev/nvidia-fs0` …, or the GPU Operator's GDS support) and `-v /run/udev:/run/udev:ro`"))
    }
}
