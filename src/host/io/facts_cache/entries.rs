//! The cache's entries as they are written: each with what it was drawn from, what was found,
//! and the nfs-gds version and entry format that wrote it; and the keys of symbol-version
//! verdicts.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::host::io::file_identity::FileIdentity;
use crate::kmod::abi::{AbiVerdict, KernelModversions};
use crate::kmod::ModuleFile;

/// Bumped whenever the entry format or what the readers conclude changes. 2: identities
/// without a content hash; `load` and `abi` entries. 3: module facts name versioned variants of
/// the hooks; `abi` keyed on the build symvers. 4: import versions externally tagged. 5: each
/// import version a `[symbol, crc]` pair. 6: symbol-version verdicts externally tagged. 7: load
/// facts carry the vermagic and the split BTF. 8: and the distilled base, type by type.
pub(super) const FORMAT: u32 = 8;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ModuleEntry {
    pub(super) format: u32,
    pub(super) tool: String,
    pub(super) key: FileIdentity,
    pub(super) wanted: Vec<String>,
    pub(super) facts: ModuleFile,
    /// `Modinfo::all` is not part of the facts' JSON form; kept here so a hit is complete.
    pub(super) modinfo_all: Vec<(String, String)>,
}

/// An entry: what it was drawn from (`key`), what was found, and who wrote it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Entry<K, V> {
    pub(super) format: u32,
    pub(super) tool: String,
    pub(super) key: K,
    pub(super) value: V,
}

impl<K: Clone + PartialEq, V: Clone> Entry<K, V> {
    pub(super) fn new(key: &K, value: &V) -> Self {
        Entry {
            format: FORMAT,
            tool: env!("CARGO_PKG_VERSION").to_string(),
            key: key.clone(),
            value: value.clone(),
        }
    }

    /// Written by this version of nfs-gds, in this format, for `key`.
    pub(super) fn fresh(&self, key: &K) -> bool {
        self.format == FORMAT && self.tool == env!("CARGO_PKG_VERSION") && &self.key == key
    }
}

/// What a module's symbol-version verdict is drawn from, besides its provider files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbiKey {
    /// The module judged (its normalized name).
    pub module: String,
    /// A hash of the imports judged: their names and CRCs, in order.
    pub imports: u64,
    pub modversions: KernelModversions,
    /// `modules.symbols` and `modules.dep`, binary and text, as they are now (`None`: absent).
    pub indexes: Vec<Option<FileIdentity>>,
    /// The tree's `build` link and the build `Module.symvers` a derivation would find now: a
    /// headers package installed, upgraded or removed, or the link moved, draws the verdict again.
    pub symvers: SymversKey,
}

impl AbiKey {
    /// What names its entry: the module, in this tree (its indexes' paths).
    pub(super) fn name(&self) -> (&str, Vec<&Path>) {
        let tree = self.indexes.iter().flatten().map(|i| i.path.as_path());
        (&self.module, tree.collect())
    }
}

/// What a verdict drawn from a module tree's build `Module.symvers` depends on besides the
/// file's content: the tree's `build` link's target and the identity of the symvers file a
/// derivation would use now.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SymversKey {
    pub build_link: Option<String>,
    pub file: Option<FileIdentity>,
}

/// A verdict as it was drawn, for [`FactsCache::abi`](super::FactsCache::abi).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbiAnswer {
    pub verdict: AbiVerdict,
    /// The provider modules whose CRCs were compared.
    pub used: Vec<String>,
    /// Every provider file read, as it was.
    pub providers: Vec<FileIdentity>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ScanEntry {
    pub(super) format: u32,
    pub(super) tool: String,
    pub(super) key: FileIdentity,
    pub(super) needle: String,
    pub(super) found: bool,
    pub(super) payload: String,
}
