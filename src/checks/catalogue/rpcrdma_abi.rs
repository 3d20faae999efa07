//! `rpcrdma-abi`: the symbol CRCs the rpcrdma file modprobe would load was built against agree
//! with what its providers export (MOFED replaces ib_core and rdma_cm), so modprobe does not
//! refuse it with `disagrees about version of symbol`.

use super::abi_common::{
    judged_without_crcs, log_evidence, mismatched, modversions_evidence, unreadable_providers,
};
use super::rpcrdma_common::origin_of;
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::modules::ModuleOrigin;
use crate::host::HostFacts;
use crate::kmod::abi::{AbiVerdict, Uncompared};
use crate::kmod::RPCRDMA;

pub const ID: CheckId = CheckId::new("rpcrdma-abi");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the symbol CRCs the rpcrdma file was built against match what its providers (ib_core, rdma_cm, …) export, so modprobe does not refuse it with `disagrees about version of symbol`; on a kernel built without CONFIG_MODVERSIONS, its vermagic is this kernel's and its BTF (where it has one and CONFIG_MODULE_ALLOW_BTF_MISMATCH is off) was built against this kernel's",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    let load = &facts.rpcrdma_load;
    if rp.is_builtin() {
        return CheckResult::skip(
            id,
            "rpcrdma is built in: it has no symbol versions to check",
        );
    }
    let Some(file) = &load.file else {
        return CheckResult::skip(id, "no rpcrdma module file to check (see rpcrdma-module)");
    };
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            return CheckResult::unknown(
                id,
                format!("the symbol versions of the rpcrdma file could not be read: {e}"),
            )
        }
    };
    let log = log_evidence(facts, RPCRDMA);
    let result = match &load.abi {
        None => CheckResult::unknown(id, "the symbol versions were not compared"),
        Some(AbiVerdict::NotApplicable { .. }) if load.crcless.is_some() => {
            let verdict = load.crcless.as_ref().expect("matched as present");
            judged_without_crcs(id, &file.path, verdict, |summary| {
                refused_without_crcs(facts, summary)
            })
        }
        Some(AbiVerdict::NotApplicable { reason }) => CheckResult::skip(id, reason.clone()),
        Some(AbiVerdict::Unversioned { reason }) => {
            refused(facts, format!("{}: {reason}", file.path.display()))
        }
        Some(AbiVerdict::Compared(r)) if !r.mismatches.is_empty() => {
            mismatched(&file.path, RPCRDMA, r, "", |summary| {
                refused(facts, summary)
            })
        }
        Some(AbiVerdict::Compared(r)) => {
            let from = r.build_symvers.as_ref().map(|p| {
                format!(
                    "{} (the in-tree providers' and the kernel image's)",
                    p.display()
                )
            });
            let unreadable = unreadable_providers(r);
            let image = r
                .uncompared
                .iter()
                .filter(|u| matches!(u, Uncompared::KernelImage { .. }))
                .count();
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
                    format!("none of the {} versioned imports comes from a module that modules.symbols names: nothing to compare (the kernel image's own CRCs are in no module file)", image),
                )
            } else if !load.divergent_providers.is_empty() && !rp.loaded {
                let names: Vec<String> = load
                    .divergent_providers
                    .iter()
                    .map(|d| format!("{} (loaded build-id {})", d.module, d.loaded_build_id))
                    .collect();
                CheckResult::warn(
                    id,
                    format!(
                        "the {} compared imports agree with the provider files, but {} is loaded from another build, whose CRCs the loader would use and nothing shows",
                        r.matched,
                        names.join(", ")
                    ),
                )
                .remedy("reboot (or reload the providers) so the loaded modules are the files on disk, then run the check again")
            } else {
                let summary = match (r.image_matched, &r.build_symvers) {
                    (0, _) | (_, None) => format!(
                        "all {} imports provided by modules agree with their export CRCs ({image} provided by the kernel image, not compared)",
                        r.matched
                    ),
                    (from_image, Some(symvers)) => format!(
                        "all {} imports agree with their providers' export CRCs ({from_image} of them the kernel image's, per {}{})",
                        r.matched,
                        symvers.display(),
                        match image {
                            0 => String::new(),
                            n => format!("; {n} more provided by the kernel image are not in it, not compared"),
                        }
                    ),
                };
                CheckResult::pass(id, summary)
            }
            .with("modversions", modversions_evidence(facts))
            .with_if("crcs from", from)
        }
    };
    let result = result.with("file", file.path.display().to_string());
    log.into_iter().fold(result, |r, l| {
        r.with(format!("kernel log line {}", l.line_number), l.line)
    })
}

