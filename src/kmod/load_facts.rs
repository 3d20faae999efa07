//! What decides whether the kernel will *load* a module file, read in one pass over its image:
//! the CRCs it expects of its imports, the CRCs of its exports, its signature trailer, its
//! vermagic, and its split BTF (what a kernel without symbol CRCs checks instead).
//!
//! The judgement lives elsewhere ([`super::abi`] for symbol versions; signature enforcement is
//! a host fact): these are the file's side of it, so a check can combine them with facts
//! already read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::btf::{self, FrwrEvidence, FrwrGeneration, ModuleBtf};
use super::elf::Image;
use super::modinfo::parse_modinfo;
use super::modversions::{self, ExportCrcs, ImportVersions};
use super::signature::{self, ModuleSignature};
use super::{elf_image, Compression, KmodError};

/// The module's signature trailer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SignatureFacts {
    Unsigned,
    Signed(ModuleSignature),
    /// There is a trailer, but it cannot be read (truncated, bad DER): the kernel refuses such a
    /// module where it checks signatures.
    Unreadable {
        reason: String,
    },
}

impl SignatureFacts {
    pub fn of_image(image: &[u8]) -> Self {
        match signature::parse_signature(image) {
            Ok(None) => SignatureFacts::Unsigned,
            Ok(Some(s)) => SignatureFacts::Signed(s),
            Err(e) => SignatureFacts::Unreadable {
                reason: e.to_string(),
            },
        }
    }
}

/// The load-time facts of one module file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadFacts {
    pub path: PathBuf,
    pub compression: Compression,
    pub imports: ImportVersions,
    pub exports: ExportCrcs,
    pub signature: SignatureFacts,
    /// `.modinfo`'s vermagic, trimmed.
    #[serde(default)]
    pub vermagic: Option<String>,
    /// The module's split BTF (`.BTF`), or why it could not be read; `None` without one.
    #[serde(default)]
    pub btf: Option<Result<ModuleBtf, String>>,
    /// rpcrdma's `frwr_map()` generation and what told it; `None` where nothing does.
    #[serde(default)]
    pub frwr_map: Option<(FrwrGeneration, FrwrEvidence)>,
}

/// Load facts of module file bytes (plain or compressed); `path` names the file.
pub fn load_facts_of_bytes(path: &Path, bytes: &[u8]) -> Result<LoadFacts, KmodError> {
    let (compression, image) = elf_image(path, bytes)?;
    let elf_err = |source| KmodError::Elf {
        path: path.to_owned(),
        compression,
        source,
    };
    let parsed = Image::parse(&image).map_err(elf_err)?;
    let imports = modversions::import_versions_of(&parsed).map_err(elf_err)?;
    let exports = modversions::export_crcs_of(&parsed).map_err(elf_err)?;
    let vermagic = match parsed.find_section(".modinfo") {
        Some((_, sh)) => {
            parse_modinfo(
                parsed
                    .section_data(sh, "section .modinfo")
                    .map_err(elf_err)?,
            )
            .vermagic
        }
        None => None,
    };
    let btf = match parsed.find_section(".BTF") {
        Some((_, sh)) => {
            let data = parsed.section_data(sh, "section .BTF").map_err(elf_err)?;
            let base = match parsed.find_section(".BTF.base") {
                Some((_, sh)) => Some(
                    parsed
                        .section_data(sh, "section .BTF.base")
                        .map_err(elf_err)?,
                ),
                None => None,
            };
            Some(btf::module_btf(data, base).map_err(|e| e.to_string()))
        }
        None => None,
    };
    let from_btf = match &btf {
        Some(Ok(b)) if b.frwr != FrwrGeneration::Unknown => Some((b.frwr, FrwrEvidence::Btf)),
        _ => None,
    };
    let frwr_map = from_btf.or_else(|| {
        parsed
            .defined_symbols()
            .any(|(name, _)| {
                name.strip_prefix(btf::MR_SEG_FILLER)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"."))
            })
            .then_some((FrwrGeneration::MrSeg, FrwrEvidence::Symbols))
    });
    Ok(LoadFacts {
        path: path.to_owned(),
        compression,
        imports,
        exports,
        signature: SignatureFacts::of_image(&image),
        vermagic,
        btf,
        frwr_map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmod::btf::FrwrGeneration;

    /// Debian's own rpcrdma of each kernel, shrunk (see `tests/fixtures/kernels/README.md`).
    fn debian_rpcrdma(name: &str) -> LoadFacts {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kernels")
            .join(format!("rpcrdma-{name}.ko.xz"));
        let bytes = std::fs::read(&path).unwrap();
        load_facts_of_bytes(&path, &bytes).unwrap()
    }

    #[test]
    fn debians_rpcrdma_tells_its_vermagic_btf_and_frwr_generation() {
        for (release, vermagic, versioned, types, base, frwr) in [
            (
                "6.12.117+deb13-amd64",
                "6.12.117+deb13-amd64 SMP preempt mod_unload modversions",
                true,
                1789,
                2_060_882,
                FrwrGeneration::MrSeg,
            ),
            (
                "7.2.13+deb14-amd64",
                "7.2.13+deb14-amd64 SMP preempt mod_unload",
                false,
                2664,
                2_273_004,
                FrwrGeneration::XdrCursor,
            ),
            (
                "7.3.4+deb13-amd64",
                "7.3.4+deb13-amd64 SMP preempt mod_unload",
                false,
                4024,
                2_317_542,
                FrwrGeneration::XdrCursor,
            ),
        ] {
            let f = debian_rpcrdma(release);
            assert_eq!(f.vermagic.as_deref(), Some(vermagic));
            assert_eq!(
                matches!(f.imports, ImportVersions::Versioned { .. }),
                versioned,
                "{release}"
            );
            let btf = f.btf.unwrap().unwrap();
            assert_eq!(
                (
                    btf.own_types,
                    btf.base_str_len,
                    btf.frwr,
                    btf.has_distilled_base()
                ),
                (types, Some(base), frwr, false),
                "{release}"
            );
        }
        let without = debian_rpcrdma("7.3.4+deb13-amd64-nobtf");
        assert_eq!(without.btf, None);
        assert!(without.vermagic.is_some());
        assert_eq!(
            without.frwr_map, None,
            "no BTF and no symbol table: nothing tells"
        );
    }
}
