//! What a kernel built without CONFIG_MODVERSIONS checks of a module instead of symbol CRCs,
//! read from the host: its vermagic (from the release and the configuration's options that add
//! words to it), whether it refuses a module whose BTF does not validate, and its own BTF
//! (`/sys/kernel/btf/vmlinux`), summarised and kept for the relocation of a module's distilled
//! base. The judgement is [`crate::kmod::crcless_load`].

use std::sync::Arc;

use crate::host::io::error::HostError;
use crate::host::io::reader::FileKind;
use crate::host::io::root::Root;
use crate::host::modules::kernel_config::KernelConfig;
use crate::kmod::btf::base_btf;
use crate::kmod::crcless_load::{BtfPolicy, CrclessKernel, VermagicConfig};

/// The configuration options read here.
pub const CONFIG_OPTIONS: &[&str] = &[
    "CONFIG_MODULE_ALLOW_BTF_MISMATCH",
    "CONFIG_DEBUG_INFO_BTF_MODULES",
    "CONFIG_SMP",
    "CONFIG_PREEMPT_BUILD",
    "CONFIG_PREEMPT_RT",
    "CONFIG_MODULE_UNLOAD",
    "CONFIG_X86_64",
    "CONFIG_RANDSTRUCT_NONE",
];

/// The kernel's own BTF, as the kernel shows it.
pub const VMLINUX_BTF: &str = "sys/kernel/btf/vmlinux";

/// Reads the running kernel's side; `config` is its configuration, read once for every reader.
pub fn read_crcless_kernel(
    root: &Root,
    release: Option<&str>,
    config: Option<&KernelConfig>,
) -> Result<CrclessKernel, HostError> {
    let (base, btf) = match root.read_file(VMLINUX_BTF, FileKind::Text) {
        Ok(Some(f)) => match base_btf(&f.bytes) {
            Ok(base) => (Some(Ok(base)), Some(Arc::new(f.bytes))),
            Err(e) => (Some(Err(format!("/{VMLINUX_BTF}: {e}"))), None),
        },
        Ok(None) => (None, None),
        Err(e) => (Some(Err(e.to_string())), None),
    };
    Ok(CrclessKernel {
        release: release.map(str::to_string),
        vermagic: config
            .and_then(vermagic_config)
            .zip(release)
            .map(|(v, r)| v.vermagic(r)),
        vermagic_from: config.map_or_else(|| "no kernel configuration".into(), |c| c.path.clone()),
        btf_policy: config.map_or(BtfPolicy::Unknown, btf_policy),
        base,
        btf,
    })
}

/// The vermagic words of `config`, where it gives them all: x86_64 (whose architecture adds no
/// word) without RANDSTRUCT (whose seed hash is in no configuration).
fn vermagic_config(config: &KernelConfig) -> Option<VermagicConfig> {
    if !config.is_yes("CONFIG_X86_64") || !config.is_yes("CONFIG_RANDSTRUCT_NONE") {
        return None;
    }
    Some(VermagicConfig {
        smp: config.is_yes("CONFIG_SMP"),
        preempt: if config.is_yes("CONFIG_PREEMPT_RT") {
            Some("preempt_rt")
        } else if config.is_yes("CONFIG_PREEMPT_BUILD") {
            Some("preempt")
        } else {
            None
        },
        mod_unload: config.is_yes("CONFIG_MODULE_UNLOAD"),
        modversions: config.is_yes("CONFIG_MODVERSIONS"),
    })
}

fn btf_policy(config: &KernelConfig) -> BtfPolicy {
    let path = &config.path;
    if config.is_yes("CONFIG_MODULE_ALLOW_BTF_MISMATCH") {
        return BtfPolicy::NotEnforced {
            evidence: format!(
                "CONFIG_MODULE_ALLOW_BTF_MISMATCH=y in {path}: a mismatch is only warned of"
            ),
        };
    }
    match config.get("CONFIG_DEBUG_INFO_BTF_MODULES") {
        Some(_) if config.is_yes("CONFIG_DEBUG_INFO_BTF_MODULES") => {
            match config.get("CONFIG_MODULE_ALLOW_BTF_MISMATCH") {
                Some(_) => BtfPolicy::Enforced {
                    evidence: format!("CONFIG_DEBUG_INFO_BTF_MODULES=y and CONFIG_MODULE_ALLOW_BTF_MISMATCH is not set in {path}"),
                },
                // A kernel before 5.18 has no such option and refuses alike.
                None => BtfPolicy::Enforced {
                    evidence: format!("CONFIG_DEBUG_INFO_BTF_MODULES=y in {path}, which has no CONFIG_MODULE_ALLOW_BTF_MISMATCH"),
                },
            }
        }
        Some(_) => BtfPolicy::NotEnforced {
            evidence: format!("CONFIG_DEBUG_INFO_BTF_MODULES is not set in {path}: the kernel reads no module BTF"),
        },
        None if config.is_yes("CONFIG_MODULES") => BtfPolicy::NotEnforced {
            evidence: format!("{path} has no CONFIG_DEBUG_INFO_BTF_MODULES: the kernel reads no module BTF"),
        },
        None => BtfPolicy::Unknown,
    }
}
