//! `rpcrdma-hooks`: the rpcrdma module modprobe would load defines both nvfs DMA hooks (for a
//! built-in rpcrdma, the kernel image does, per kallsyms).
//!
//! A file that defines only a versioned variant of a hook (`rpcrdma_v2_register_nvfs_dma_ops`,
//! as NVIDIA versions the NVMe hooks) has neither "the hooks" nor "no hooks": where the nvidia-fs
//! that will bind them is a release known to ask for the unversioned names, the pair is judged
//! (not bound: fail); otherwise the ABI is unknown (warn) and the live probe decides.

use super::rpcrdma_common::{file_evidence, file_is_next_load, missing_hooks_remedy, origin_of};
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level, Status};
use crate::host::modules::ModuleOrigin;
use crate::host::platform::nvidia_fs::{
    asks_unversioned_rpcrdma_hooks, rpcrdma_hook_interface, HookInterface,
};
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
                } else if let Some(names) = built_in_versioned(facts) {
                    versioned_verdict(
                        id,
                        "the built-in rpcrdma",
                        &names,
                        &crate::host::modules::loaded_hooks::missing(&found),
                        facts.nvidia_fs.binding_version(),
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
    let r = file_hooks(f, origin_of(rp), facts.nvidia_fs.binding_version());
    match losing_link(facts) {
        Some(link) if r.status == Status::Fail && r.fixes.contains(&Fix::HookedRpcrdma) => {
            let dir = link.rel_path.rsplit_once('/').map_or("", |(d, _)| d);
            r.with("installed, not loaded", link.rel_path.clone()).remedy(format!(
                "a hooked rpcrdma is installed as {} but loses to this file: weak-updates/ is searched after the kernel's own modules and no `override rpcrdma * {dir}` line in /etc/depmod.d ranks it first; add that line and run depmod, or install the build for this kernel",
                link.rel_path
            ))
        }
        _ => r,
    }
}

/// The versioned hook names kallsyms lists for a built-in rpcrdma, when there are any.
fn built_in_versioned(facts: &HostFacts) -> Option<Vec<String>> {
    let Some(Ok(entries)) = &facts.rpcrdma.kallsyms else {
        return None;
    };
    let names = crate::host::modules::loaded_hooks::versioned_in_kallsyms(entries, true);
    (!names.is_empty()).then_some(names)
}

/// An installed `weak-updates/` rpcrdma of a vendor that the next load does not take.
fn losing_link(facts: &HostFacts) -> Option<&crate::host::modules::module_owners::ModuleCopy> {
    facts
        .owners
        .as_ref()
        .ok()?
        .get("rpcrdma")?
        .losing_weak_link()
}

/// `rpcrdma-hooks` for one module file: both hooks defined? `origin` chooses the remedy;
/// `nvidia_fs` is the release that will bind them, when known (it judges a versioned ABI).
pub fn file_hooks(
    f: &ModuleFile,
    origin: Option<&ModuleOrigin>,
    nvidia_fs: Option<&str>,
) -> CheckResult {
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
    let missing = f.missing();
    let variants = &f.versioned_variants;
    if missing.is_empty() {
        let r = file_evidence(CheckResult::pass(id, "both nvfs hooks are defined"), f)
            .with("symbols", RPCRDMA_HOOKS.join(", "));
        if variants.is_empty() {
            r
        } else {
            r.with("also (versioned)", variants.join(", "))
        }
    } else if !variants.is_empty() {
        versioned_only(f, &missing, nvidia_fs)
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

/// The file defines versioned hook names only: judged against what `nvidia_fs` asks for.
fn versioned_only(f: &ModuleFile, missing: &[&str], nvidia_fs: Option<&str>) -> CheckResult {
    let r = versioned_verdict(
        ID,
        &f.path.display().to_string(),
        &f.versioned_variants,
        missing,
        nvidia_fs,
    );
    file_evidence(r, f)
}

/// What `subject` (a file, or the loaded rpcrdma) exporting only the versioned hook `names`
/// in place of `missing` means, judged against the nvidia-fs release that will bind them: a
/// release known to ask for the unversioned names binds nothing (fail); otherwise the ABI is
/// unknown (warn) and the live probe decides.
pub fn versioned_verdict(
    id: CheckId,
    subject: &str,
    names: &[String],
    missing: &[&str],
    nvidia_fs: Option<&str>,
) -> CheckResult {
    let names = names.join(", ");
    let missing = missing.join(" and ");
    let with = |r: CheckResult| {
        r.with("versioned", names.clone())
            .with("missing", missing.replace(" and ", ", "))
    };
    match nvidia_fs {
        Some(v) if asks_unversioned_rpcrdma_hooks(v) == Some(true) => with(CheckResult::fail(
            id,
            format!(
                "{subject} exports only {names}, a hook ABI nvidia-fs {v} does not ask for (it takes {missing}): nvidia-fs binds nothing and GPU I/O falls back to bounce buffers"
            ),
        ))
        .with("nvidia-fs", v.to_string())
        .fix(Fix::HookedRpcrdma)
        .remedy(format!("pair them: an rpcrdma that exports {missing} (the ABI nvidia-fs {v} binds), or an nvidia-fs release that asks for {names}")),
        _ => {
            let who = nvidia_fs.map_or_else(
                || "no nvidia-fs release is known here".to_string(),
                |v| match rpcrdma_hook_interface(v) {
                    Some(HookInterface::NotPublic) => format!("nvidia-fs {v}'s hook interface is not public (NVIDIA publishes its source up to 2.28.4 only), so which names it asks for is not known"),
                    _ => format!("nvidia-fs {v} is newer than any release whose hook names are known"),
                },
            );
            with(CheckResult::warn(
                id,
                format!("{subject} exports {names} instead of {missing}: an unknown hook ABI, and {who}; the live registration probe decides whether they are bound"),
            ))
            .remedy("run `nfs-gds check --probe` (or doctor --probe): `rpcrdma:` in /proc/driver/nvidia-fs/modules means nvidia-fs bound this ABI")
        }
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

        let v2 = crate::host::modules::kallsyms::find_symbols(
            "0000000000000000 T rpcrdma_v2_register_nvfs_dma_ops\n",
            &RPCRDMA_HOOKS,
        );
        says(
            &run(&built_in(Ok(v2))),
            Status::Warn,
            &[
                "the built-in rpcrdma exports rpcrdma_v2_register_nvfs_dma_ops",
                "unknown hook ABI",
            ],
        );

        let r = run(&built_in(Err("permission denied".into())));
        says(
            &r,
            Status::Unknown,
            &["kallsyms cannot be read: permission denied"],
        );
    }

    fn versioned(nvidia_fs: Option<&str>, unversioned_too: bool) -> HostFacts {
        let mut rp = b::rpcrdma(DKMS_RPCRDMA, unversioned_too, Export::Gpl, false);
        if let Some(Ok(f)) = &mut rp.file {
            f.versioned_variants = vec![
                "rpcrdma_v2_register_nvfs_dma_ops".into(),
                "rpcrdma_v2_unregister_nvfs_dma_ops".into(),
            ];
        }
        HostFacts::builder()
            .rpcrdma(rp)
            .nvidia_fs_release(nvidia_fs)
            .build()
    }

    #[test]
    fn a_versioned_only_rpcrdma_with_nvidia_fs_2_28_is_not_bound() {
        let r = run(&versioned(Some("2.28.4"), false));
        says(
            &r,
            Status::Fail,
            &[
                "exports only rpcrdma_v2_register_nvfs_dma_ops",
                "nvidia-fs 2.28.4 does not ask for",
                "binds nothing",
            ],
        );
        assert_eq!(r.fixes, vec![Fix::HookedRpcrdma]);
        assert!(
            !r.summary.contains("built without GPUDirect Storage"),
            "{r:?}"
        );
    }

    #[test]
    fn a_versioned_only_rpcrdma_with_an_unknown_nvidia_fs_is_an_unknown_abi() {
        for nvfs in [None, Some("2.30.1")] {
            let r = run(&versioned(nvfs, false));
            says(&r, Status::Warn, &["unknown hook ABI", "probe decides"]);
            assert!(r.fixes.is_empty(), "{r:?}");
        }
    }

    #[test]
    fn nvidia_fs_2_29_and_2_30_are_an_interface_not_public_not_2_28_4s() {
        for nvfs in ["2.29.4", "2.30"] {
            let r = run(&versioned(Some(nvfs), false));
            says(
                &r,
                Status::Warn,
                &[
                    &format!("nvidia-fs {nvfs}'s hook interface is not public"),
                    "probe decides",
                ],
            );
            assert!(r.fixes.is_empty(), "{r:?}");
        }
    }

    #[test]
    fn versioned_names_beside_the_unversioned_ones_still_pass() {
        let r = run(&versioned(Some("2.28.4"), true));
        says(&r, Status::Pass, &["both nvfs hooks are defined"]);
        assert_eq!(
            seen(&r, "also (versioned)"),
            "rpcrdma_v2_register_nvfs_dma_ops, rpcrdma_v2_unregister_nvfs_dma_ops"
        );
    }
}
