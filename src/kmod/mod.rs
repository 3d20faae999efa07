//! Kernel module files: what a `.ko` (plain or compressed) really contains.
//!
//! [`inspect_bytes`] answers, for one file's bytes: its compression, `.modinfo` identity, GNU
//! build-id, and for each nvfs hook whether it is defined and how it is exported. Everything
//! here is a pure function of bytes; reading the files (below the root, with the facts cache)
//! is the business of `host::modules::module_files`, and which file modprobe would pick that of
//! `host::modules`, the layer above.

pub mod abi;
pub mod btf;
pub mod btf_records;
pub mod btf_relocate;
pub mod build_id;
pub mod crcless_load;
pub mod decompress;
pub mod elf;
pub mod fnmatch;
pub mod image_scan;
pub mod index;
pub mod load_facts;
pub mod modinfo;
pub mod modversions;
pub mod signature;
pub mod symvers;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use decompress::{Compression, MODULE_SIZE_CAP};
pub use elf::{Export, ExportLayout, SymbolFacts};
pub use modinfo::Modinfo;

/// The module whose hooks GDS over NFS needs (also the name `proto=rdma` requests).
pub const RPCRDMA: &str = "rpcrdma";

/// The GDS kernel driver's module name.
pub const NVIDIA_FS: &str = "nvidia_fs";

/// The modules whose load failures matter for GDS over NFS.
pub const GDS_MODULES: [&str; 2] = [RPCRDMA, NVIDIA_FS];

/// The two symbols nvidia-fs looks up in rpcrdma with `__symbol_get`.
pub const RPCRDMA_HOOKS: [&str; 2] = [
    "rpcrdma_register_nvfs_dma_ops",
    "rpcrdma_unregister_nvfs_dma_ops",
];

/// The facts of both hooks in a test's module file: defined (exported as `export`) or not
/// there at all.
#[cfg(test)]
pub fn hook_symbols(defined: bool, export: Export) -> Vec<SymbolFacts> {
    RPCRDMA_HOOKS
        .iter()
        .map(|s| SymbolFacts {
            symbol: s.to_string(),
            defined,
            export: if defined {
                export.clone()
            } else {
                Export::NotExported
            },
        })
        .collect()
}

/// The facts of one module file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleFile {
    pub path: PathBuf,
    pub compression: Compression,
    pub file_size: u64,
    pub elf_size: u64,
    pub modinfo: Modinfo,
    pub build_id: Option<String>,
    pub has_symtab: bool,
    /// Where the file keeps the GPL-ness of its exports.
    pub export_layout: ExportLayout,
    pub symbols: Vec<SymbolFacts>,
    /// Defined symbols that version a wanted name (`rpcrdma_v2_register_nvfs_dma_ops`): a hook
    /// ABI this release of nfs-gds does not know.
    #[serde(default)]
    pub versioned_variants: Vec<String>,
}

impl ModuleFile {
    /// The wanted symbols the file does not define (for rpcrdma: the hooks it lacks).
    pub fn missing(&self) -> Vec<&str> {
        self.symbols
            .iter()
            .filter(|s| !s.defined)
            .map(|s| s.symbol.as_str())
            .collect()
    }
}

/// Why a module file could not be inspected. Always names the file.
#[derive(Debug, thiserror::Error)]
pub enum KmodError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is a directory, not a module file", path.display())]
    IsDirectory { path: PathBuf },
    /// The file could not be read as a module file (not a regular file, too large, …); the
    /// message names it.
    #[error("{0}")]
    Unreadable(String),
    #[error("{} is empty", path.display())]
    Empty { path: PathBuf },
    #[error("{} is neither an ELF module nor gzip/xz/zstd-compressed (first bytes: {magic})", path.display())]
    UnknownFormat { path: PathBuf, magic: String },
    #[error("{}: {source}", path.display())]
    Decompress {
        path: PathBuf,
        source: decompress::DecompressError,
    },
    #[error("{}{}: {source}", path.display(), after_decompressing(*compression))]
    Elf {
        path: PathBuf,
        compression: Compression,
        source: elf::ElfError,
    },
}

/// ` (after xz decompression)` for a compressed file, nothing for a plain one.
fn after_decompressing(c: Compression) -> String {
    match c {
        Compression::None => String::new(),
        c => format!(" (after {} decompression)", c.as_str()),
    }
}

/// The ELF image of module file bytes, decompressed when they are compressed; `path` only names
/// the file in errors.
pub fn elf_image<'a>(
    path: &Path,
    bytes: &'a [u8],
) -> Result<(Compression, Cow<'a, [u8]>), KmodError> {
    if bytes.is_empty() {
        return Err(KmodError::Empty {
            path: path.to_owned(),
        });
    }
    let compression = decompress::sniff(bytes).ok_or_else(|| KmodError::UnknownFormat {
        path: path.to_owned(),
        magic: bytes
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" "),
    })?;
    if compression == Compression::None {
        return Ok((compression, Cow::Borrowed(bytes)));
    }
    let owned = decompress::decompress(compression, bytes, MODULE_SIZE_CAP).map_err(|source| {
        KmodError::Decompress {
            path: path.to_owned(),
            source,
        }
    })?;
    Ok((compression, Cow::Owned(owned)))
}

/// Inspects module file bytes; `path` is only used to name the file in facts and errors.
pub fn inspect_bytes(path: &Path, bytes: &[u8], wanted: &[&str]) -> Result<ModuleFile, KmodError> {
    let (compression, image) = elf_image(path, bytes)?;
    inspect_image(path, bytes, compression, &image, wanted)
}

/// Inspects an ELF image already decompressed from `bytes`.
pub fn inspect_image(
    path: &Path,
    bytes: &[u8],
    compression: Compression,
    image: &[u8],
    wanted: &[&str],
) -> Result<ModuleFile, KmodError> {
    let facts = elf::inspect_elf(image, wanted).map_err(|source| KmodError::Elf {
        path: path.to_owned(),
        compression,
        source,
    })?;
    Ok(ModuleFile {
        path: path.to_owned(),
        compression,
        file_size: bytes.len() as u64,
        elf_size: image.len() as u64,
        modinfo: facts.modinfo,
        build_id: facts.build_id,
        has_symtab: facts.has_symtab,
        export_layout: facts.export_layout,
        symbols: facts.symbols,
        versioned_variants: facts.versioned_variants,
    })
}
