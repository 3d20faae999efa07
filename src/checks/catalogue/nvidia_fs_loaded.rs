//! `nvidia-fs-loaded`: the GDS kernel driver `nvidia_fs` is loaded; without it every GPU read
//! over NFS goes through CPU bounce buffers.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("nvidia-fs-loaded");

pub static CHECK: Check = Check {
    id: ID,
    doc: "`/sys/module/nvidia_fs` exists",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let nv = &facts.nvidia_fs;
    if nv.loaded {
        let v = nv.version.as_deref().unwrap_or("unknown version");
        CheckResult::pass(id, format!("nvidia_fs {v} is loaded"))
            .with("/sys/module/nvidia_fs", "present")
    } else {
        CheckResult::fail(id, "nvidia_fs is not loaded: without it every GPU read over NFS goes through CPU bounce buffers")
            .with("/sys/module/nvidia_fs", "absent")
            .fix(Fix::NvidiaFs)
            .remedy("load it (`modprobe nvidia-fs`, from the nvidia-fs-dkms / nvidia-gds packages), or on Kubernetes enable `gds.enabled` in the GPU Operator ClusterPolicy".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;

    #[test]
    fn fails_where_nvidia_fs_is_not_loaded() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Fail, &["not loaded", "bounce buffers"]);
        assert_eq!(seen(&r, "/sys/module/nvidia_fs"), "absent");
        assert_eq!(r.fixes, vec![Fix::NvidiaFs]);
        assert!(remedy(&r).contains("modprobe nvidia-fs"));
    }

    #[test]
    fn passes_and_names_the_version() {
        let r = run(&HostFacts::builder()
            .with(|f| {
                f.nvidia_fs.loaded = true;
                f.nvidia_fs.version = Some("2.28.4".into());
            })
            .build());
        says(&r, Status::Pass, &["nvidia_fs 2.28.4 is loaded"]);
        assert_eq!(seen(&r, "/sys/module/nvidia_fs"), "present");
    }

    #[test]
    fn a_loaded_module_without_a_version_still_passes() {
        let r = run(&HostFacts::builder()
            .with(|f| f.nvidia_fs.loaded = true)
            .build());
        says(&r, Status::Pass, &["unknown version"]);
    }
}
