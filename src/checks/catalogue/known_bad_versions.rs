//! `known-bad-versions`: no nvidia-fs release on the node (the loaded module, a source tree DKMS
//! builds from, Debian's nvidia-fs-dkms package), no mlnx-nfsrdma release (its Debian package, or
//! the `version` of an out-of-tree rpcrdma file) nor VAST's NFS bundle is on the known-bad list,
//! alone or with what else the node runs (its kernel, the GPU driver package, the machine), and
//! every entry names its public source. Advisory: the list knows releases, not this node's
//! workload.

use crate::checks::check::{Check, Scope};
use crate::checks::known_bad;
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::boot::version_order;
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("known-bad-versions");

/// The evidence that names the nvidia-fs release fixing what the node runs, for doctor's plan.
pub const NVIDIA_FS_FIXED_IN: &str = "nvidia-fs fixed in";

pub static CHECK: Check = Check {
    id: ID,
    doc: "no nvidia-fs release present (loaded, in `/usr/src` for DKMS, or Debian's nvidia-fs-dkms), mlnx-nfsrdma release (its package, or the out-of-tree rpcrdma's `version`) nor vastnfs bundle is on the known-bad list, alone or with this kernel, GPU driver package, machine or plain hook export (advisory)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let nv = &facts.nvidia_fs;
    let inv = &facts.inventory;
    // (package, release, where it was seen)
    let mut present: Vec<(&str, String, &str)> = Vec::new();
    if let Some(v) = &nv.version {
        present.push(("nvidia-fs", v.clone(), "loaded"));
    }
    for v in &nv.source_versions {
        if !present.iter().any(|(_, p, _)| p == v) {
            present.push(("nvidia-fs", v.clone(), "/usr/src"));
        }
    }
    if let Some(v) = inv.deb("nvidia-fs-dkms") {
        present.push(("nvidia-fs-dkms", v.to_string(), "dpkg"));
    }
    if let Some(v) = inv.deb("mlnx-nfsrdma-dkms") {
        present.push(("mlnx-nfsrdma", v.to_string(), "dpkg"));
    }
    if let Some(v) = out_of_tree_rpcrdma_version(facts) {
        if !present
            .iter()
            .any(|(p, seen, _)| *p == "mlnx-nfsrdma" && seen.starts_with(v))
        {
            present.push(("mlnx-nfsrdma", v.to_string(), "module file"));
        }
    }
    if let Some(v) = &inv.vastnfs_version {
        present.push(("vastnfs", v.clone(), "loaded"));
    }
    if present.is_empty() {
        return CheckResult::skip(
            id,
            "no nvidia-fs or vastnfs release is loaded or installed for DKMS",
        );
    }
    let seen = present
        .iter()
        .map(|(p, v, w)| format!("{p} {v} ({w})"))
        .collect::<Vec<_>>()
        .join(", ");
    let kernel = facts
        .kernel
        .upstream
        .as_ref()
        .map(|k| (k.major, k.minor))
        .or_else(|| {
            facts
                .kernel
                .release
                .as_deref()
                .and_then(known_bad::major_minor)
        });
    let installed = |p: &str| inv.deb(p).is_some();
    let node = known_bad::Node {
        kernel,
        installed: inv
            .debs
            .is_some()
            .then_some(&installed as &dyn Fn(&str) -> bool),
        product_name: inv.product_name.as_deref(),
        plain_hooks: facts.rpcrdma.any_plain_export(),
    };
    let mut hits = Vec::new();
    let mut fixes = Vec::new();
    // The newest release that fixes a known-bad nvidia-fs present.
    let mut nvidia_fs_fixed_in: Option<&str> = None;
    for (p, v, _) in &present {
        for e in known_bad::matching(p, v, &node) {
            hits.push(format!("{p} {v}: {} [{}]", e.problem, e.source));
            fixes.extend(e.fix.as_ref().map(|f| format!("{p} {v}: {f}")));
            if let (true, Some(below)) = (e.package == "nvidia-fs", e.below) {
                if nvidia_fs_fixed_in
                    .is_none_or(|n| version_order::compare(below, n) == std::cmp::Ordering::Greater)
                {
                    nvidia_fs_fixed_in = Some(below);
                }
            }
        }
    }
    if hits.is_empty() {
        return CheckResult::pass(id, format!("{seen}: not on the known-bad list"))
            .with("releases", seen);
    }
    let mut r = CheckResult::warn(id, hits[0].clone()).with("releases", seen);
    for h in &hits {
        r = r.with("known bad", h.clone());
    }
    if let Some(release) = nvidia_fs_fixed_in {
        r = r
            .with(NVIDIA_FS_FIXED_IN, release)
            .fix(Fix::UpgradeNvidiaFs);
    }
    if !fixes.is_empty() {
        return r.remedy(fixes.join("; "));
    }
    r.remedy("move off the releases and combinations named (each entry says how and cites its source); for nvidia-fs, upgrade the nvidia-gds / nvidia-fs-dkms package and rebuild it with DKMS for every installed kernel")
}

