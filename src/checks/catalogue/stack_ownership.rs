//! `stack-ownership`: which package family provides the rpcrdma, sunrpc and ib_core that are
//! loaded and that the next load or boot takes — the distribution, Ubuntu's archive DOCA-OFED,
//! NVIDIA's DOCA-OFED / MLNX_OFED, vastnfs. Warns when two vendor families install the same
//! module (which one loads then rests on depmod's search order), and when a loaded module comes
//! from another family than the file that replaces it at the next load. Advisory by default:
//! what loads decides the mount, and `rpcrdma-*` judge that; this says whose it is.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::modules::module_owners::{LoadedOwner, ModuleOwner};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("stack-ownership");

pub static CHECK: Check = Check {
    id: ID,
    doc: "one package family (the distribution, Ubuntu's DOCA-OFED, NVIDIA's DOCA-OFED / MLNX_OFED, vastnfs) provides each of rpcrdma, sunrpc and ib_core: no two vendor families install the same module, and the loaded module comes from the family of the file the next load takes (advisory)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let owners = match &facts.owners {
        Ok(o) => o,
        Err(e) => return CheckResult::unknown(id, format!("the module tree cannot be read: {e}")),
    };
    if owners.modules.is_empty() {
        return CheckResult::skip(id, "there is no module tree for the running kernel");
    }
    let mut problems = Vec::new();
    let mut evidence = Vec::new();
    for m in &owners.modules {
        evidence.push((m.module.clone(), describe(m)));
        let vendors = m.vendor_families();
        if vendors.len() > 1 {
            let names: Vec<String> = vendors.iter().map(|f| f.describe()).collect();
            problems.push(format!(
                "{} is installed by {} together{}",
                m.module,
                names.join(" and "),
                next_words(m)
            ));
        }
        if let (LoadedOwner::Family { family, .. }, Some(next)) = (&m.loaded, &m.next) {
            if *family != next.family {
                problems.push(format!(
                    "the loaded {} is {}'s, but the next load takes {}'s ({})",
                    m.module,
                    family.describe(),
                    next.family.describe(),
                    next.rel_path
                ));
            }
        }
    }
    let with_evidence = |mut r: CheckResult| {
        for (module, seen) in &evidence {
            r = r.with(module.clone(), seen.clone());
        }
        r
    };
    if problems.is_empty() {
        let families: Vec<String> = owners
            .modules
            .iter()
            .map(|m| format!("{}: {}", m.module, owner_words(m)))
            .collect();
        return with_evidence(CheckResult::pass(
            id,
            format!("one family provides each module ({})", families.join("; ")),
        ));
    }
    with_evidence(CheckResult::warn(id, problems.join("; ")))
        .fix(Fix::StackConflict)
        .remedy("keep one NFS/RDMA stack: remove the other family's packages (NVIDIA's DOCA-OFED / MLNX_OFED and Ubuntu's DOCA-OFED packages are not to be installed together; vastnfs replaces the NFS modules of either), then `depmod -a`, rebuild the initramfs and reboot")
}

/// Whose module the next load takes, after the families that compete.
fn next_words(m: &ModuleOwner) -> String {
    match &m.next {
        Some(n) => format!(
            ": depmod's search order picks {} ({})",
            n.rel_path,
            n.family.describe()
        ),
        None => String::new(),
    }
}

/// The owner of the next load, and of the loaded module where it is known.
fn owner_words(m: &ModuleOwner) -> String {
    let next = m
        .next
        .as_ref()
        .map_or("built in or not installed".to_string(), |n| {
            n.family.describe()
        });
    match &m.loaded {
        LoadedOwner::Family { family, .. } if m.next.is_some() => {
            format!("{next}, loaded from {}", family.describe())
        }
        _ => next,
    }
}

