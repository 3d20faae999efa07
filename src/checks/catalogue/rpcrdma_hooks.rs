//! `rpcrdma-hooks`: the rpcrdma module modprobe would load defines both nvfs DMA hooks (for a
//! built-in rpcrdma, the kernel image does, per kallsyms).

use super::rpcrdma_common::{file_evidence, file_is_next_load, missing_hooks_remedy, origin_of};
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::modules::ModuleOrigin;
use crate::host::HostFacts;
use crate::kmod::{ModuleFile, RPCRDMA_HOOKS};

pub const ID: CheckId = CheckId::new("rpcrdma-hooks");

pub static CHECK: Check = Check {
    id: ID,
    doc: "that file defines both nvfs hooks (when rpcrdma is loaded from another build, `rpcrdma-next-load` judges the file instead)",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return match &rp.kallsyms {
            Err(e) => CheckResult::unknown(
                id,
                format!("rpcrdma is built in and kallsyms cannot be read: {e}"),
            ),
            Ok(_) => {
                let found = rp.loaded_hooks();
                if found.len() == RPCRDMA_HOOKS.len() {
                    CheckResult::pass(id, "the built-in rpcrdma defines both nvfs hooks").with(
                        "/proc/kallsyms",
                        found
                            .iter()
                            .map(|e| e.line.as_str())
                            .collect::<Vec<_>>()
                            .join(" | "),
                    )
                } else {
                    CheckResult::fail(id, "the built-in rpcrdma lacks the nvfs hooks")
                        .fix(Fix::HookedRpcrdma)
                        .remedy("boot a kernel whose rpcrdma has GDS support, or build rpcrdma as a module with it")
                }
            }
        };
    }
    if rp.loaded_elsewhere() {
        return file_is_next_load(id, rp);
    }
    let Some(f) = rp.inspected() else {
        return CheckResult::skip(id, "no rpcrdma module file to inspect (see rpcrdma-module)");
    };
    file_hooks(f, origin_of(rp))
}

/// `rpcrdma-hooks` for one module file: both hooks defined? `origin` chooses the remedy.
pub fn file_hooks(f: &ModuleFile, origin: Option<&ModuleOrigin>) -> CheckResult {
    let id = ID;
    if !f.has_symtab {
        return file_evidence(
            CheckResult::unknown(
                id,
                "the module file has no symbol table (fully stripped), so its hooks cannot be seen",
            ),
            f,
        );
    }
    let missing: Vec<&str> = f
        .symbols
        .iter()
        .filter(|s| !s.defined)
        .map(|s| s.symbol.as_str())
        .collect();
    if missing.is_empty() {
        file_evidence(CheckResult::pass(id, "both nvfs hooks are defined"), f)
            .with("symbols", RPCRDMA_HOOKS.join(", "))
    } else {
        file_evidence(
            CheckResult::fail(
                id,
                format!(
                    "{} has no {}: rpcrdma was built without GPUDirect Storage support, so GPU I/O falls back to bounce buffers",
                    f.path.display(),
                    missing.join(" or ")
                ),
            ),
            f,
        )
        .with("missing", missing.join(", "))
        .fix(Fix::HookedRpcrdma)
        .remedy(missing_hooks_remedy(origin))
    }
}
