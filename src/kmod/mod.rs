//! Kernel module files: what a `.ko` (plain or compressed) really contains.
//!
//! [`inspect_file`] answers, for one file: its compression, `.modinfo` identity, GNU build-id,
//! and for each nvfs hook whether it is defined and how it is exported. It reads only the file
//! it is given; which file modprobe would pick is [`crate::host::modules`]'s business.
//! [`inspect_file_with_cache`] reads a file below the root (resolved inside it) and answers from
//! the root-only [`cache`] when the file is unchanged. Files are read with the host reader's
//! rules ([`crate::host::reader`]): regular files only, at most [`FileKind::ModuleFile`]'s cap.

pub mod abi;
pub mod cache;
pub mod decompress;
pub mod elf;
pub mod image_scan;
pub mod index;
pub mod load_facts;
pub mod modinfo;
pub mod modversions;
pub mod signature;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::host::reader::{self, FileKind, FileRead};
use crate::host::{HostError, Root};
pub use decompress::{Compression, MODULE_SIZE_CAP};
pub use elf::{Export, ExportLayout, SymbolFacts};
pub use modinfo::Modinfo;

/// The two symbols nvidia-fs looks up in rpcrdma with `__symbol_get`.
pub const RPCRDMA_HOOKS: [&str; 2] = [
    "rpcrdma_register_nvfs_dma_ops",
    "rpcrdma_unregister_nvfs_dma_ops",
];

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
}

impl ModuleFile {
    pub fn symbol(&self, name: &str) -> Option<&SymbolFacts> {
        self.symbols.iter().find(|s| s.symbol == name)
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
    #[error(transparent)]
    Host(#[from] HostError),
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

/// Reads a module file whole: a regular file of at most [`MODULE_SIZE_CAP`] bytes. Opened
/// non-blocking, so a FIFO in its place is refused instead of waited on.
pub fn read_module_bytes(path: &Path) -> Result<Vec<u8>, KmodError> {
    Ok(reader::read_named(path, FileKind::ModuleFile)
        .map_err(opening)?
        .ok_or_else(|| absent(path))?
        .bytes)
}

/// Inspects module file bytes; `path` is only used to name the file in facts and errors.
pub fn inspect_bytes(path: &Path, bytes: &[u8], wanted: &[&str]) -> Result<ModuleFile, KmodError> {
    let (compression, image) = elf_image(path, bytes)?;
    let image: &[u8] = &image;
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
    })
}

/// Reads and inspects a module file named on the command line (relative to the working
/// directory, symlinks followed).
pub fn inspect_file(path: &Path, wanted: &[&str]) -> Result<ModuleFile, KmodError> {
    let file = reader::read_named(path, FileKind::ModuleFile)
        .map_err(opening)?
        .ok_or_else(|| absent(path))?;
    inspect_bytes(path, &file.bytes, wanted)
}

fn absent(path: &Path) -> KmodError {
    KmodError::Read {
        path: path.to_owned(),
        source: std::io::Error::from_raw_os_error(rustix::io::Errno::NOENT.raw_os_error()),
    }
}

/// A directory given where a module file was expected gets its own words.
fn opening(e: HostError) -> KmodError {
    match e {
        HostError::NotRegular {
            path,
            what: "a directory",
        } => KmodError::IsDirectory { path },
        e => KmodError::Host(e),
    }
}

/// Reads the module file at `path` (a host path below `root`, as module resolution gives it),
/// resolved inside the root, and inspects it: answered from `cache` when it holds the facts of
/// this very version of the file (same identity and content hash); fresh answers are stored.
/// Uncompressed modules bypass the cache: hashing them costs about what parsing them does.
pub fn inspect_file_with_cache(
    root: &Root,
    path: &Path,
    wanted: &[&str],
    cache: Option<&cache::FactsCache>,
) -> Result<ModuleFile, KmodError> {
    let rel = root.rel_of(path).unwrap_or_else(|| path.to_owned());
    let file = root
        .read_file(&rel, FileKind::ModuleFile)
        .map_err(opening)?
        .ok_or_else(|| absent(path))?;
    inspect_read(file, wanted, cache)
}

/// [`inspect_file_with_cache`] and the file's [`load_facts`] from one read and one
/// decompression: the load facts (symbol versions, signature) are parsed from the image that is
/// decompressed anyway, and the inspection is answered from `cache` when it holds this file.
pub fn inspect_with_load_facts(
    root: &Root,
    path: &Path,
    wanted: &[&str],
    cache: Option<&cache::FactsCache>,
) -> Result<(ModuleFile, Result<load_facts::LoadFacts, String>), KmodError> {
    let rel = root.rel_of(path).unwrap_or_else(|| path.to_owned());
    let file = root
        .read_file(&rel, FileKind::ModuleFile)
        .map_err(opening)?
        .ok_or_else(|| absent(path))?;
    let read = cache::ReadFile::from(file);
    let (compression, image) = elf_image(path, &read.bytes)?;
    let mut load = load_facts::load_facts_of_bytes(path, &image).map_err(|e| e.to_string());
    if let Ok(l) = &mut load {
        l.compression = compression;
    }
    if compression == Compression::None {
        return Ok((inspect_bytes(path, &read.bytes, wanted)?, load));
    }
    let inspected = match cache {
        None => inspect_image(path, &read.bytes, compression, &image, wanted)?,
        Some(cache) => {
            let key = read.identity();
            match cache.module(&key, wanted) {
                Some(mut facts) => {
                    facts.path = path.to_owned();
                    facts
                }
                None => {
                    let facts = inspect_image(path, &read.bytes, compression, &image, wanted)?;
                    cache.store_module(&key, wanted, &facts);
                    facts
                }
            }
        }
    };
    Ok((inspected, load))
}

/// Inspects an ELF image already decompressed from `bytes`.
fn inspect_image(
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
    })
}

/// Inspects a module file already read, consulting `cache` as [`inspect_file_with_cache`] does.
pub fn inspect_read(
    file: FileRead,
    wanted: &[&str],
    cache: Option<&cache::FactsCache>,
) -> Result<ModuleFile, KmodError> {
    let path = file.path.clone();
    let Some(cache) = cache else {
        return inspect_bytes(&path, &file.bytes, wanted);
    };
    if matches!(
        decompress::sniff(&file.bytes),
        None | Some(Compression::None)
    ) {
        return inspect_bytes(&path, &file.bytes, wanted);
    }
    let file = cache::ReadFile::from(file);
    let key = file.identity();
    if let Some(mut facts) = cache.module(&key, wanted) {
        // The entry may have been written for the same file under another name.
        facts.path = path;
        return Ok(facts);
    }
    let facts = inspect_bytes(&path, &file.bytes, wanted)?;
    cache.store_module(&key, wanted, &facts);
    Ok(facts)
}
