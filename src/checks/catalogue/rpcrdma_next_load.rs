//! `rpcrdma-next-load`: when rpcrdma is loaded from another build than the file modprobe
//! resolves, that file is only a prediction: after `modprobe -r rpcrdma` or a reboot it is what
//! loads. Advisory by default: the loaded module decides the mount (`rpcrdma-loaded`), and on
//! driver-container nodes the container loads its own build again at start.

use super::rpcrdma_common::{origin_of, provenance_evidence};
use super::rpcrdma_hook_export::file_hook_export;
use super::rpcrdma_hooks::file_hooks;
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Level, Status};
use crate::host::modules::loaded_build::LoadedBuild;
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("rpcrdma-next-load");

pub static CHECK: Check = Check {
    id: ID,
    doc: "when another rpcrdma build is loaded, the file modprobe loads after `modprobe -r` or a reboot also carries the hooks, exported as this kernel accepts; a loaded build from outside the module tree is reported with the driver-container markers found (`/run/mellanox/drivers`, `/run/nvidia/driver`, `/run/nvidia/validations`)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return CheckResult::skip(id, "rpcrdma is built in");
    }
    if !rp.loaded {
        return CheckResult::skip(
            id,
            "rpcrdma is not loaded: the file is what the first RDMA mount loads (rpcrdma-hooks judges it)",
        );
    }
    if !rp.loaded_elsewhere() {
        return CheckResult::pass(
            id,
            "the loaded rpcrdma is the file modprobe loads next (same build)",
        );
    }
    let Some(f) = rp.inspected() else {
        return provenance_evidence(
            CheckResult::unknown(
                id,
                "after `modprobe -r rpcrdma` or a reboot, modprobe finds no readable rpcrdma file (see rpcrdma-module)",
            ),
            rp,
        );
    };
    let outside = matches!(rp.loaded_build, Some(LoadedBuild::OutsideTree { .. }));
    let file = f.path.display().to_string();
    let prediction = |r: CheckResult| {
        let mut r = provenance_evidence(r.with("next load", file.clone()), rp);
        if outside && r.status == Status::Fail {
            r = r.remedy("if a driver container loads this rpcrdma, it loads it again when it starts and the host file matters only without it; otherwise install the hooked build in the host's module tree");
        }
        r
    };
    let hooks = file_hooks(f, origin_of(rp), facts.nvidia_fs.binding_version());
    match hooks.status {
        Status::Fail => {
            let mut r = CheckResult::fail(
                id,
                format!("after `modprobe -r rpcrdma` or a reboot, modprobe loads {file}, which has no hooks"),
            );
            // A driver container loads its own build again at start: nothing to plan on the
            // host then. Without its markers the build came by hand and a reboot loses it.
            if !outside || !driver_container(rp) {
                r.fixes = hooks.fixes.clone();
            }
            if !outside {
                r.remedy = hooks.remedy;
            }
            return prediction(r);
        }
        Status::Unknown => {
            return prediction(CheckResult::unknown(
                id,
                format!("after `modprobe -r rpcrdma` or a reboot, modprobe loads {file}, whose hooks cannot be seen: {}", hooks.summary),
            ))
        }
        // A hook ABI nfs-gds does not know: neither hooks nor none.
        Status::Warn => {
            return prediction(CheckResult::warn(
                id,
                format!("after `modprobe -r rpcrdma` or a reboot, modprobe loads {file}: {}", hooks.summary),
            ))
        }
        _ => {}
    }
    let export = file_hook_export(f, facts.gpl_rule.as_ref());
    let r = match export.status {
        Status::Fail => {
            let mut r = CheckResult::fail(
                id,
                format!("after `modprobe -r rpcrdma` or a reboot, modprobe loads {file}, whose hooks this kernel refuses: {}", export.summary),
            );
            r.fixes = export.fixes.clone();
            r.remedy = export.remedy;
            r
        }
        Status::Warn | Status::Unknown => CheckResult::warn(
            id,
            format!("after `modprobe -r rpcrdma` or a reboot, modprobe loads {file}: {}", export.summary),
        ),
        _ => CheckResult::pass(
            id,
            format!("after `modprobe -r rpcrdma` or a reboot, modprobe loads {file}, which also carries the hooks"),
        ),
    };
    prediction(r)
}

