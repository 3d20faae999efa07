//! `rpcrdma-loaded`: the rpcrdma that is loaded (if any) has both hooks in `/proc/kallsyms` (or
//! in the file it was loaded from, when the GNU build-ids say which), not plain-exported where
//! this kernel refuses that.

use super::rpcrdma_common::{missing_hooks_remedy, origin_of, provenance_evidence, GPL_FIX};
use super::rpcrdma_hooks::versioned_verdict;
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level, Status};
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::loaded_build::LoadedBuild;
use crate::host::modules::loaded_hooks;
use crate::host::HostFacts;
use crate::kmod::RPCRDMA_HOOKS;

pub const ID: CheckId = CheckId::new("rpcrdma-loaded");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the loaded rpcrdma (if loaded) has both hooks in `/proc/kallsyms`, or in its file when the build-ids match (and not plain-exported where that is refused)",
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
    if let Some(e) = rp.loaded_hooks_unknown() {
        return CheckResult::unknown(id, format!("rpcrdma is loaded but {e}"));
    }
    let found = rp.loaded_hooks();
    let lines = found
        .iter()
        .map(|e| e.line.as_str())
        .collect::<Vec<_>>()
        .join(" | ");
    let seen_in = rp.loaded_hooks_seen_in();
    let by_build_id = |r: CheckResult| match rp.kallsyms_skipped() {
        Some(why) => r.with("loaded build-id", why),
        None => r,
    };
    if found.len() < RPCRDMA_HOOKS.len() {
        if let Some(r) = versioned_loaded(facts) {
            return by_build_id(r);
        }
        let file_has_hooks = rp
            .inspected()
            .is_some_and(|f| f.has_symtab && f.symbols.iter().all(|s| s.defined));
        let outside = matches!(rp.loaded_build, Some(LoadedBuild::OutsideTree { .. }));
        let r = CheckResult::fail(
            id,
            format!("the loaded rpcrdma has no nvfs hooks (none in {seen_in})"),
        )
        .with(
            seen_in.as_str(),
            if lines.is_empty() {
                "no rpcrdma_*_nvfs_dma_ops [rpcrdma]".to_string()
            } else {
                lines
            },
        );
        let r = by_build_id(r);
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
        let how = if rp.kallsyms_skipped().is_some() {
            "in the file it was loaded from"
        } else {
            "type T in kallsyms"
        };
        let r = CheckResult::fail(
            id,
            format!(
                "the loaded rpcrdma exports its hooks plain ({how}) and this kernel refuses that"
            ),
        )
        .with(seen_in.as_str(), lines)
        .remedy(GPL_FIX);
        let r = by_build_id(r);
        if file_plain {
            r.fix(Fix::GplExport).fix(Fix::ReloadRpcrdma)
        } else {
            r.fix(Fix::ReloadRpcrdma)
        }
    } else {
        by_build_id(
            CheckResult::pass(id, "the loaded rpcrdma carries both nvfs hooks")
                .with(seen_in.as_str(), lines),
        )
    }
}