/// The evidence line of one module: next, loaded, installed copies.
fn describe(m: &ModuleOwner) -> String {
    let copy = |c: &crate::host::modules::module_owners::ModuleCopy| match &c.link {
        Some(l) => format!("{} -> {l} ({})", c.rel_path, c.family.describe()),
        None => format!("{} ({})", c.rel_path, c.family.describe()),
    };
    let next = m.next.as_ref().map_or("none".to_string(), copy);
    let loaded = match &m.loaded {
        LoadedOwner::NotLoaded => "not loaded".to_string(),
        LoadedOwner::Family { family, evidence } => format!("{} ({evidence})", family.describe()),
        LoadedOwner::Unmatched => "loaded, from no file of the tree".to_string(),
    };
    let installed: Vec<String> = m.installed.iter().map(copy).collect();
    format!(
        "next: {next}; loaded: {loaded}; installed: {}",
        if installed.is_empty() {
            "none".to_string()
        } else {
            installed.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::modules::module_owners::{ModuleCopy, ModuleOwners, PackageFamily};

    fn copy(rel: &str) -> ModuleCopy {
        ModuleCopy::at(rel)
    }

    fn owner(module: &str, next: &str, loaded: Option<&str>, installed: &[&str]) -> ModuleOwner {
        ModuleOwner {
            module: module.into(),
            next: Some(copy(next)),
            loaded: match loaded {
                None => LoadedOwner::NotLoaded,
                Some(rel) => LoadedOwner::Family {
                    family: PackageFamily::of_path(rel),
                    evidence: format!("build-id of {rel}"),
                },
            },
            installed: installed.iter().map(|r| copy(r)).collect(),
        }
    }

    fn node(modules: Vec<ModuleOwner>) -> HostFacts {
        HostFacts::builder()
            .owners(Ok(ModuleOwners { modules }))
            .build()
    }

    const INBOX_IB: &str = "kernel/drivers/infiniband/core/ib_core.ko.zst";
    const INBOX_SUNRPC: &str = "kernel/net/sunrpc/sunrpc.ko.zst";
    const DKMS_RPCRDMA: &str = "updates/dkms/rpcrdma.ko.zst";
    const DKMS_IB: &str = "updates/dkms/ib_core.ko.zst";
    const DOCA_IB: &str = "kernel/doca-ofed-26.01/drivers/infiniband/core/ib_core.ko.zst";

    #[test]
    fn one_family_per_module_passes() {
        let r = run(&node(vec![
            owner("rpcrdma", DKMS_RPCRDMA, Some(DKMS_RPCRDMA), &[DKMS_RPCRDMA]),
            owner("sunrpc", INBOX_SUNRPC, None, &[INBOX_SUNRPC]),
            owner("ib_core", DKMS_IB, None, &[INBOX_IB, DKMS_IB]),
        ]));
        says(
            &r,
            Status::Pass,
            &[
                "rpcrdma: NVIDIA's DOCA-OFED / MLNX_OFED, loaded from NVIDIA's",
                "sunrpc: the distribution's kernel",
            ],
        );
        assert!(seen(&r, "ib_core").contains("installed: kernel/drivers"));
        assert!(r.fixes.is_empty());
    }

    #[test]
    fn two_vendor_families_for_one_module_warn() {
        let r = run(&node(vec![owner(
            "ib_core",
            DOCA_IB,
            None,
            &[DOCA_IB, INBOX_IB, DKMS_IB],
        )]));
        says(
            &r,
            Status::Warn,
            &[
                "ib_core is installed by Ubuntu's archive DOCA-OFED 26.01 and NVIDIA's DOCA-OFED / MLNX_OFED together",
                "depmod's search order picks kernel/doca-ofed-26.01/",
            ],
        );
        assert_eq!(r.fixes, vec![Fix::StackConflict]);
        assert!(remedy(&r).contains("remove the other family's packages"));
    }

    #[test]
    fn a_loaded_module_of_another_family_warns() {
        let bundle = "updates/bundle/net/sunrpc/sunrpc.ko";
        let mut sunrpc = owner("sunrpc", INBOX_SUNRPC, None, &[INBOX_SUNRPC]);
        sunrpc.loaded = LoadedOwner::Family {
            family: PackageFamily::Vastnfs,
            evidence: "nfs_bundle_version = 4.5.8".into(),
        };
        let r = run(&node(vec![sunrpc]));
        says(
            &r,
            Status::Warn,
            &["the loaded sunrpc is vastnfs's, but the next load takes the distribution's kernel's"],
        );
        assert!(!r.summary.contains(bundle));
        // vastnfs beside the distribution's own module is one vendor family: no conflict there.
        let r = run(&node(vec![owner(
            "sunrpc",
            bundle,
            Some(bundle),
            &[INBOX_SUNRPC, bundle],
        )]));
        says(&r, Status::Pass, &["sunrpc: vastnfs, loaded from vastnfs"]);
    }

    #[test]
    fn no_tree_skips_and_an_unreadable_one_is_unknown() {
        says(&run(&node(vec![])), Status::Skip, &["no module tree"]);
        let r = run(&HostFacts::builder()
            .owners(Err("cannot list x".into()))
            .build());
        says(&r, Status::Unknown, &["cannot list x"]);
    }
}
