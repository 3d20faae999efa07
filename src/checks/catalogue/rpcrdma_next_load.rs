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
    doc: "when another rpcrdma build is loaded, the file modprobe loads after `modprobe -r` or a reboot also carries the hooks, exported as this kernel accepts",
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
    let hooks = file_hooks(f, origin_of(rp));
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