/// The loaded rpcrdma has only versioned hook names: in kallsyms, or in its file when the
/// build-ids say the loaded module is that file. A hook ABI `rpcrdma-hooks` judges against
/// nvidia-fs ([`versioned_verdict`]), never "no hooks".
fn versioned_loaded(facts: &HostFacts) -> Option<CheckResult> {
    let rp = &facts.rpcrdma;
    let nvfs = facts.nvidia_fs.binding_version();
    if rp.kallsyms_skipped().is_some() {
        let f = rp.inspected()?;
        if f.versioned_variants.is_empty() {
            return None;
        }
        let missing = f.missing();
        return Some(versioned_verdict(
            ID,
            &format!("the loaded rpcrdma (its file {})", f.path.display()),
            &f.versioned_variants,
            &missing,
            nvfs,
        ));
    }
    let Some(Ok(entries)) = &rp.kallsyms else {
        return None;
    };
    let names = loaded_hooks::versioned_in_kallsyms(entries, rp.is_builtin());
    if names.is_empty() {
        return None;
    }
    let missing = loaded_hooks::missing(&rp.loaded_hooks());
    Some(
        versioned_verdict(
            ID,
            "the loaded rpcrdma (per /proc/kallsyms)",
            &names,
            &missing,
            nvfs,
        )
        .with(
            "/proc/kallsyms",
            entries
                .iter()
                .filter(|e| names.contains(&e.symbol))
                .map(|e| e.line.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::host::facts_builder::{self as b, DKMS_RPCRDMA, INBOX_RPCRDMA};
    use crate::host::modules::gpl_rule::GplRule;
    use crate::kmod::Export;

    #[test]
    fn passes_a_loaded_build_with_both_hooks() {
        let r = run(&HostFacts::builder()
            .rpcrdma(b::rpcrdma(DKMS_RPCRDMA, true, Export::Gpl, true))
            .build());
        says(&r, Status::Pass, &["carries both nvfs hooks"]);
        let lines = seen(&r, "/proc/kallsyms");
        assert!(
            lines.contains("rpcrdma_register_nvfs_dma_ops") && lines.contains(" | "),
            "{lines}"
        );
    }

    #[test]
    fn fails_the_loaded_inbox_module_without_hooks() {
        let r = run(&HostFacts::builder()
            .rpcrdma(b::rpcrdma(INBOX_RPCRDMA, false, Export::Gpl, true))
            .build());
        says(&r, Status::Fail, &["has no nvfs hooks"]);
        assert_eq!(
            seen(&r, "/proc/kallsyms"),
            "no rpcrdma_*_nvfs_dma_ops [rpcrdma]"
        );
        assert_eq!(r.fixes, vec![Fix::ReloadRpcrdma, Fix::HookedRpcrdma]);
        assert!(remedy(&r).contains("distribution's own rpcrdma"));
    }

    #[test]
    fn an_older_build_of_a_hooked_file_is_to_be_reloaded() {
        let mut rp = b::rpcrdma(DKMS_RPCRDMA, true, Export::Gpl, true);
        rp.kallsyms = Some(Ok(Vec::new()));
        rp.loaded_build = Some(LoadedBuild::OtherFile {
            path: "/lib/modules/6.8.0-45-generic/kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst".into(),
        });
        let r = run(&HostFacts::builder().rpcrdma(rp).build());
        says(&r, Status::Fail, &["has no nvfs hooks"]);
        assert_eq!(r.fixes, vec![Fix::ReloadRpcrdma]);
        assert!(remedy(&r).contains("modprobe -r rpcrdma"));
        assert!(seen(&r, "loaded build")
            .contains("a file of the module tree modprobe does not resolve"));
    }

    #[test]
    fn fails_plain_exports_where_the_kernel_refuses_them() {
        let r = run(&HostFacts::builder()
            .rpcrdma(b::rpcrdma(DKMS_RPCRDMA, true, Export::Plain, true))
            .gpl_rule(Some(GplRule {
                enforcement: Enforcement::Enforced,
                evidence: "Linux 6.8".into(),
            }))
            .build());
        says(&r, Status::Fail, &["plain (type T in kallsyms)", "refuses"]);
        assert_eq!(r.fixes, vec![Fix::GplExport, Fix::ReloadRpcrdma]);
        assert_eq!(remedy(&r), GPL_FIX);
    }

    #[test]
    fn plain_exports_pass_where_the_rule_is_not_enforced() {
        let r = run(&HostFacts::builder()
            .rpcrdma(b::rpcrdma(DKMS_RPCRDMA, true, Export::Plain, true))
            .gpl_rule(Some(GplRule {
                enforcement: Enforcement::NotEnforced,
                evidence: "Linux 6.1".into(),
            }))
            .build());
        says(&r, Status::Pass, &["carries both nvfs hooks"]);
    }

    /// The loaded build is the resolved file by build-id: kallsyms was not read.
    fn same_build(hooks: bool, export: Export) -> crate::host::facts::RpcrdmaFacts {
        let mut rp = b::rpcrdma(DKMS_RPCRDMA, hooks, export, true);
        rp.kallsyms = None;
        rp
    }

    #[test]
    fn the_file_of_the_loaded_build_id_answers_for_kallsyms() {
        let r = run(&HostFacts::builder()
            .rpcrdma(same_build(true, Export::Gpl))
            .build());
        says(&r, Status::Pass, &["carries both nvfs hooks"]);
        let file = b::module_path(DKMS_RPCRDMA).display().to_string();
        assert_eq!(
            seen(&r, &file),
            "rpcrdma_register_nvfs_dma_ops defined, exported GPL | rpcrdma_unregister_nvfs_dma_ops defined, exported GPL"
        );
        assert!(seen(&r, "loaded build-id").contains("/proc/kallsyms not read"));
        assert!(r.evidence.iter().all(|e| e.what != "/proc/kallsyms"));

        let r = run(&HostFacts::builder()
            .rpcrdma(same_build(false, Export::Gpl))
            .build());
        says(&r, Status::Fail, &["has no nvfs hooks", &file]);
        assert_eq!(r.fixes, vec![Fix::ReloadRpcrdma, Fix::HookedRpcrdma]);

        let r = run(&HostFacts::builder()
            .rpcrdma(same_build(true, Export::Plain))
            .gpl_rule(Some(GplRule {
                enforcement: Enforcement::Enforced,
                evidence: "Linux 6.8".into(),
            }))
            .build());
        says(
            &r,
            Status::Fail,
            &["plain (in the file it was loaded from)", "refuses"],
        );
        assert_eq!(r.fixes, vec![Fix::GplExport, Fix::ReloadRpcrdma]);
    }

    #[test]
    fn unread_kallsyms_without_a_build_id_match_is_unknown() {
        let mut rp = same_build(true, Export::Gpl);
        rp.sys.build_id = Some("ffff".into());
        let r = run(&HostFacts::builder().rpcrdma(rp).build());
        says(&r, Status::Unknown, &["/proc/kallsyms was not read"]);
    }

    #[test]
    fn is_unknown_when_kallsyms_cannot_be_read() {
        let mut rp = b::rpcrdma(DKMS_RPCRDMA, true, Export::Gpl, true);
        rp.kallsyms = Some(Err("/proc/kallsyms does not exist".into()));
        let r = run(&HostFacts::builder().rpcrdma(rp).build());
        says(
            &r,
            Status::Unknown,
            &["kallsyms cannot be read: /proc/kallsyms does not exist"],
        );
    }

    #[test]
    fn skips_what_is_not_loaded_or_cannot_be() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["not loaded", "first RDMA mount"]);
        let r = run(&HostFacts::builder()
            .cmdline(Some("ro nomodule".into()))
            .build());
        says(
            &r,
            Status::Skip,
            &["cannot load modules (booted with nomodule)"],
        );
        let r = run(&HostFacts::builder().rpcrdma(b::built_in()).build());
        says(&r, Status::Skip, &["built in"]);
    }

    /// A loaded rpcrdma whose kallsyms lines name only `rpcrdma_v2_*` hooks, beside nvidia-fs
    /// `nvfs`.
    fn loaded_v2(nvfs: Option<&str>) -> HostFacts {
        use crate::host::modules::kallsyms::KallsymsEntry;
        let mut rp = b::rpcrdma(DKMS_RPCRDMA, false, Export::Gpl, true);
        rp.loaded_build = Some(LoadedBuild::OtherBuild);
        rp.kallsyms = Some(Ok(["register", "unregister"]
            .iter()
            .map(|w| {
                let symbol = format!("rpcrdma_v2_{w}_nvfs_dma_ops");
                KallsymsEntry {
                    line: format!("0000000000000000 t {symbol}\t[rpcrdma]"),
                    symbol,
                    type_letter: 't',
                    module: Some("rpcrdma".into()),
                }
            })
            .collect()));
        HostFacts::builder()
            .rpcrdma(rp)
            .nvidia_fs_release(nvfs)
            .build()
    }

    #[test]
    fn a_loaded_rpcrdma_with_only_versioned_hooks_is_judged_not_called_hookless() {
        let r = run(&loaded_v2(Some("2.28.4")));
        says(
            &r,
            Status::Fail,
            &[
                "the loaded rpcrdma (per /proc/kallsyms) exports only rpcrdma_v2_register_nvfs_dma_ops",
                "nvidia-fs 2.28.4 does not ask for",
            ],
        );
        assert!(!r.summary.contains("has no nvfs hooks"), "{r:?}");
        assert!(seen(&r, "/proc/kallsyms").contains("rpcrdma_v2_unregister_nvfs_dma_ops"));
        let r = run(&loaded_v2(None));
        says(&r, Status::Warn, &["an unknown hook ABI", "probe decides"]);
    }
}
