//! What `rpcrdma-abi` and `nvidia-fs-abi` say alike of a CRC comparison
//! ([`crate::kmod::abi`]): a mismatch as the loader would report it, with the provider file and
//! where it came from, the providers whose CRCs could not be read, the kernel's
//! CONFIG_MODVERSIONS evidence, and the kernel log's own refusals of earlier loads. On a kernel
//! without CONFIG_MODVERSIONS, the vermagic and BTF prediction ([`crate::kmod::crcless_load`])
//! in the same words.

use std::path::Path;

use crate::checks::{CheckId, CheckResult};
use crate::host::modules::kernel_log::{parse_load_failures, LoadFailure, LoadFailureKind};
use crate::host::modules::ModuleOrigin;
use crate::host::HostFacts;
use crate::kmod::abi::{AbiReport, CrcMismatch, CrcOrigin, Uncompared};
use crate::kmod::crcless_load::CrclessVerdict;

/// How many mismatches are shown one by one.
const SHOWN: usize = 5;

/// A comparison with mismatches: `<file> wants <symbol> …: modprobe refuses it (`<module>:
/// disagrees about version of symbol …`)<why>`, judged by `refused`, with the first mismatches
/// and the counts as evidence.
pub(super) fn mismatched(
    path: &Path,
    module: &str,
    r: &AbiReport,
    why: &str,
    refused: impl FnOnce(String) -> CheckResult,
) -> CheckResult {
    let first = &r.mismatches[0];
    let summary = format!(
        "{} {}: modprobe refuses it (`{module}: disagrees about version of symbol {}`){why}{}",
        file_name(path),
        describe(first),
        first.symbol,
        match r.mismatches.len() {
            1 => String::new(),
            n => format!(", and {} more import(s) disagree", n - 1),
        }
    );
    let mut res = refused(summary);
    for m in r.mismatches.iter().take(SHOWN) {
        res = res.with(format!("import {}", m.symbol), describe(m));
    }
    res.with(
        "compared",
        format!(
            "{} agree, {} disagree, {} not comparable",
            r.matched,
            r.mismatches.len(),
            r.uncompared.len()
        ),
    )
}

/// `<symbol> from <provider>: <reason>` for each provider whose CRCs could not be read.
pub(super) fn unreadable_providers(r: &AbiReport) -> Vec<String> {
    r.uncompared
        .iter()
        .filter_map(|u| match u {
            Uncompared::ProviderUnreadable {
                symbol,
                provider,
                reason,
            } => Some(format!("{symbol} from {provider}: {reason}")),
            _ => None,
        })
        .collect()
}

/// The prediction on a kernel that checks no symbol CRCs: a refusal the kernel makes is judged
/// by `refused` (a failure, or a warning while a loaded build serves), a likely one warns, a
/// load whose every check was seen passes, and the rest is unknown, with what was seen.
pub(super) fn judged_without_crcs(
    id: CheckId,
    path: &Path,
    verdict: &CrclessVerdict,
    refused: impl FnOnce(String) -> CheckResult,
) -> CheckResult {
    let name = file_name(path);
    let no_crcs = "this kernel carries no symbol CRCs (built without CONFIG_MODVERSIONS): a module of another build no longer fails on CRCs; the kernel checks its vermagic and, unless CONFIG_MODULE_ALLOW_BTF_MISMATCH is set, its BTF";
    match verdict {
        CrclessVerdict::Refused { reason } => refused(format!("{name}: {reason}")),
        CrclessVerdict::LikelyRefused { reason } => {
            CheckResult::warn(id, format!("{name}: {reason}")).remedy(
                "install the build of this module made for this very kernel build (its package for this kernel, or a DKMS build against this kernel's headers), then run the check again",
            )
        }
        CrclessVerdict::Loads { evidence } => CheckResult::pass(id, format!("{name}: {evidence}")),
        CrclessVerdict::Undecided { reason } => CheckResult::unknown(id, format!("{name}: {reason}")),
    }
    .with("symbol CRCs", no_crcs)
}

pub(super) fn modversions_evidence(facts: &HostFacts) -> String {
    use crate::kmod::abi::KernelModversions::*;
    match &facts.rpcrdma_load.modversions {
        Enabled { evidence } | Disabled { evidence } => evidence.clone(),
        Unknown => "the kernel's CONFIG_MODVERSIONS is not known (no kernel configuration); CRCs compared as a kernel with it would".into(),
    }
}

pub(super) fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// `wants ib_drain_qp 0x…; ib_core.ko (an out-of-tree package (updates/), updates/dkms/ib_core.ko) exports 0x…`
pub(super) fn describe(m: &CrcMismatch) -> String {
    let Some(path) = m
        .provider_path
        .as_ref()
        .filter(|_| m.origin != CrcOrigin::BuildSymvers)
    else {
        return m.describe();
    };
    let shown = path.to_string_lossy();
    let in_tree = shown
        .split_once("/lib/modules/")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map_or_else(|| shown.to_string(), |(_, rel)| rel.to_string());
    format!(
        "wants {} {:#010x}; {} ({}, {}) exports {:#010x}",
        m.symbol,
        m.wanted,
        file_name(path),
        ModuleOrigin::of(&in_tree).describe(),
        in_tree,
        m.provided
    )
}

/// The kernel's own verdict on earlier loads of `module`, when the caller read the log.
pub(super) fn log_evidence(facts: &HostFacts, module: &str) -> Vec<LoadFailure> {
    let Some(log) = &facts.kernel_log else {
        return Vec::new();
    };
    parse_load_failures(log, &[module])
        .into_iter()
        .filter(|f| {
            f.module.is_some()
                && matches!(
                    f.kind,
                    LoadFailureKind::SymbolVersionMismatch { .. }
                        | LoadFailureKind::UnknownSymbol { .. }
                )
        })
        .collect()
}

/// What the two checks' unit tests compare with.
#[cfg(test)]
pub(super) mod fixtures {
    use crate::kmod::abi::{
        AbiReport, AbiVerdict, CrcMismatch, CrcOrigin, KernelModversions, Uncompared,
    };
    use crate::kmod::modversions::ImportTable;

    /// `symbol` wanted as 0x12345678, exported as 0x9abcdef0 by `provider`'s DKMS build.
    pub fn mismatch(symbol: &str, provider: &str) -> CrcMismatch {
        CrcMismatch {
            symbol: symbol.into(),
            wanted: 0x1234_5678,
            provided: 0x9abc_def0,
            provider: provider.into(),
            provider_path: Some(
                format!("/lib/modules/6.8.0-45-generic/updates/dkms/{provider}.ko").into(),
            ),
            origin: CrcOrigin::File,
        }
    }

    pub fn compared(
        matched: usize,
        mismatches: Vec<CrcMismatch>,
        uncompared: Vec<Uncompared>,
    ) -> AbiVerdict {
        AbiVerdict::Compared(AbiReport {
            table: ImportTable::Basic,
            matched,
            image_matched: 0,
            build_symvers: None,
            mismatches,
            uncompared,
        })
    }

    pub fn modversions_on() -> KernelModversions {
        KernelModversions::Enabled {
            evidence: "CONFIG_MODVERSIONS=y in /boot/config-6.8.0-45-generic".into(),
        }
    }
}
