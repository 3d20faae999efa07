//! `pcie-acs`: nvidia-fs saw no ACS-enabled PCIe bridge (`/proc/driver/nvidia-fs/bridges`). With
//! ACS on a switch, P2P DMA between a NIC and a GPU under it detours through the root complex.
//! Advisory: some platforms need ACS for stability.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("pcie-acs");

pub static CHECK: Check = Check {
    id: ID,
    doc: "`/proc/driver/nvidia-fs/bridges` lists no ACS-enabled bridge (advisory; skipped when nvidia_fs does not publish it)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    match &facts.nvfs_topology.acs_bridges {
        None => CheckResult::skip(id, absent(facts, "bridges")),
        Some(b) if b.is_empty() => CheckResult::pass(id, "nvidia-fs saw no ACS-enabled bridge")
            .with("/proc/driver/nvidia-fs/bridges", "empty"),
        Some(b) => CheckResult::warn(
            id,
            format!("{} PCIe bridge(s) have ACS enabled, so P2P DMA under them goes through the root complex", b.len()),
        )
        .with("/proc/driver/nvidia-fs/bridges", b.join(" "))
        .fix(Fix::AcsOff)
        .remedy("disable ACS on these bridges in the BIOS, or at each boot with `setpci -s BDF ECAP_ACS+0x6.w=0000`; keep it if the platform needs it for stability"),
    }
}

fn absent(facts: &HostFacts, file: &str) -> String {
    if facts.nvidia_fs.loaded {
        format!("nvidia_fs publishes no /proc/driver/nvidia-fs/{file}")
    } else {
        "nvidia_fs is not loaded".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;

    fn bridges(b: Option<&[&str]>) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.nvidia_fs.loaded = true;
                f.nvfs_topology.acs_bridges = b.map(|b| b.iter().map(|s| s.to_string()).collect());
            })
            .build()
    }

    #[test]
    fn passes_without_acs_bridges() {
        let r = run(&bridges(Some(&[])));
        says(&r, Status::Pass, &["no ACS-enabled bridge"]);
        assert_eq!(seen(&r, "/proc/driver/nvidia-fs/bridges"), "empty");
    }

    #[test]
    fn warns_of_acs_bridges() {
        let r = run(&bridges(Some(&["0000:3a:00.0", "0000:5d:00.0"])));
        says(&r, Status::Warn, &["2 PCIe bridge(s) have ACS enabled"]);
        assert_eq!(
            seen(&r, "/proc/driver/nvidia-fs/bridges"),
            "0000:3a:00.0 0000:5d:00.0"
        );
        assert_eq!(r.fixes, vec![Fix::AcsOff]);
        assert!(remedy(&r).contains("setpci"));
    }

    #[test]
    fn skips_without_the_file_and_says_why() {
        says(
            &run(&bridges(None)),
            Status::Skip,
            &["publishes no /proc/driver/nvidia-fs/bridges"],
        );
        says(
            &run(&HostFacts::builder().build()),
            Status::Skip,
            &["nvidia_fs is not loaded"],
        );
    }
}
