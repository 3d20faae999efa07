//! What the rpcrdma checks share: the evidence a module file gives, and the remedies for an
//! rpcrdma without hooks or with plain exports, by where the module came from. Not a check.

use crate::checks::CheckResult;
use crate::host::facts::RpcrdmaFacts;
use crate::host::modules::loaded_build::LoadedBuild;
use crate::host::modules::{ModuleOrigin, Resolution};
use crate::kmod::{Export, ModuleFile};

/// What fixes plain exports.
pub(super) const GPL_FIX: &str = "install a build that exports the hooks with EXPORT_SYMBOL_GPL (MLNX_OFED / DOCA-OFED 24.04 or later)";

pub(super) fn file_evidence(r: CheckResult, f: &ModuleFile) -> CheckResult {
    r.with("file", f.path.display().to_string())
        .with("compression", f.compression.as_str())
}

pub(super) fn origin_of(rp: &RpcrdmaFacts) -> Option<&ModuleOrigin> {
    match &rp.resolution {
        Some(Resolution::File { origin, .. }) => Some(origin),
        _ => None,
    }
}

pub(super) fn missing_hooks_remedy(origin: Option<&ModuleOrigin>) -> String {
    match origin {
        Some(ModuleOrigin::Inbox) => "this is the distribution's own rpcrdma, which never has the hooks: install DOCA-OFED / MLNX_OFED's mlnx-nfsrdma built with GDS support".to_string(),
        Some(_) => "this rpcrdma was built without GDS support (mlnx-ofa_kernel configured without --with-gds): rebuild it with GDS enabled".to_string(),
        None => "a distribution's own rpcrdma never has the hooks, and an mlnx-nfsrdma build has them only when mlnx-ofa_kernel was configured --with-gds: install or rebuild NVIDIA's mlnx-nfsrdma with GDS support".to_string(),
    }
}

pub(super) fn export_word(e: &Export) -> String {
    match e {
        Export::Gpl => "EXPORT_SYMBOL_GPL".into(),
        Export::Plain => "EXPORT_SYMBOL (plain)".into(),
        Export::NotExported => "not exported".into(),
        Export::Unrecognised { section } => format!("in unrecognised section {section}"),
    }
}

/// The skip of a check that judges the module file while another rpcrdma build is loaded: the
/// loaded module carries the next mount, and the file is judged as the next load.
pub(super) fn file_is_next_load(id: crate::checks::CheckId, rp: &RpcrdmaFacts) -> CheckResult {
    let r = CheckResult::skip(
        id,
        "rpcrdma is loaded, and not from this file: the loaded module carries the next mount (rpcrdma-loaded), the file is what a reload or reboot loads (rpcrdma-next-load)",
    );
    match rp.inspected() {
        Some(f) => r.with("file", f.path.display().to_string()),
        None => r,
    }
}

/// Where the loaded build came from, as evidence.
pub(super) fn provenance_evidence(r: CheckResult, rp: &RpcrdmaFacts) -> CheckResult {
    let loaded_id = rp.sys.build_id.as_deref().unwrap_or("none");
    match &rp.loaded_build {
        Some(LoadedBuild::OtherFile { path }) => r.with(
            "loaded build",
            format!("{path} (build-id {loaded_id}), a file of the module tree modprobe does not resolve: loaded by hand or before the index changed"),
        ),
        Some(LoadedBuild::OutsideTree {
            inspected,
            not_inspected,
            markers,
        }) => {
            let mut looked = if inspected.is_empty() {
                "no other rpcrdma file in the module tree".to_string()
            } else {
                format!("inspected {}", inspected.join(", "))
            };
            if *not_inspected > 0 {
                looked.push_str(&format!(" ({not_inspected} more not opened)"));
            }
            r.with(
                "loaded build",
                format!("build-id {loaded_id} matches no file of the host's module tree ({looked}): it came from outside the tree (a driver container or a manual insmod)"),
            )
            .with(
                "driver-container markers",
                if markers.is_empty() {
                    "none found".to_string()
                } else {
                    markers.join(", ")
                },
            )
        }
        Some(LoadedBuild::OtherBuild) => r.with(
            "loaded build",
            format!(
                "srcversion {} differs from the file's and there is no loaded build-id to look it up",
                rp.sys.srcversion.as_deref().unwrap_or("none")
            ),
        ),
        _ => r,
    }
}

/// Why this kernel is taken to load no modules: no `/proc/modules`, or `nomodule` booted.
pub fn no_modules_evidence(facts: &crate::host::HostFacts) -> &'static str {
    if facts.loaded_modules.is_none() {
        "no /proc/modules"
    } else {
        "booted with nomodule"
    }
}
