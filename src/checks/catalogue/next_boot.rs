//! `next-boot`: the kernel the bootloader starts next gets an rpcrdma with the hooks from its
//! own module tree (DKMS built mlnx-nfsrdma for it), so GDS still works after the reboot.

use super::rpcrdma_common::export_word;
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::boot::boot_kernels::KernelRpcrdma;
use crate::host::boot::dkms::{DkmsState, MLNX_NFSRDMA};
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::Resolution;
use crate::host::HostFacts;
use crate::kmod::Export;

pub const ID: CheckId = CheckId::new("next-boot");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the kernel the next boot starts has an rpcrdma with the hooks in its own module tree (DKMS built mlnx-nfsrdma for it)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let boot = &facts.boot;
    let nb = match &boot.next_boot {
        Ok(nb) => nb,
        Err(e) => {
            return CheckResult::unknown(
                id,
                format!("which kernel the next boot starts could not be read: {e}"),
            )
        }
    };
    let Some(release) = &nb.release else {
        return CheckResult::skip(
            id,
            format!(
                "the next boot starts no known Linux kernel ({})",
                nb.decided_by
            ),
        );
    };
    let with_boot = |r: CheckResult| {
        let r = r.with("decided by", nb.decided_by.clone());
        let r = nb.notes.iter().fold(r, |r, n| r.with("note", n.clone()));
        boot.others
            .iter()
            .filter(|k| &k.kernel.release != release)
            .fold(r, |r, k| {
                r.with(format!("installed {}", k.kernel.release), kernel_line(k))
            })
    };
    if boot.running.as_deref() == Some(release.as_str()) {
        return with_boot(CheckResult::pass(
            id,
            format!("the next boot starts the running kernel {release} again: the checks above hold for it"),
        ));
    }
    let Some(k) = boot.other(release) else {
        return with_boot(
            CheckResult::fail(
                id,
                format!("after reboot into {release}, modprobe finds no module tree: that kernel has no /lib/modules/{release}"),
            )
            .fix(Fix::NextBootModules)
            .remedy(format!("install the modules of {release}, or make the bootloader start a kernel that has them")),
        );
    };
    with_boot(judge(k))
}

