//! Predicts the loader's `disagrees about version of symbol`: compares the CRC a module expects
//! of each import with the CRC its provider exports, before modprobe tries.
//!
//! Pure: the caller supplies the module's [`ImportVersions`], what it knows of the kernel's
//! CONFIG_MODVERSIONS, and a lookup from a symbol to its [`Provider`] (built from
//! `modules.symbols` and the provider's file, or from a loaded build where that is known). The
//! kernel's rules (`check_version()` in `kernel/module/version.c`) are followed: a provider that
//! exports without CRCs is accepted (the kernel only taints), a module without a version table is
//! refused by a kernel that checks versions (unless it was built with
//! CONFIG_MODULE_FORCE_LOAD), and a CRC that differs refuses the load.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::modversions::{ImportTable, ImportVersions};

/// What is known of the kernel's CONFIG_MODVERSIONS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum KernelModversions {
    Enabled { evidence: String },
    Disabled { evidence: String },
    Unknown,
}

/// Where a provider's CRC was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrcOrigin {
    /// The module file modprobe would load for the provider.
    File,
    /// The provider already loaded (its build identified by the caller).
    LoadedBuild,
    /// The `Module.symvers` of the kernel build the provider file is proven to come from (the
    /// provider's path is its file's; the kernel image's, the symvers's own).
    BuildSymvers,
}

/// Who provides an imported symbol, as modprobe and the loader would find it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Provider {
    /// A module exports it. `crc` is `None` when that module exports it without a CRC.
    Module {
        module: String,
        path: Option<PathBuf>,
        crc: Option<u32>,
        origin: CrcOrigin,
    },
    /// No module exports it (not in `modules.symbols`): the kernel image itself, whose CRCs are
    /// not in any module file.
    KernelImage,
    /// The kernel image exports it with `crc`, as the build's `Module.symvers` at `symvers`
    /// records it.
    KernelImageCrc { crc: u32, symvers: PathBuf },
    /// A module is named as provider but its CRCs could not be read.
    Unreadable { module: String, reason: String },
}

/// The provider name of the kernel image's own exports.
pub const IMAGE: &str = "vmlinux";

/// One import whose CRC disagrees with its provider's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrcMismatch {
    pub symbol: String,
    /// The CRC the module was built against.
    pub wanted: u32,
    /// The CRC the provider exports.
    pub provided: u32,
    pub provider: String,
    pub provider_path: Option<PathBuf>,
    pub origin: CrcOrigin,
}

impl CrcMismatch {
    /// `wants ib_dma_virt_map_sg 0x1234abcd; ib_core (…/ib_core.ko) exports 0x89abcdef`.
    pub fn describe(&self) -> String {
        let whose = match (&self.provider_path, self.origin) {
            (_, CrcOrigin::LoadedBuild) => format!("the loaded {}", self.provider),
            (Some(p), CrcOrigin::BuildSymvers) if self.provider == IMAGE => {
                format!("the kernel image (per {})", p.display())
            }
            (Some(p), CrcOrigin::BuildSymvers) => format!(
                "{} ({}, as its build's Module.symvers records it)",
                self.provider,
                p.display()
            ),
            (None, CrcOrigin::BuildSymvers) => self.provider.clone(),
            (Some(p), CrcOrigin::File) => format!("{} ({})", self.provider, p.display()),
            (None, CrcOrigin::File) => self.provider.clone(),
        };
        format!(
            "wants {} {:#010x}; {whose} exports {:#010x}",
            self.symbol, self.wanted, self.provided
        )
    }
}

/// Why one import could not be compared. Kept by the facts cache inside [`AbiVerdict`]:
/// externally tagged, like it, for the same reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Uncompared {
    /// Provided by the kernel image (its CRC is not in a module file).
    KernelImage { symbol: String },
    /// The provider exports it without a CRC; the kernel accepts that (and taints).
    ProviderWithoutCrc { symbol: String, provider: String },
    /// The provider is named but could not be read.
    ProviderUnreadable {
        symbol: String,
        provider: String,
        reason: String,
    },
}

