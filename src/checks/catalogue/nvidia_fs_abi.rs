//! `nvidia-fs-abi`: the symbol CRCs the nvidia-fs file modprobe would load was built against
//! agree with what the GPU driver's `nvidia.ko` exports (`nvidia_p2p_*`), so the next load is
//! not refused with `disagrees about version of symbol`. From driver R580.82.05 the GPU driver's
//! peer-to-peer interface changed, and NVIDIA requires nvidia-fs to be rebuilt after every
//! GPU-driver install: an nvidia-fs built against the previous driver is exactly this mismatch.

use super::abi_common::{
    file_name, judged_without_crcs, log_evidence, mismatched, modversions_evidence,
    unreadable_providers,
};
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::HostFacts;
use crate::kmod::abi::AbiVerdict;
use crate::kmod::NVIDIA_FS;

pub const ID: CheckId = CheckId::new("nvidia-fs-abi");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the symbol CRCs the nvidia-fs file was built against match what the GPU driver (`nvidia.ko`, `nvidia_p2p_*`) exports, so its next load is not refused with `disagrees about version of symbol` (nvidia-fs must be rebuilt after every GPU-driver install since R580.82.05); on a kernel built without CONFIG_MODVERSIONS, its vermagic is this kernel's and its BTF, where it has one, fits this kernel's",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: false,
};

/// What rebuilds nvidia-fs against the installed driver, outside doctor.
pub const REBUILD: &str = "rebuild nvidia-fs against the installed GPU driver: `dkms install nvidia-fs/<version> -k $(uname -r)` (after `dkms remove`), `apt install --reinstall nvidia-fs-dkms`, or restart the GPU Operator's nvidia-fs container; from driver R580.82.05 on, NVIDIA requires nvidia-fs to be rebuilt after every GPU-driver install";

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let load = &facts.rpcrdma_load;
    let Some(file) = &load.nvidia_fs_file else {
        return CheckResult::skip(
            id,
            "no nvidia-fs module file to check (see nvidia-fs-loaded)",
        );
    };
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            return CheckResult::unknown(
                id,
                format!("the symbol versions of the nvidia-fs file could not be read: {e}"),
            )
        }
    };
    let loaded = facts.nvidia_fs.loaded;
    let name = file_name(&file.path);
    let result = match &load.nvidia_fs_abi {
        None => CheckResult::unknown(id, "the symbol versions were not compared"),
        Some(AbiVerdict::NotApplicable { .. }) if load.nvidia_fs_crcless.is_some() => {
            let verdict = load.nvidia_fs_crcless.as_ref().expect("matched as present");
            judged_without_crcs(id, &file.path, verdict, |summary| refused(loaded, summary))
        }
        Some(AbiVerdict::NotApplicable { reason }) => CheckResult::skip(id, reason.clone()),
        Some(AbiVerdict::Unversioned { reason }) => refused(loaded, format!("{name}: {reason}")),
        Some(AbiVerdict::Compared(r)) if !r.mismatches.is_empty() => mismatched(
            &file.path,
            NVIDIA_FS,
            r,
            ", it was built against another GPU driver than the one installed",
            |summary| refused(loaded, summary),
        ),
        Some(AbiVerdict::Compared(r)) => {
            let unreadable = unreadable_providers(r);
            if !unreadable.is_empty() {
                CheckResult::warn(
                    id,
                    format!(
                        "{} import(s) agree with their providers, but the CRCs of {} could not be read",
                        r.matched,
                        unreadable.len()
                    ),
                )
                .with("unreadable providers", unreadable.join("; "))
            } else if r.matched == 0 {
                CheckResult::skip(
                    id,
                    "none of nvidia-fs's versioned imports comes from a module that modules.symbols names (is the GPU driver installed for this kernel?): nothing to compare",
                )
            } else if !load.nvidia_fs_divergent.is_empty() && !loaded {
                let names: Vec<String> = load
                    .nvidia_fs_divergent
                    .iter()
                    .map(|d| format!("{} (loaded build-id {})", d.module, d.loaded_build_id))
                    .collect();
                CheckResult::warn(
                    id,
                    format!(
                        "{name}'s {} compared imports agree with the GPU driver's file, but {} is loaded from another build (a driver installed without a reboot), whose CRCs the loader would use",
                        r.matched,
                        names.join(", ")
                    ),
                )
                .remedy("reboot (or reload the GPU driver) so the loaded nvidia is the file nvidia-fs was built against, then run the check again")
            } else {
                CheckResult::pass(
                    id,
                    format!(
                        "{name}: all {} imports provided by modules agree with their export CRCs",
                        r.matched
                    ),
                )
            }
            .with("modversions", modversions_evidence(facts))
        }
    };
    let result = result.with("file", file.path.display().to_string());
    log_evidence(facts, NVIDIA_FS)
        .into_iter()
        .fold(result, |r, l| {
            r.with(format!("kernel log line {}", l.line_number), l.line)
        })
}