/// The `version` of the rpcrdma file modprobe resolves, when NVIDIA's DOCA-OFED / MLNX_OFED
/// ships it (mlnx-nfsrdma stamps its release there), as the module owners say.
fn out_of_tree_rpcrdma_version(facts: &HostFacts) -> Option<&str> {
    use crate::host::modules::module_owners::PackageFamily;
    let next = facts.owners.as_ref().ok()?.get("rpcrdma")?.next.as_ref()?;
    if next.family != PackageFamily::NvidiaOfed {
        return None;
    }
    facts.rpcrdma.inspected()?.modinfo.version.as_deref()
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
            &["no nvidia-fs or vastnfs release"],
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
        assert_eq!(seen(&r, "releases"), "nvidia-fs 2.28.4 (loaded)");
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
        assert_eq!(
            seen(&r, "releases"),
            "nvidia-fs 2.28.4 (loaded), nvidia-fs 2.25.6 (/usr/src)"
        );
        // 2.25.6 is also below 2.28.4: both entries are named.
        assert_eq!(
            r.evidence.iter().filter(|e| e.what == "known bad").count(),
            2,
            "{r:#?}"
        );
        assert!(remedy(&r).contains("upgrade the nvidia-gds"));
    }

    #[test]
    fn warns_of_vastnfs_4_0_on_a_kernel_newer_than_6_8_only() {
        let node = |release: &str| {
            let release = release.to_string();
            HostFacts::builder()
                .with(|f| {
                    f.inventory.vastnfs_version = Some("4.0.34".into());
                    f.kernel.release = Some(release);
                })
                .build()
        };
        let r = run(&node("6.12.0-55.el10.x86_64"));
        says(
            &r,
            Status::Warn,
            &[
                "vastnfs 4.0.34",
                "kernels up to 6.8",
                "vastnfs.vastdata.com",
            ],
        );
        says(
            &run(&node("6.8.0-45-generic")),
            Status::Pass,
            &["vastnfs 4.0.34 (loaded)"],
        );
    }

    #[test]
    fn warns_of_debian_nvidia_fs_dkms_beside_the_proprietary_driver_package() {
        let node = |driver: &str| {
            let driver = driver.to_string();
            HostFacts::builder()
                .with(|f| {
                    f.inventory.debs = Some(vec![
                        ("nvidia-fs-dkms".into(), "2.19.7~12.4.1-2".into()),
                        (driver, "550.163.01-2".into()),
                    ])
                })
                .build()
        };
        says(
            &run(&node("nvidia-kernel-dkms")),
            Status::Warn,
            &[
                "nvidia-fs-dkms 2.19.7~12.4.1-2",
                "proprietary nvidia-kernel-dkms",
                "packages.debian.org",
            ],
        );
        says(
            &run(&node("nvidia-open-kernel-dkms")),
            Status::Pass,
            &["nvidia-fs-dkms 2.19.7~12.4.1-2 (dpkg)"],
        );
    }

    #[test]
    fn warns_of_nvidia_fs_on_dgx_spark() {
        let mut facts = nvidia_fs(Some("2.30.2"), &[]);
        facts.inventory.product_name = Some("NVIDIA DGX Spark".into());
        says(
            &run(&facts),
            Status::Warn,
            &["compatibility mode only", "Do not load nvidia-fs"],
        );
    }

    #[test]
    fn warns_of_doca_26_01_mlnx_nfsrdma_exporting_plain_with_the_fix() {
        use crate::host::facts_builder::{self as b, DKMS_RPCRDMA};
        use crate::kmod::Export;
        let node = |export: Export| {
            use crate::host::modules::module_owners::{
                LoadedOwner, ModuleCopy, ModuleOwner, ModuleOwners,
            };
            let mut rp = b::rpcrdma(DKMS_RPCRDMA, true, export, false);
            if let Some(Ok(f)) = &mut rp.file {
                f.modinfo.version = Some("26.01.OFED.26.01.1.0.0.1".into());
            }
            let owners = ModuleOwners {
                modules: vec![ModuleOwner {
                    module: "rpcrdma".into(),
                    next: Some(ModuleCopy::at(DKMS_RPCRDMA)),
                    loaded: LoadedOwner::NotLoaded,
                    installed: vec![ModuleCopy::at(DKMS_RPCRDMA)],
                }],
            };
            HostFacts::builder()
                .rpcrdma(rp)
                .with(|f| f.owners = Ok(owners))
                .build()
        };
        let r = run(&node(Export::Plain));
        says(
            &r,
            Status::Warn,
            &[
                "mlnx-nfsrdma 26.01.OFED.26.01.1.0.0.1",
                "failing symbol_get of non-GPLONLY symbol",
                "XinnorLab/xiNAS",
            ],
        );
        assert!(remedy(&r).contains("EXPORT_SYMBOL_GPL"), "{r:?}");
        assert_eq!(
            seen(&r, "releases"),
            "mlnx-nfsrdma 26.01.OFED.26.01.1.0.0.1 (module file)"
        );
        says(
            &run(&node(Export::Gpl)),
            Status::Pass,
            &["mlnx-nfsrdma 26.01.OFED.26.01.1.0.0.1 (module file)"],
        );
    }
}