/// The comparison of every versioned import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbiReport {
    pub table: ImportTable,
    /// Imports whose provider's CRC was compared and agreed.
    pub matched: usize,
    /// Of those, the kernel image's own (their CRCs from the build's `Module.symvers`).
    #[serde(default)]
    pub image_matched: usize,
    /// The build's `Module.symvers` some CRCs were taken from, if any.
    #[serde(default)]
    pub build_symvers: Option<PathBuf>,
    pub mismatches: Vec<CrcMismatch>,
    pub uncompared: Vec<Uncompared>,
}

/// The answer for one module. Kept by the facts cache, which reads it on every warm run:
/// externally tagged, which serde reads as it goes, where an internal `kind` tag made it buffer
/// the whole report first (0.3 M instructions of a 3.1 M warm check where the report lists the
/// 112 kernel-image imports it could not compare).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbiVerdict {
    /// Symbol versions play no part: the reason says why.
    NotApplicable {
        reason: String,
    },
    /// The kernel checks symbol versions and the module has none: the loader refuses it.
    Unversioned {
        reason: String,
    },
    Compared(AbiReport),
}

impl AbiVerdict {
    /// Whether the loader would refuse the module for its symbol versions.
    pub fn refuses_load(&self) -> bool {
        match self {
            AbiVerdict::NotApplicable { .. } => false,
            AbiVerdict::Unversioned { .. } => true,
            AbiVerdict::Compared(r) => !r.mismatches.is_empty(),
        }
    }
}

