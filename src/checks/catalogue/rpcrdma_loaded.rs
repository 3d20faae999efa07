//! `rpcrdma-loaded`: the rpcrdma that is loaded (if any) has both hooks in `/proc/kallsyms`, not
//! plain-exported where this kernel refuses that.

use super::rpcrdma_common::{missing_hooks_remedy, origin_of, provenance_evidence, GPL_FIX};
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level, Status};
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::loaded_build::LoadedBuild;
use crate::host::HostFacts;
use crate::kmod::RPCRDMA_HOOKS;

pub const ID: CheckId = CheckId::new("rpcrdma-loaded");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the loaded rpcrdma (if loaded) has both hooks in `/proc/kallsyms` (and not plain-exported where that is refused)",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    provenance_evidence(judge(facts), &facts.rpcrdma)
}

fn judge(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return CheckResult::skip(id, "rpcrdma is built in (see rpcrdma-hooks)");
    }
    if !rp.loaded && !facts.modules_loadable() {
        return CheckResult::skip(
            id,
            format!(
                "this kernel cannot load modules ({}), so rpcrdma is never loaded from disk",
                super::rpcrdma_common::no_modules_evidence(facts)
            ),
        );
    }
    if !rp.loaded {
        return CheckResult::skip(
            id,
            "rpcrdma is not loaded; the kernel loads it from disk when the first RDMA mount starts",
        );
    }
    if let Err(e) = &rp.kallsyms {
        return CheckResult::unknown(
            id,
            format!("rpcrdma is loaded but kallsyms cannot be read: {e}"),
        );
    }
    let found = rp.loaded_hooks();
    let lines = found
        .iter()
        .map(|e| e.line.as_str())
        .collect::<Vec<_>>()
        .join(" | ");
    if found.len() < RPCRDMA_HOOKS.len() {
        let file_has_hooks = rp
            .inspected()
            .is_some_and(|f| f.has_symtab && f.symbols.iter().all(|s| s.defined));
        let outside = matches!(rp.loaded_build, Some(LoadedBuild::OutsideTree { .. }));
        let r = CheckResult::fail(
            id,
            "the loaded rpcrdma has no nvfs hooks (none in /proc/kallsyms)",
        )
        .with(
            "/proc/kallsyms",
            if lines.is_empty() {
                "no rpcrdma_*_nvfs_dma_ops [rpcrdma]".to_string()
            } else {
                lines
            },
        );
        let r = r.fix(Fix::ReloadRpcrdma);
        return if file_has_hooks {
            r.remedy("the module file on disk has the hooks but an older build is loaded: reload rpcrdma when no NFS/RDMA mount uses it (`modprobe -r rpcrdma && modprobe rpcrdma`), or reboot")
        } else {
            r.fix(Fix::HookedRpcrdma)
                .remedy(missing_hooks_remedy(if outside {
                    None
                } else {
                    origin_of(rp)
                }))
        };
    }
    let plain = rp.kallsyms_shows_license() && found.iter().any(|e| e.plain_export());
    let enforced = facts
        .gpl_rule
        .as_ref()
        .is_some_and(|r| r.enforcement == Enforcement::Enforced);
    if plain && enforced {
        let file_plain = rp.inspected().is_some_and(|f| {
            super::rpcrdma_hook_export::file_hook_export(f, facts.gpl_rule.as_ref()).status
                == Status::Fail
        });
        let r = CheckResult::fail(id, "the loaded rpcrdma exports its hooks plain (type T in kallsyms) and this kernel refuses that")
            .with("/proc/kallsyms", lines)
            .remedy(GPL_FIX);
        if file_plain {
            r.fix(Fix::GplExport).fix(Fix::ReloadRpcrdma)
        } else {
            r.fix(Fix::ReloadRpcrdma)
        }
    } else {
        CheckResult::pass(id, "the loaded rpcrdma carries both nvfs hooks")
            .with("/proc/kallsyms", lines)
    }
}
