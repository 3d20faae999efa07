//! The kernel's own verdict on loading a module, as its log tells it.
//!
//! When the kernel refuses a module it says why in a few fixed sentences: `M: disagrees about
//! version of symbol S` and `M: Unknown symbol S (err N)` (symbol CRCs and missing providers,
//! `kernel/module/version.c` and `main.c`), `M: module verification failed: …` (an unsigned module
//! accepted with a taint), `Loading of unsigned module is rejected` (signature enforcement,
//! `kernel/module/signing.c`) and `Lockdown: P: unsigned module loading is restricted` (lockdown).
//! `Key was rejected by service` is the text of `EKEYREJECTED` that modprobe, insmod or
//! systemd-modules-load print, which the journal keeps beside the kernel's lines.
//!
//! [`parse_load_failures`] recognises these in log text as `dmesg` prints it, as `/dev/kmsg`
//! records it or as the journal shows it, attributes each to a module where the line names one,
//! and keeps the line as evidence. It is pure: the caller passes the log it read (doctor reads
//! `dmesg` through its runner).

use serde::Serialize;

use super::module_name::{module_name_of_path, normalize_name};
use crate::kmod::GDS_MODULES;

/// What the kernel (or the loader) said went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LoadFailureKind {
    /// The module's `__versions` CRC for `symbol` differs from the provider's export.
    SymbolVersionMismatch { symbol: String },
    /// No loaded module exports `symbol` (or its CRC check failed first).
    UnknownSymbol { symbol: String },
    /// `EKEYREJECTED` as the loader printed it: the signature was required and missing or bad.
    KeyRejected,
    /// The kernel refused an unsigned module (or one signed with an unknown key).
    SignatureRejected { reason: String },
    /// Lockdown refused an unsigned module; `process` is the program that tried.
    LockdownRestricted { process: String },
    /// The module was loaded unsigned, tainting the kernel: signatures are not enforced.
    VerificationFailed,
}

/// One recognised line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadFailure {
    /// The module the line names (kernel spelling, `_` for `-`); `None` when the kernel does not
    /// say (signature and lockdown refusals).
    pub module: Option<String>,
    #[serde(flatten)]
    pub kind: LoadFailureKind,
    /// 1-based line number in the text given.
    pub line_number: usize,
    /// The line as logged, trimmed.
    pub line: String,
}

/// Every load failure in `log` that names one of `modules`, or that names no module at all
/// (the kernel does not say which module a signature refusal was for). Lines naming other
/// modules are left out. Names compare with `-` and `_` alike.
pub fn parse_load_failures(log: &str, modules: &[&str]) -> Vec<LoadFailure> {
    let wanted: Vec<String> = modules.iter().map(|m| normalize_name(m)).collect();
    log.lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let (module, kind) = classify(raw)?;
            if let Some(m) = &module {
                if !wanted.contains(m) {
                    return None;
                }
            }
            Some(LoadFailure {
                module,
                kind,
                line_number: i + 1,
                line: raw.trim().to_string(),
            })
        })
        .collect()
}

/// Whether `line` reports a load failure of one of [`GDS_MODULES`] (or of an unnamed module).
pub fn is_gds_load_failure(line: &str) -> bool {
    !parse_load_failures(line, &GDS_MODULES).is_empty()
}

const DISAGREES: &str = ": disagrees about version of symbol ";
const UNKNOWN_SYMBOL: &str = ": Unknown symbol ";
const VERIFICATION_FAILED: &str = ": module verification failed";
const KEY_REJECTED: &str = "Key was rejected by service";
const LOADING_OF: &str = "Loading of ";
const IS_REJECTED: &str = " is rejected";
const LOCKDOWN: &str = "Lockdown: ";
const UNSIGNED_RESTRICTED: &str = ": unsigned module loading is restricted";

fn classify(line: &str) -> Option<(Option<String>, LoadFailureKind)> {
    if let Some(at) = line.find(DISAGREES) {
        let symbol = first_word(&line[at + DISAGREES.len()..])?;
        return Some((
            module_before(line, at),
            LoadFailureKind::SymbolVersionMismatch { symbol },
        ));
    }
    if let Some(at) = line.find(UNKNOWN_SYMBOL) {
        let symbol = first_word(&line[at + UNKNOWN_SYMBOL.len()..])?;
        return Some((
            module_before(line, at),
            LoadFailureKind::UnknownSymbol { symbol },
        ));
    }
    if let Some(at) = line.find(VERIFICATION_FAILED) {
        return Some((module_before(line, at), LoadFailureKind::VerificationFailed));
    }
    if line.contains(KEY_REJECTED) {
        return Some((loader_target(line), LoadFailureKind::KeyRejected));
    }
    if let Some(at) = line.find(LOADING_OF) {
        let rest = &line[at + LOADING_OF.len()..];
        if let Some(end) = rest.find(IS_REJECTED) {
            return Some((
                None,
                LoadFailureKind::SignatureRejected {
                    reason: rest[..end].to_string(),
                },
            ));
        }
    }
    if let Some(at) = line.find(LOCKDOWN) {
        let rest = &line[at + LOCKDOWN.len()..];
        if let Some(end) = rest.find(UNSIGNED_RESTRICTED) {
            return Some((
                None,
                LoadFailureKind::LockdownRestricted {
                    process: rest[..end].to_string(),
                },
            ));
        }
    }
    None
}

fn first_word(s: &str) -> Option<String> {
    s.split_whitespace()
        .next()
        .map(|w| w.trim_end_matches(['.', ',']).to_string())
        .filter(|w| !w.is_empty())
}

