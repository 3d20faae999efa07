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
        return match rp.loaded_hooks_unknown() {
            Some(e) => CheckResult::unknown(id, format!("rpcrdma is built in and {e}")),
            None => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::{self as b, DKMS_RPCRDMA};
    use crate::host::modules::loaded_build::LoadedBuild;
    use crate::kmod::Export;

    fn built_in(
        kallsyms: Result<Vec<crate::host::modules::kallsyms::KallsymsEntry>, String>,
    ) -> HostFacts {
        let mut rp = b::built_in();
        rp.kallsyms = Some(kallsyms);
        HostFacts::builder().rpcrdma(rp).build()
    }

    #[test]
    fn fails_the_distributions_rpcrdma_and_says_so() {
        let r = run(&HostFacts::builder().build());
        says(
            &r,
            Status::Fail,
            &[
                "has no rpcrdma_register_nvfs_dma_ops or rpcrdma_unregister_nvfs_dma_ops",
                "without GPUDirect Storage",
            ],
        );
        assert_eq!(seen(&r, "missing"), RPCRDMA_HOOKS.join(", "));
        assert_eq!(r.fixes, vec![Fix::HookedRpcrdma]);
        assert!(remedy(&r).contains("distribution's own rpcrdma"));
    }

    #[test]
    fn a_dkms_build_without_hooks_is_told_to_rebuild() {
        let r = run(&HostFacts::builder()
            .rpcrdma(b::rpcrdma(DKMS_RPCRDMA, false, Export::Gpl, false))
            .build());
        says(&r, Status::Fail, &["without GPUDirect Storage"]);
        assert!(remedy(&r).contains("--with-gds"), "{r:?}");
    }

    #[test]
    fn passes_a_file_with_both_hooks() {
        let r = run(&HostFacts::builder()
            .rpcrdma(b::rpcrdma(DKMS_RPCRDMA, true, Export::Gpl, false))
            .build());
        says(&r, Status::Pass, &["both nvfs hooks are defined"]);
        assert!(seen(&r, "file").ends_with(DKMS_RPCRDMA));
        assert_eq!(seen(&r, "symbols"), RPCRDMA_HOOKS.join(", "));
    }

    #[test]
    fn a_stripped_file_is_unknown() {
        let r = run(&HostFacts::builder()
            .with(|f| {
                if let Some(Ok(file)) = &mut f.rpcrdma.file {
                    file.has_symtab = false;
                }
            })
            .build());
        says(&r, Status::Unknown, &["no symbol table"]);
        assert_eq!(seen(&r, "compression"), "zstd");
    }

    #[test]
    fn skips_without_a_file_or_while_another_build_is_loaded() {
        let r = run(&HostFacts::builder().with(|f| f.rpcrdma.file = None).build());
        says(
            &r,
            Status::Skip,
            &["no rpcrdma module file", "rpcrdma-module"],
        );

        let mut rp = b::rpcrdma(DKMS_RPCRDMA, false, Export::Gpl, true);
        rp.loaded_build = Some(LoadedBuild::OtherBuild);
        let r = run(&HostFacts::builder().rpcrdma(rp).build());
        says(
            &r,
            Status::Skip,
            &["not from this file", "rpcrdma-next-load"],
        );
        assert!(seen(&r, "file").ends_with(DKMS_RPCRDMA));
    }

    #[test]
    fn judges_a_built_in_rpcrdma_by_kallsyms() {
        let r = run(&HostFacts::builder().rpcrdma(b::built_in()).build());
        says(&r, Status::Pass, &["built-in rpcrdma defines both"]);
        assert!(seen(&r, "/proc/kallsyms").contains("rpcrdma_register_nvfs_dma_ops"));

        let r = run(&built_in(Ok(Vec::new())));
        says(&r, Status::Fail, &["built-in rpcrdma lacks the nvfs hooks"]);
        assert_eq!(r.fixes, vec![Fix::HookedRpcrdma]);

        let r = run(&built_in(Err("permission denied".into())));
        says(
            &r,
            Status::Unknown,
            &["kallsyms cannot be read: permission denied"],
        );
    }
}