/// A refusal: a failure when rpcrdma is not loaded (the first RDMA mount loads this file), a
/// warning when a loaded build carries mounts now and only the next load would be refused.
fn refused(facts: &HostFacts, summary: String) -> CheckResult {
    let id = ID;
    let remedy = remedy(origin_of(&facts.rpcrdma));
    if facts.rpcrdma.loaded {
        CheckResult::warn(
            id,
            format!("{summary}; the loaded rpcrdma serves mounts now, but the next load (after `modprobe -r` or a reboot) fails"),
        )
        .remedy(remedy)
    } else {
        CheckResult::fail(id, summary).fix(Fix::AbiRpcrdma).remedy(remedy)
    }
    .with("modversions", modversions_evidence(facts))
}

/// A refusal for the vermagic or the BTF: only a build for this kernel build loads.
fn refused_without_crcs(facts: &HostFacts, summary: String) -> CheckResult {
    let remedy = "install the rpcrdma built for this very kernel build: the kernel package's own, or a hooked build made against this kernel's headers (a DKMS build: its BTF's distilled base is relocated onto this kernel's types by name, which a build for this kernel passes)";
    if facts.rpcrdma.loaded {
        CheckResult::warn(
            ID,
            format!("{summary}; the loaded rpcrdma serves mounts now, but the next load (after `modprobe -r` or a reboot) fails"),
        )
    } else {
        CheckResult::fail(ID, summary)
    }
    .remedy(remedy)
}

