//! `rpcrdma-hook-export`: the hooks are exported in a way this kernel's `__symbol_get` accepts —
//! GPL, or plain on a kernel shown not to enforce the GPL-only rule (6.6 and its stable backports do).

use super::rpcrdma_common::{export_word, file_is_next_load, GPL_FIX};
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::modules::gpl_rule::{Enforcement, GplRule};
use crate::host::HostFacts;
use crate::kmod::{Export, ModuleFile};

pub const ID: CheckId = CheckId::new("rpcrdma-hook-export");

pub static CHECK: Check = Check {
    id: ID,
    doc: "both hooks are exported GPL, or plain on a kernel shown not to enforce the GPL-only `__symbol_get` rule (when rpcrdma is loaded from another build, `rpcrdma-next-load` judges the file instead)",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return CheckResult::warn(
            id,
            "rpcrdma is built in; how its hooks are exported cannot be read from kallsyms",
        )
        .remedy("verify with the live probe: `nfs-gds doctor --probe`");
    }
    if rp.loaded_elsewhere() {
        return file_is_next_load(id, rp);
    }
    let Some(f) = rp.inspected() else {
        return CheckResult::skip(id, "no rpcrdma module file to inspect (see rpcrdma-module)");
    };
    let r = file_hook_export(f, facts.gpl_rule.as_ref());
    // The kernel's own rpcrdma with the hooks is a kernel with NVIDIA's GDS patch: no OFED
    // package replaces its export.
    match super::rpcrdma_common::origin_of(rp) {
        Some(crate::host::modules::ModuleOrigin::Inbox) if r.remedy.as_deref() == Some(GPL_FIX) => {
            r.remedy(IN_TREE_GPL_FIX)
        }
        _ => r,
    }
}

/// The fix of a plain export in the kernel's own rpcrdma (NVIDIA's linux-nvidia kernels).
pub const IN_TREE_GPL_FIX: &str = "this is the kernel's own rpcrdma (NVIDIA's GDS patch): boot a kernel whose in-tree rpcrdma exports the hooks GPL (check it first with `nfs-gds inspect-module`), or rebuild it with EXPORT_SYMBOL_GPL through DKMS";