/// The module name that ends right before byte `at` (the kernel prints `name: message`).
fn module_before(line: &str, at: usize) -> Option<String> {
    let head = &line[..at];
    let start = head
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let name = &head[start..];
    (!name.is_empty()).then(|| normalize_name(name))
}

/// The module a loader's error names: `could not insert 'nvidia_fs'` (modprobe),
/// `Failed to insert module 'x'` (systemd-modules-load), `could not insert module x.ko` (insmod).
fn loader_target(line: &str) -> Option<String> {
    if let Some(q) = line.find('\'') {
        let rest = &line[q + 1..];
        if let Some(end) = rest.find('\'') {
            return Some(module_name_of_path(&rest[..end]));
        }
    }
    let at = line.find("insert module ")?;
    let word = first_word(&line[at + "insert module ".len()..])?;
    Some(module_name_of_path(word.trim_end_matches(':')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
[    4.120001] mlx5_core 0000:17:00.0: firmware version: 28.39.1002
[   12.500123] rpcrdma: disagrees about version of symbol ib_dma_virt_map_sg
[   12.500130] rpcrdma: Unknown symbol ib_dma_virt_map_sg (err -22)
[   12.500140] rdma_cm: disagrees about version of symbol ib_register_client
[   13.000000] nvidia_fs: module verification failed: signature and/or required key missing - tainting kernel
[   13.100000] Loading of unsigned module is rejected
[   13.200000] Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7
Dec 01 07:00:00 node1 systemd-modules-load[512]: Failed to insert module 'nvidia_fs': Key was rejected by service
modprobe: ERROR: could not insert 'rpcrdma': Key was rejected by service
insmod: ERROR: could not insert module /root/nvidia-fs.ko: Key was rejected by service
6,1234,5678901,-;rpcrdma: Unknown symbol rpcrdma_foo (err -2)
";

    #[test]
    fn crc_and_unknown_symbol_lines_name_module_and_symbol() {
        let f = parse_load_failures(LOG, &["rpcrdma"]);
        let named: Vec<_> = f.iter().filter(|f| f.module.is_some()).collect();
        assert_eq!(named.len(), 4, "{named:#?}");
        assert_eq!(named[0].module.as_deref(), Some("rpcrdma"));
        assert_eq!(
            named[0].kind,
            LoadFailureKind::SymbolVersionMismatch {
                symbol: "ib_dma_virt_map_sg".into()
            }
        );
        assert_eq!(named[0].line_number, 2);
        assert!(named[0]
            .line
            .starts_with("[   12.500123] rpcrdma: disagrees"));
        assert_eq!(
            named[1].kind,
            LoadFailureKind::UnknownSymbol {
                symbol: "ib_dma_virt_map_sg".into()
            }
        );
        assert_eq!(named[2].kind, LoadFailureKind::KeyRejected);
        // The /dev/kmsg record form.
        assert_eq!(
            named[3].kind,
            LoadFailureKind::UnknownSymbol {
                symbol: "rpcrdma_foo".into()
            }
        );
    }

    #[test]
    fn other_modules_are_left_out_and_unnamed_refusals_kept() {
        let f = parse_load_failures(LOG, &["rpcrdma"]);
        assert!(f.iter().all(|f| f.module.as_deref() != Some("rdma_cm")));
        let unnamed: Vec<_> = f.iter().filter(|f| f.module.is_none()).collect();
        assert_eq!(unnamed.len(), 2);
        assert_eq!(
            unnamed[0].kind,
            LoadFailureKind::SignatureRejected {
                reason: "unsigned module".into()
            }
        );
        assert_eq!(
            unnamed[1].kind,
            LoadFailureKind::LockdownRestricted {
                process: "modprobe".into()
            }
        );
    }

    #[test]
    fn loader_lines_name_the_module_in_any_spelling() {
        let f = parse_load_failures(LOG, &["nvidia-fs"]);
        let keys: Vec<_> = f
            .iter()
            .filter(|f| f.kind == LoadFailureKind::KeyRejected)
            .map(|f| f.line_number)
            .collect();
        assert_eq!(keys, vec![8, 10]);
        assert!(f
            .iter()
            .any(|f| f.kind == LoadFailureKind::VerificationFailed
                && f.module.as_deref() == Some("nvidia_fs")));
    }

    #[test]
    fn ordinary_lines_and_empty_logs_give_nothing() {
        assert!(parse_load_failures("", &GDS_MODULES).is_empty());
        assert!(parse_load_failures(
            "[ 1.0] rpcrdma: loaded\nUnknown symbol without a module prefix at all\n",
            &GDS_MODULES
        )
        .is_empty());
        assert!(!is_gds_load_failure(
            "[ 2.0] nvidia_fs: loading out-of-tree module taints kernel."
        ));
        assert!(is_gds_load_failure(
            "[ 2.0] nvidia_fs: Unknown symbol nvidia_p2p_get_pages (err -2)"
        ));
        assert!(!is_gds_load_failure(
            "[ 2.0] mlx5_ib: Unknown symbol ib_foo (err -2)"
        ));
    }

    #[test]
    fn odd_text_never_panics() {
        let f = parse_load_failures(
            "é: disagrees about version of symbol x\n€rpcrdma: Unknown symbol\n'unterminated Key was rejected by service\n: disagrees about version of symbol ",
            &GDS_MODULES,
        );
        assert!(f.iter().all(|f| f.module.as_deref() != Some("é")));
        assert!(f.iter().any(|f| f.kind == LoadFailureKind::KeyRejected));
    }
}