fn remedy(origin: Option<&ModuleOrigin>) -> String {
    match origin {
        Some(ModuleOrigin::Inbox) => "this is the distribution's own rpcrdma, built against the kernel's own ib_core/rdma_cm, which MLNX_OFED / DOCA-OFED replaced: install the mlnx-nfsrdma built for this MOFED".into(),
        Some(_) => "this rpcrdma was built against another MLNX_OFED / DOCA-OFED than the one installed (an upgrade without a rebuild): rebuild mlnx-nfsrdma against the installed mlnx-ofa_kernel (`dkms install`), or install the mlnx-nfsrdma package of the same MOFED version".into(),
        None => "install the mlnx-nfsrdma built for the installed MLNX_OFED / DOCA-OFED".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::abi_common::fixtures::{compared, mismatch, modversions_on};
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::{self as b, INBOX_RPCRDMA};
    use crate::kmod::load_facts::SignatureFacts;

    /// The ordinary node with its rpcrdma file's symbol versions compared as `abi`.
    fn judged(abi: AbiVerdict, loaded: bool) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                f.rpcrdma.loaded = loaded;
                f.rpcrdma_load.file =
                    Some(Ok(b::load_facts(INBOX_RPCRDMA, SignatureFacts::Unsigned)));
                f.rpcrdma_load.abi = Some(abi);
                f.rpcrdma_load.modversions = modversions_on();
            })
            .build()
    }

    #[test]
    fn passes_when_every_provided_import_agrees() {
        let r = run(&judged(
            compared(
                12,
                vec![],
                vec![Uncompared::KernelImage {
                    symbol: "kfree".into(),
                }],
            ),
            false,
        ));
        says(
            &r,
            Status::Pass,
            &["all 12 imports", "1 provided by the kernel image"],
        );
        assert!(seen(&r, "modversions").contains("CONFIG_MODVERSIONS=y"));
        assert!(seen(&r, "file").ends_with(INBOX_RPCRDMA));
    }

    #[test]
    fn fails_a_crc_mismatch_as_modprobe_would() {
        let r = run(&judged(
            compared(
                10,
                vec![
                    mismatch("ib_drain_qp", "ib_core"),
                    mismatch("rdma_connect", "ib_core"),
                ],
                vec![],
            ),
            false,
        ));
        says(
            &r,
            Status::Fail,
            &[
                "rpcrdma.ko.zst wants ib_drain_qp 0x12345678",
                "disagrees about version of symbol ib_drain_qp",
                "1 more",
            ],
        );
        assert!(seen(&r, "import ib_drain_qp").contains(
            "ib_core.ko (a DKMS build (updates/dkms/), updates/dkms/ib_core.ko) exports 0x9abcdef0"
        ));
        assert_eq!(
            seen(&r, "compared"),
            "10 agree, 2 disagree, 0 not comparable"
        );
        assert_eq!(r.fixes, vec![Fix::AbiRpcrdma]);
        assert!(remedy(&r).contains("distribution's own rpcrdma"));
    }

    #[test]
    fn a_mismatch_only_warns_while_a_loaded_build_serves() {
        let r = run(&judged(
            compared(10, vec![mismatch("ib_drain_qp", "ib_core")], vec![]),
            true,
        ));
        says(&r, Status::Warn, &["the next load", "fails"]);
        assert!(r.fixes.is_empty());
    }

    #[test]
    fn warns_when_a_provider_cannot_be_read() {
        let unreadable = Uncompared::ProviderUnreadable {
            symbol: "ib_drain_qp".into(),
            provider: "ib_core".into(),
            reason: "truncated".into(),
        };
        let r = run(&judged(compared(3, vec![], vec![unreadable]), false));
        says(
            &r,
            Status::Warn,
            &["3 import(s) agree", "CRCs of 1 could not be read"],
        );
        assert_eq!(
            seen(&r, "unreadable providers"),
            "ib_drain_qp from ib_core: truncated"
        );
    }

    #[test]
    fn an_unversioned_file_is_refused_as_a_mismatch_is() {
        let r = run(&judged(
            AbiVerdict::Unversioned {
                reason: "no __versions table".into(),
            },
            false,
        ));
        says(&r, Status::Fail, &["rpcrdma.ko.zst: no __versions table"]);
    }

    #[test]
    fn skips_or_is_unknown_where_nothing_can_be_compared() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["no rpcrdma module file"]);
        let r = run(&judged(
            AbiVerdict::NotApplicable {
                reason: "the kernel is built without CONFIG_MODVERSIONS".into(),
            },
            false,
        ));
        says(&r, Status::Skip, &["without CONFIG_MODVERSIONS"]);
        let r = run(&judged(
            compared(
                0,
                vec![],
                vec![Uncompared::KernelImage {
                    symbol: "kfree".into(),
                }],
            ),
            false,
        ));
        says(&r, Status::Skip, &["nothing to compare"]);
        let r = run(&HostFacts::builder().rpcrdma(b::built_in()).build());
        says(&r, Status::Skip, &["built in"]);
        let r = run(&HostFacts::builder()
            .with(|f| f.rpcrdma_load.file = Some(Err("cannot read rpcrdma.ko.zst".into())))
            .build());
        says(
            &r,
            Status::Unknown,
            &["could not be read: cannot read rpcrdma.ko.zst"],
        );
    }

    #[test]
    fn shows_the_kernels_own_refusal_from_the_log() {
        let mut facts = judged(
            compared(10, vec![mismatch("ib_drain_qp", "ib_core")], vec![]),
            false,
        );
        facts.kernel_log =
            Some("[   12.5] rpcrdma: disagrees about version of symbol ib_drain_qp\n".into());
        let r = run(&facts);
        says(&r, Status::Fail, &["disagrees"]);
        assert!(
            r.evidence
                .iter()
                .any(|e| e.what.starts_with("kernel log line") && e.seen.contains("ib_drain_qp")),
            "{r:#?}"
        );
    }
}