/// Compares every versioned import of a module with its provider's export CRC.
pub fn compare_import_crcs(
    imports: &ImportVersions,
    kernel: &KernelModversions,
    mut provider_of: impl FnMut(&str) -> Provider,
) -> AbiVerdict {
    if let KernelModversions::Disabled { evidence } = kernel {
        return AbiVerdict::NotApplicable {
            reason: format!(
                "the kernel is built without CONFIG_MODVERSIONS ({evidence}): it checks no symbol CRCs"
            ),
        };
    }
    let (table, versions) = match imports {
        ImportVersions::Unversioned => {
            return match kernel {
                KernelModversions::Enabled { evidence } => AbiVerdict::Unversioned {
                    reason: format!(
                        "the module has no __versions table but the kernel checks symbol versions \
                         ({evidence}); without CONFIG_MODULE_FORCE_LOAD the loader refuses it"
                    ),
                },
                _ => AbiVerdict::NotApplicable {
                    reason: "the module has no __versions table (built without CONFIG_MODVERSIONS)"
                        .into(),
                },
            };
        }
        ImportVersions::Versioned { table, versions } => (*table, versions),
    };
    let mut report = AbiReport {
        table,
        matched: 0,
        image_matched: 0,
        build_symvers: None,
        mismatches: Vec::new(),
        uncompared: Vec::new(),
    };
    for v in versions {
        match provider_of(&v.symbol) {
            Provider::Module {
                module,
                path,
                crc: Some(crc),
                origin,
            } => {
                if crc == v.crc {
                    report.matched += 1;
                } else {
                    report.mismatches.push(CrcMismatch {
                        symbol: v.symbol.clone(),
                        wanted: v.crc,
                        provided: crc,
                        provider: module,
                        provider_path: path,
                        origin,
                    });
                }
            }
            Provider::Module {
                module, crc: None, ..
            } => report.uncompared.push(Uncompared::ProviderWithoutCrc {
                symbol: v.symbol.clone(),
                provider: module,
            }),
            Provider::KernelImage => report.uncompared.push(Uncompared::KernelImage {
                symbol: v.symbol.clone(),
            }),
            Provider::KernelImageCrc { crc, .. } if crc == v.crc => {
                report.matched += 1;
                report.image_matched += 1;
            }
            Provider::KernelImageCrc { crc, symvers } => report.mismatches.push(CrcMismatch {
                symbol: v.symbol.clone(),
                wanted: v.crc,
                provided: crc,
                provider: IMAGE.into(),
                provider_path: Some(symvers),
                origin: CrcOrigin::BuildSymvers,
            }),
            Provider::Unreadable { module, reason } => {
                report.uncompared.push(Uncompared::ProviderUnreadable {
                    symbol: v.symbol.clone(),
                    provider: module,
                    reason,
                })
            }
        }
    }
    AbiVerdict::Compared(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmod::modversions::SymbolVersion;

    fn imports(list: &[(&str, u32)]) -> ImportVersions {
        ImportVersions::Versioned {
            table: ImportTable::Basic,
            versions: list
                .iter()
                .map(|(s, c)| SymbolVersion {
                    symbol: s.to_string(),
                    crc: *c,
                })
                .collect(),
        }
    }

    fn ib_core(crc: Option<u32>) -> Provider {
        Provider::Module {
            module: "ib_core".into(),
            path: Some("/lib/modules/6.1.0/updates/dkms/ib_core.ko".into()),
            crc,
            origin: CrcOrigin::File,
        }
    }

    const ON: KernelModversions = KernelModversions::Unknown;

    #[test]
    fn a_differing_crc_is_reported_with_both_values_and_the_provider() {
        let v = compare_import_crcs(
            &imports(&[("ib_dma_virt_map_sg", 0x1111), ("module_layout", 7)]),
            &ON,
            |s| match s {
                "ib_dma_virt_map_sg" => ib_core(Some(0x2222)),
                _ => Provider::KernelImage,
            },
        );
        assert!(v.refuses_load());
        let AbiVerdict::Compared(r) = v else {
            panic!("{v:?}")
        };
        assert_eq!(r.matched, 0);
        assert_eq!(r.mismatches.len(), 1);
        let m = &r.mismatches[0];
        assert_eq!((m.wanted, m.provided), (0x1111, 0x2222));
        assert_eq!(
            m.describe(),
            "wants ib_dma_virt_map_sg 0x00001111; ib_core (/lib/modules/6.1.0/updates/dkms/ib_core.ko) exports 0x00002222"
        );
        assert_eq!(
            r.uncompared,
            vec![Uncompared::KernelImage {
                symbol: "module_layout".into()
            }]
        );
    }

    #[test]
    fn the_kernel_images_crcs_from_the_symvers_are_compared() {
        let symvers = PathBuf::from("/usr/src/linux-headers-6.1.0/Module.symvers");
        let v = compare_import_crcs(&imports(&[("printk", 5), ("kfree", 6)]), &ON, |s| {
            Provider::KernelImageCrc {
                crc: if s == "printk" { 5 } else { 7 },
                symvers: symvers.clone(),
            }
        });
        assert!(v.refuses_load());
        let AbiVerdict::Compared(r) = v else {
            panic!("{v:?}")
        };
        assert_eq!((r.matched, r.image_matched), (1, 1));
        assert_eq!(
            r.mismatches[0].describe(),
            "wants kfree 0x00000006; the kernel image (per /usr/src/linux-headers-6.1.0/Module.symvers) exports 0x00000007"
        );
    }

    #[test]
    fn agreeing_crcs_and_crc_less_providers_pass() {
        let v = compare_import_crcs(&imports(&[("a", 1), ("b", 2)]), &ON, |s| match s {
            "a" => ib_core(Some(1)),
            _ => ib_core(None),
        });
        assert!(!v.refuses_load());
        let AbiVerdict::Compared(r) = v else {
            panic!("{v:?}")
        };
        assert_eq!(r.matched, 1);
        assert!(matches!(
            r.uncompared[0],
            Uncompared::ProviderWithoutCrc { .. }
        ));
    }

    #[test]
    fn without_modversions_the_answer_is_not_applicable_with_the_reason() {
        let off = KernelModversions::Disabled {
            evidence: "CONFIG_MODVERSIONS is not set in /boot/config-6.1.0".into(),
        };
        let v = compare_import_crcs(&imports(&[("a", 1)]), &off, |_| ib_core(Some(2)));
        let AbiVerdict::NotApplicable { reason } = v else {
            panic!("{v:?}")
        };
        assert!(reason.contains("/boot/config-6.1.0"), "{reason}");

        let v = compare_import_crcs(&ImportVersions::Unversioned, &ON, |_| unreachable!());
        assert!(matches!(v, AbiVerdict::NotApplicable { .. }));
        assert!(!v.refuses_load());
    }

    #[test]
    fn an_unversioned_module_on_a_checking_kernel_is_refused() {
        let on = KernelModversions::Enabled {
            evidence: "vermagic says modversions".into(),
        };
        let v = compare_import_crcs(&ImportVersions::Unversioned, &on, |_| unreachable!());
        assert!(v.refuses_load());
        assert!(matches!(v, AbiVerdict::Unversioned { .. }));
    }
}