fn judge(k: &KernelRpcrdma) -> CheckResult {
    let id = ID;
    let rel = &k.kernel.release;
    let dkms = dkms_words(&k.dkms);
    let fail = |what: String| {
        let remedy = match k.dkms_fix() {
            Some(cmd) => format!("build it for that kernel before rebooting: `{cmd}`"),
            None => format!(
                "install the mlnx-nfsrdma (DOCA-OFED / MLNX_OFED) built for {rel} before rebooting"
            ),
        };
        CheckResult::fail(id, format!("after reboot into {rel}, {what}; {dkms}"))
            .fix(Fix::NextBootModules)
            .remedy(remedy)
            .with("dkms", dkms.clone())
    };
    let resolution = match &k.resolution {
        Ok(r) => r,
        Err(e) => {
            return CheckResult::unknown(
                id,
                format!("the module tree of {rel} could not be read: {e}"),
            )
        }
    };
    let (path, origin) = match resolution {
        Resolution::File { path, origin, exists: true, .. } => (path, origin),
        Resolution::File { path, .. } => {
            return fail(format!("modprobe resolves rpcrdma to {}, which does not exist (depmod is stale)", path.display()))
        }
        Resolution::BuiltIn { .. } => {
            return CheckResult::warn(id, format!("after reboot into {rel}, rpcrdma is built into the kernel; whether it has the hooks shows only once it runs"))
        }
        Resolution::NotFound { .. } | Resolution::NoModuleTree { .. } => {
            return fail("modprobe finds no rpcrdma at all".to_string())
        }
    };
    let f = match &k.file {
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            return CheckResult::unknown(
                id,
                format!("the rpcrdma of {rel} could not be inspected: {e}"),
            )
        }
        None => return CheckResult::unknown(id, format!("the rpcrdma of {rel} was not inspected")),
    };
    let evidence = |r: CheckResult| {
        let r = r.with("file", f.path.display().to_string());
        f.symbols.iter().fold(r, |r, s| {
            r.with(
                s.symbol.clone(),
                if s.defined {
                    export_word(&s.export)
                } else {
                    "missing".into()
                },
            )
        })
    };
    if f.symbols.iter().any(|s| !s.defined) {
        return evidence(fail(format!(
            "modprobe loads {} ({}), which has no nvfs hooks",
            path.display(),
            origin.describe()
        )));
    }
    let plain = f.symbols.iter().any(|s| s.export == Export::Plain);
    let exported = f
        .symbols
        .iter()
        .all(|s| matches!(s.export, Export::Gpl | Export::Plain));
    if !exported {
        return evidence(fail(format!(
            "modprobe loads {}, whose hooks are not exported",
            path.display()
        )));
    }
    if plain {
        let rule = k.gpl_rule.as_ref();
        let r = match rule.map(|r| r.enforcement) {
            Some(Enforcement::Enforced) => fail(format!(
                "modprobe loads {}, which exports the hooks plain, and {rel} refuses __symbol_get of non-GPL symbols",
                path.display()
            ))
            .remedy(super::rpcrdma_common::GPL_FIX),
            Some(Enforcement::NotEnforced) => CheckResult::pass(id, format!("after reboot into {rel}, modprobe loads {}, whose plain hook exports that kernel still accepts", path.display())),
            _ => CheckResult::warn(id, format!("after reboot into {rel}, modprobe loads {}, which exports the hooks plain, and whether {rel} refuses that is not known", path.display())),
        };
        let r = r.with(
            "kernel rule",
            rule.map_or_else(|| "not judged".into(), |r| r.evidence.clone()),
        );
        return evidence(r);
    }
    evidence(CheckResult::pass(
        id,
        format!(
            "after reboot into {rel}, modprobe loads {} ({}), which has both hooks exported GPL",
            path.display(),
            origin.describe()
        ),
    ))
}

fn dkms_words(s: &DkmsState) -> String {
    match s {
        DkmsState::Installed { version } => {
            format!("dkms status shows {MLNX_NFSRDMA} {version} installed for it")
        }
        DkmsState::Built { version } => {
            format!("dkms status shows {MLNX_NFSRDMA} {version} built but not installed for it")
        }
        DkmsState::NotBuilt {
            versions,
            built_for,
        } => format!(
            "dkms status shows {MLNX_NFSRDMA} ({}) not built for it (built for: {})",
            versions.join(", "),
            if built_for.is_empty() {
                "none".to_string()
            } else {
                built_for.join(", ")
            }
        ),
        DkmsState::Unknown => format!("DKMS does not know {MLNX_NFSRDMA}"),
    }
}

/// One line about an installed kernel that is not running: what its modprobe loads.
pub fn kernel_line(k: &KernelRpcrdma) -> String {
    let file = match (&k.resolution, k.inspected()) {
        (Ok(Resolution::File { path, origin, .. }), Some(f)) => {
            let hooks = if f.symbols.iter().all(|s| s.defined) {
                if f.symbols.iter().all(|s| s.export == Export::Gpl) {
                    "hooks exported GPL"
                } else {
                    "hooks present, not all exported GPL"
                }
            } else {
                "no hooks"
            };
            format!(
                "modprobe loads {} ({}, {hooks})",
                path.display(),
                origin.describe()
            )
        }
        (Ok(Resolution::File { path, .. }), None) => format!(
            "modprobe resolves {}, which could not be inspected",
            path.display()
        ),
        (Ok(Resolution::BuiltIn { .. }), _) => "rpcrdma is built in".into(),
        (Ok(_), _) => "modprobe finds no rpcrdma".into(),
        (Err(e), _) => format!("module tree unreadable: {e}"),
    };
    format!("{file}; {}", dkms_words(&k.dkms))
}
