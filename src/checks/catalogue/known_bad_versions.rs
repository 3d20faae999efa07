//! `known-bad-versions`: no nvidia-fs release on the node (the loaded module, or a source tree
//! DKMS builds from) is on the known-bad list, whose every entry names its public source.
//! Advisory: the list knows releases, not this node's workload.

use crate::checks::check::{Check, Scope};
use crate::checks::known_bad;
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("known-bad-versions");

pub static CHECK: Check = Check {
    id: ID,
    doc: "no nvidia-fs release present (loaded, or in `/usr/src` for DKMS) is on the known-bad list (advisory)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let nv = &facts.nvidia_fs;
    let mut present: Vec<(String, &str)> = Vec::new();
    if let Some(v) = &nv.version {
        present.push((v.clone(), "loaded"));
    }
    for v in &nv.source_versions {
        if !present.iter().any(|(p, _)| p == v) {
            present.push((v.clone(), "/usr/src"));
        }
    }
    if present.is_empty() {
        return CheckResult::skip(id, "no nvidia-fs release is loaded or installed for DKMS");
    }
    let seen = present
        .iter()
        .map(|(v, w)| format!("{v} ({w})"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut hits = Vec::new();
    for (v, _) in &present {
        for e in known_bad::matching("nvidia-fs", v) {
            hits.push(format!("nvidia-fs {v}: {} [{}]", e.problem, e.source));
        }
    }
    if hits.is_empty() {
        return CheckResult::pass(id, format!("nvidia-fs {seen}: not on the known-bad list"))
            .with("nvidia-fs", seen);
    }
    let mut r = CheckResult::warn(id, hits[0].clone()).with("nvidia-fs", seen);
    for h in &hits {
        r = r.with("known bad", h.clone());
    }
    r.remedy("upgrade nvidia-fs (the nvidia-gds / nvidia-fs-dkms package) past the releases named, then rebuild it with DKMS for every installed kernel")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;

    fn nvidia_fs(loaded: Option<&str>, sources: &[&str]) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.nvidia_fs.loaded = loaded.is_some();
                f.nvidia_fs.version = loaded.map(str::to_string);
                f.nvidia_fs.source_versions = sources.iter().map(|s| s.to_string()).collect();
            })
            .build()
    }

    #[test]
    fn skips_without_nvidia_fs() {
        says(
            &run(&HostFacts::builder().build()),
            Status::Skip,
            &["no nvidia-fs release"],
        );
    }

    #[test]
    fn passes_a_release_not_on_the_list() {
        let r = run(&nvidia_fs(Some("2.28.4"), &["2.28.4"]));
        says(
            &r,
            Status::Pass,
            &["nvidia-fs 2.28.4 (loaded)", "not on the known-bad list"],
        );
        assert_eq!(seen(&r, "nvidia-fs"), "2.28.4 (loaded)");
    }

    #[test]
    fn warns_of_a_listed_release_with_its_source() {
        let r = run(&nvidia_fs(Some("2.28.4"), &["2.25.6"]));
        says(
            &r,
            Status::Warn,
            &[
                "nvidia-fs 2.25.6",
                "rw_verify_area",
                "gds-nvidia-fs/issues/60",
            ],
        );
        assert_eq!(seen(&r, "nvidia-fs"), "2.28.4 (loaded), 2.25.6 (/usr/src)");
        // 2.25.6 is also below 2.28.4: both entries are named.
        assert_eq!(
            r.evidence.iter().filter(|e| e.what == "known bad").count(),
            2,
            "{r:#?}"
        );
        assert!(remedy(&r).contains("upgrade nvidia-fs"));
    }
}