/// `rpcrdma-hook-export` for one module file, given what is known of the kernel's GPL-only rule
/// (needed only when a hook is exported plain).
pub fn file_hook_export(f: &ModuleFile, rule: Option<&GplRule>) -> CheckResult {
    let id = ID;
    if f.symbols.iter().any(|s| !s.defined) {
        return CheckResult::skip(id, "the hooks are not defined (see rpcrdma-hooks)");
    }
    let not_exported: Vec<&str> = f
        .symbols
        .iter()
        .filter(|s| s.export == Export::NotExported)
        .map(|s| s.symbol.as_str())
        .collect();
    let unrecognised = f
        .symbols
        .iter()
        .find(|s| matches!(s.export, Export::Unrecognised { .. }));
    let plain = f.symbols.iter().any(|s| s.export == Export::Plain);
    let result = if !not_exported.is_empty() {
        CheckResult::fail(
            id,
            format!(
                "{} defined but not exported, so nvidia-fs cannot find it",
                not_exported.join(" and ")
            ),
        )
        .fix(Fix::GplExport)
        .remedy(GPL_FIX)
    } else if let Some(s) = unrecognised {
        CheckResult::warn(
            id,
            format!(
                "{} is exported from a section this version of nfs-gds does not recognise",
                s.symbol
            ),
        )
        .remedy("verify with the live probe: `nfs-gds doctor --probe`")
    } else if !plain {
        CheckResult::pass(
            id,
            "both hooks are exported GPL, which every kernel accepts",
        )
    } else {
        match rule.map(|r| r.enforcement) {
            Some(Enforcement::Enforced) => CheckResult::fail(
                id,
                "the hooks are exported with plain EXPORT_SYMBOL and this kernel refuses __symbol_get of non-GPL symbols: nvidia-fs logs `failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops` and GDS silently falls back",
            )
            .fix(Fix::GplExport)
            .remedy(GPL_FIX),
            Some(Enforcement::NotEnforced) => CheckResult::pass(
                id,
                "the hooks are exported plain, which this kernel still accepts (a kernel update that brings the GPL-only rule will break it)",
            ),
            _ => CheckResult::warn(
                id,
                "the hooks are exported plain and it is not known whether this kernel refuses that",
            )
            .remedy(format!("{GPL_FIX}, or confirm with `nfs-gds doctor --probe`")),
        }
    };
    let mut result = f.symbols.iter().fold(result, |r, s| {
        r.with(s.symbol.clone(), export_word(&s.export))
    });
    if plain && not_exported.is_empty() && unrecognised.is_none() {
        let evidence = rule.map_or_else(|| "not judged".to_string(), |r| r.evidence.clone());
        result = result.with("kernel rule", evidence);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::{self as b, DKMS_RPCRDMA};
    use crate::host::modules::loaded_build::LoadedBuild;
    use crate::kmod::RPCRDMA_HOOKS;

    fn exporting(export: Export, rule: Option<Enforcement>) -> HostFacts {
        HostFacts::builder()
            .rpcrdma(b::rpcrdma(DKMS_RPCRDMA, true, export, false))
            .gpl_rule(rule.map(|enforcement| GplRule {
                enforcement,
                evidence: "Linux 6.8 with the GPL-only __symbol_get rule".into(),
            }))
            .build()
    }

    #[test]
    fn passes_gpl_exports() {
        let r = run(&exporting(Export::Gpl, None));
        says(&r, Status::Pass, &["exported GPL", "every kernel accepts"]);
        assert_eq!(seen(&r, RPCRDMA_HOOKS[0]), "EXPORT_SYMBOL_GPL");
        assert!(r.evidence.iter().all(|e| e.what != "kernel rule"), "{r:?}");
    }

    #[test]
    fn plain_exports_are_judged_by_the_kernel_rule() {
        let r = run(&exporting(Export::Plain, Some(Enforcement::Enforced)));
        says(
            &r,
            Status::Fail,
            &["plain EXPORT_SYMBOL", "refuses __symbol_get"],
        );
        assert_eq!(seen(&r, RPCRDMA_HOOKS[1]), "EXPORT_SYMBOL (plain)");
        assert!(seen(&r, "kernel rule").contains("GPL-only"));
        assert_eq!(r.fixes, vec![Fix::GplExport]);
        assert_eq!(remedy(&r), GPL_FIX);

        let r = run(&exporting(Export::Plain, Some(Enforcement::NotEnforced)));
        says(&r, Status::Pass, &["exported plain", "still accepts"]);

        let r = run(&exporting(Export::Plain, None));
        says(&r, Status::Warn, &["not known whether this kernel refuses"]);
        assert_eq!(seen(&r, "kernel rule"), "not judged");
        assert!(remedy(&r).contains("doctor --probe"));
    }

    #[test]
    fn fails_hooks_that_are_not_exported() {
        let r = run(&exporting(Export::NotExported, None));
        says(&r, Status::Fail, &["defined but not exported", "and"]);
        assert_eq!(seen(&r, RPCRDMA_HOOKS[0]), "not exported");
        assert_eq!(r.fixes, vec![Fix::GplExport]);
    }

    #[test]
    fn warns_of_an_unrecognised_export_section() {
        let r = run(&exporting(
            Export::Unrecognised {
                section: "__ksymtab_weird".into(),
            },
            None,
        ));
        says(&r, Status::Warn, &["does not recognise"]);
        assert_eq!(
            seen(&r, RPCRDMA_HOOKS[0]),
            "in unrecognised section __ksymtab_weird"
        );
    }

    #[test]
    fn skips_what_other_checks_own() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["not defined", "rpcrdma-hooks"]);
        let r = run(&HostFacts::builder().with(|f| f.rpcrdma.file = None).build());
        says(&r, Status::Skip, &["no rpcrdma module file"]);
        let mut rp = b::rpcrdma(DKMS_RPCRDMA, true, Export::Plain, true);
        rp.loaded_build = Some(LoadedBuild::OtherBuild);
        let r = run(&HostFacts::builder().rpcrdma(rp).build());
        says(&r, Status::Skip, &["rpcrdma-next-load"]);
    }

    #[test]
    fn warns_for_a_built_in_rpcrdma() {
        let r = run(&HostFacts::builder().rpcrdma(b::built_in()).build());
        says(
            &r,
            Status::Warn,
            &["built in", "cannot be read from kallsyms"],
        );
        assert!(remedy(&r).contains("--probe"));
    }

    #[test]
    fn a_plain_export_of_the_kernels_own_rpcrdma_is_not_an_ofed_upgrade() {
        let facts = HostFacts::builder()
            .rpcrdma(b::rpcrdma(
                "kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst",
                true,
                Export::Plain,
                false,
            ))
            .gpl_rule(Some(GplRule {
                enforcement: Enforcement::Enforced,
                evidence: "Linux 7.0".into(),
            }))
            .build();
        let r = run(&facts);
        says(&r, Status::Fail, &["plain EXPORT_SYMBOL"]);
        assert_eq!(remedy(&r), IN_TREE_GPL_FIX);
        assert_eq!(r.fixes, vec![Fix::GplExport]);
    }
}