/// Whether the loaded build came from outside the tree on a node with driver-container markers.
fn driver_container(rp: &crate::host::facts::RpcrdmaFacts) -> bool {
    matches!(&rp.loaded_build, Some(LoadedBuild::OutsideTree { markers, .. }) if !markers.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Fix;
    use crate::host::facts::RpcrdmaFacts;
    use crate::host::facts_builder::{self as b, DKMS_RPCRDMA, INBOX_RPCRDMA};
    use crate::host::modules::gpl_rule::{Enforcement, GplRule};
    use crate::kmod::Export;

    /// A hooked build loaded from elsewhere (`how`), beside the file at `rel`.
    fn loaded_elsewhere(rel: &str, hooked: bool, export: Export, how: LoadedBuild) -> RpcrdmaFacts {
        let mut rp = b::rpcrdma(rel, hooked, export, true);
        rp.kallsyms = Some(Ok(b::loaded_hooks('t')));
        rp.sys.build_id = Some("0ther".into());
        rp.loaded_build = Some(how);
        rp
    }

    fn outside(markers: &[&str]) -> LoadedBuild {
        LoadedBuild::OutsideTree {
            inspected: vec![
                "/lib/modules/6.8.0-45-generic/kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst".into(),
            ],
            not_inspected: 0,
            markers: markers.iter().map(|m| m.to_string()).collect(),
        }
    }

    fn judge(rp: RpcrdmaFacts) -> CheckResult {
        run(&HostFacts::builder().rpcrdma(rp).build())
    }

    #[test]
    fn passes_the_loaded_build_that_is_the_file() {
        let r = judge(b::rpcrdma(DKMS_RPCRDMA, true, Export::Gpl, true));
        says(&r, Status::Pass, &["is the file modprobe loads next"]);
    }

    #[test]
    fn passes_a_next_load_that_also_carries_the_hooks() {
        let r = judge(loaded_elsewhere(
            DKMS_RPCRDMA,
            true,
            Export::Gpl,
            LoadedBuild::OtherBuild,
        ));
        says(
            &r,
            Status::Pass,
            &["modprobe loads", "also carries the hooks"],
        );
        assert!(seen(&r, "next load").ends_with(DKMS_RPCRDMA));
        assert!(seen(&r, "loaded build").contains("srcversion none differs"));
    }

    #[test]
    fn fails_a_next_load_without_hooks_with_the_file_remedy() {
        let r = judge(loaded_elsewhere(
            INBOX_RPCRDMA,
            false,
            Export::Gpl,
            LoadedBuild::OtherBuild,
        ));
        says(
            &r,
            Status::Fail,
            &[
                "after `modprobe -r rpcrdma` or a reboot",
                "which has no hooks",
            ],
        );
        assert_eq!(r.fixes, vec![Fix::HookedRpcrdma]);
        assert!(remedy(&r).contains("distribution's own rpcrdma"));
    }

    #[test]
    fn a_driver_containers_build_plans_nothing_on_the_host() {
        let r = judge(loaded_elsewhere(
            INBOX_RPCRDMA,
            false,
            Export::Gpl,
            outside(&["/run/mellanox/drivers"]),
        ));
        says(&r, Status::Fail, &["which has no hooks"]);
        assert!(r.fixes.is_empty(), "{r:#?}");
        assert!(remedy(&r).contains("driver container"));
        assert_eq!(
            seen(&r, "driver-container markers"),
            "/run/mellanox/drivers"
        );

        let by_hand = judge(loaded_elsewhere(
            INBOX_RPCRDMA,
            false,
            Export::Gpl,
            outside(&[]),
        ));
        assert_eq!(by_hand.fixes, vec![Fix::HookedRpcrdma]);
        assert_eq!(seen(&by_hand, "driver-container markers"), "none found");
    }

    #[test]
    fn judges_the_exports_of_the_next_load() {
        let mut facts = HostFacts::builder()
            .rpcrdma(loaded_elsewhere(
                DKMS_RPCRDMA,
                true,
                Export::Plain,
                LoadedBuild::OtherBuild,
            ))
            .build();
        let r = run(&facts);
        says(&r, Status::Warn, &["not known whether this kernel refuses"]);
        facts.gpl_rule = Some(GplRule {
            enforcement: Enforcement::Enforced,
            evidence: "Linux 6.8".into(),
        });
        let r = run(&facts);
        says(&r, Status::Fail, &["whose hooks this kernel refuses"]);
        assert_eq!(r.fixes, vec![Fix::GplExport]);
    }

    #[test]
    fn is_unknown_without_a_readable_file_or_hooks_that_show() {
        let mut rp = loaded_elsewhere(DKMS_RPCRDMA, true, Export::Gpl, LoadedBuild::OtherBuild);
        rp.file = Some(Err("corrupt".into()));
        says(
            &judge(rp),
            Status::Unknown,
            &["finds no readable rpcrdma file"],
        );
        let mut rp = loaded_elsewhere(DKMS_RPCRDMA, true, Export::Gpl, LoadedBuild::OtherBuild);
        if let Some(Ok(f)) = &mut rp.file {
            f.has_symtab = false;
        }
        says(
            &judge(rp),
            Status::Unknown,
            &["whose hooks cannot be seen", "no symbol table"],
        );
    }

    #[test]
    fn skips_what_is_not_loaded_or_built_in() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["not loaded", "rpcrdma-hooks judges it"]);
        says(&judge(b::built_in()), Status::Skip, &["built in"]);
    }
}
