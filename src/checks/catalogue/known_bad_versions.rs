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
