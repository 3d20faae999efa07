//! What decides whether the kernel will *load* a module file, read in one pass over its image:
//! the CRCs it expects of its imports, the CRCs of its exports, and its signature trailer.
//!
//! The judgement lives elsewhere ([`super::abi`] for symbol versions; signature enforcement is
//! a host fact): these are the file's side of it, so a check can combine them with facts
//! already read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::elf::Image;
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
    Ok(LoadFacts {
        path: path.to_owned(),
        compression,
        imports,
        exports,
        signature: SignatureFacts::of_image(&image),
    })
}
