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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;

    fn in_container(devices: &[&str], run_udev: bool) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.container.evidence = vec!["/.dockerenv exists".into()];
                f.container.run_udev = run_udev;
                f.nvidia_fs.devices = devices.iter().map(|d| d.to_string()).collect();
            })
            .build()
    }

    #[test]
    fn skips_outside_a_container() {
        says(
            &run(&HostFacts::builder().build()),
            Status::Skip,
            &["not in a container"],
        );
    }

    #[test]
    fn passes_a_container_that_sees_what_cufile_needs() {
        let r = run(&in_container(&["nvidia-fs0"], true));
        says(&r, Status::Pass, &["sees /dev/nvidia-fs* and /run/udev"]);
        assert_eq!(seen(&r, "container"), "/.dockerenv exists");
        assert_eq!(seen(&r, "/dev/nvidia-fs*"), "nvidia-fs0");
        assert_eq!(seen(&r, "/run/udev"), "present");
    }

    #[test]
    fn warns_of_what_the_container_lacks() {
        let r = run(&in_container(&[], false));
        says(
            &r,
            Status::Warn,
            &["no /dev/nvidia-fs* node and no /run/udev", "POSIX I/O"],
        );
        assert_eq!(seen(&r, "/dev/nvidia-fs*"), "none");
        assert_eq!(seen(&r, "/run/udev"), "absent");
        assert!(remedy(&r).contains("/run/udev:/run/udev:ro"));
    }
}