/// A refusal: a failure when nvidia_fs is not loaded (the next GDS start loads this file), a
/// warning while a loaded build serves and only its next load would be refused.
fn refused(loaded: bool, summary: String) -> CheckResult {
    let id = ID;
    if loaded {
        CheckResult::warn(
            id,
            format!("{summary}; the loaded nvidia_fs serves now, but its next load (after a reboot or a driver restart) fails"),
        )
        .fix(Fix::RebuildNvidiaFs)
        .remedy(REBUILD)
    } else {
        CheckResult::fail(id, summary)
            .fix(Fix::RebuildNvidiaFs)
            .remedy(REBUILD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::abi_common::fixtures::{compared, mismatch, modversions_on};
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder as b;
    use crate::host::modules::module_load::DivergentProvider;
    use crate::kmod::load_facts::SignatureFacts;

    const NVFS: &str = "updates/dkms/nvidia-fs.ko";

    /// The ordinary node with an nvidia-fs file whose imports were compared as `abi`.
    fn judged(abi: AbiVerdict, loaded: bool) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.nvidia_fs.loaded = loaded;
                f.rpcrdma_load.nvidia_fs_file =
                    Some(Ok(b::load_facts(NVFS, SignatureFacts::Unsigned)));
                f.rpcrdma_load.nvidia_fs_abi = Some(abi);
                f.rpcrdma_load.modversions = modversions_on();
            })
            .build()
    }

    #[test]
    fn passes_when_the_p2p_imports_agree_with_nvidia_ko() {
        let r = run(&judged(compared(9, vec![], vec![]), false));
        says(&r, Status::Pass, &["nvidia-fs.ko: all 9 imports"]);
        assert!(seen(&r, "file").ends_with(NVFS));
        assert!(seen(&r, "modversions").contains("CONFIG_MODVERSIONS=y"));
    }

    #[test]
    fn fails_an_nvidia_fs_built_against_another_driver_and_names_the_rebuild() {
        let r = run(&judged(
            compared(
                7,
                vec![
                    mismatch("nvidia_p2p_get_pages_persistent", "nvidia"),
                    mismatch("nvidia_p2p_dma_map_pages", "nvidia"),
                ],
                vec![],
            ),
            false,
        ));
        says(
            &r,
            Status::Fail,
            &[
                "nvidia-fs.ko wants nvidia_p2p_get_pages_persistent 0x12345678",
                "nvidia.ko (a DKMS build (updates/dkms/), updates/dkms/nvidia.ko) exports 0x9abcdef0",
                "nvidia_fs: disagrees about version of symbol nvidia_p2p_get_pages_persistent",
                "another GPU driver",
                "1 more",
            ],
        );
        assert_eq!(r.fixes, vec![Fix::RebuildNvidiaFs]);
        let rem = remedy(&r);
        for w in [
            "dkms install nvidia-fs",
            "apt install --reinstall nvidia-fs-dkms",
            "nvidia-fs container",
            "R580.82.05",
        ] {
            assert!(rem.contains(w), "{w}: {rem}");
        }
        assert_eq!(
            seen(&r, "compared"),
            "7 agree, 2 disagree, 0 not comparable"
        );
        assert!(
            seen(&r, "import nvidia_p2p_dma_map_pages").contains("wants nvidia_p2p_dma_map_pages")
        );
    }

    #[test]
    fn a_loaded_nvidia_fs_only_warns_of_its_next_load() {
        let r = run(&judged(
            compared(3, vec![mismatch("nvidia_p2p_put_pages", "nvidia")], vec![]),
            true,
        ));
        says(
            &r,
            Status::Warn,
            &["the loaded nvidia_fs serves now", "next load"],
        );
        assert_eq!(r.fixes, vec![Fix::RebuildNvidiaFs]);
    }

    #[test]
    fn an_unversioned_build_is_refused_as_a_mismatch_is() {
        let r = run(&judged(
            AbiVerdict::Unversioned {
                reason: "no __versions table".into(),
            },
            false,
        ));
        says(&r, Status::Fail, &["nvidia-fs.ko: no __versions table"]);
    }

    #[test]
    fn a_driver_loaded_from_another_build_warns() {
        let mut facts = judged(compared(4, vec![], vec![]), false);
        facts.rpcrdma_load.nvidia_fs_divergent = vec![DivergentProvider {
            module: "nvidia".into(),
            loaded_build_id: "ab12".into(),
        }];
        let r = run(&facts);
        says(
            &r,
            Status::Warn,
            &["nvidia (loaded build-id ab12)", "another build"],
        );
        assert!(remedy(&r).contains("reboot"));
    }

    #[test]
    fn skips_or_is_unknown_where_nothing_can_be_compared() {
        says(
            &run(&HostFacts::builder().build()),
            Status::Skip,
            &["no nvidia-fs module file"],
        );
        says(
            &run(&judged(compared(0, vec![], vec![]), false)),
            Status::Skip,
            &["nothing to compare"],
        );
        says(
            &run(&judged(
                AbiVerdict::NotApplicable {
                    reason: "the kernel is built without CONFIG_MODVERSIONS".into(),
                },
                false,
            )),
            Status::Skip,
            &["without CONFIG_MODVERSIONS"],
        );
        let r = run(&HostFacts::builder()
            .with(|f| f.rpcrdma_load.nvidia_fs_file = Some(Err("truncated nvidia-fs.ko".into())))
            .build());
        says(
            &r,
            Status::Unknown,
            &["could not be read: truncated nvidia-fs.ko"],
        );
    }

    #[test]
    fn shows_the_kernels_own_refusal_from_the_log() {
        let mut facts = judged(
            compared(3, vec![mismatch("nvidia_p2p_get_pages", "nvidia")], vec![]),
            false,
        );
        facts.kernel_log = Some(
            "[   9.1] nvidia_fs: disagrees about version of symbol nvidia_p2p_get_pages\n".into(),
        );
        let r = run(&facts);
        assert!(
            r.evidence
                .iter()
                .any(|e| e.what.starts_with("kernel log line")
                    && e.seen.contains("nvidia_p2p_get_pages")),
            "{r:#?}"
        );
    }
}
