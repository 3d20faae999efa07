//! Module files and kernel images as read from the host: the reading half of what
//! [`crate::kmod`] parses. Files below the root are read inside it ([`Root::read_file`]), or
//! answered from the root-only facts cache ([`facts_cache`](crate::host::io::facts_cache))
//! without being opened while their identity is unchanged;
//! files named on the command line are held to the same reader rules: regular files only, at
//! most [`FileKind::ModuleFile`]'s cap.

use std::path::Path;

use crate::host::io::error::HostError;
use crate::host::io::facts_cache::{self, FactsCache, FileIdentity};
use crate::host::io::reader::{self, FileKind};
use crate::host::io::root::Root;
use crate::kmod::image_scan::{self, Budget, FileImage, ScanOutcome};
use crate::kmod::load_facts::{load_facts_of_bytes, LoadFacts};
use crate::kmod::{self, inspect_bytes, Compression, KmodError, ModuleFile};

/// Reads a module file whole: a regular file of at most [`crate::kmod::MODULE_SIZE_CAP`] bytes. Opened
/// non-blocking, so a FIFO in its place is refused instead of waited on.
pub fn read_module_bytes(path: &Path) -> Result<Vec<u8>, KmodError> {
    Ok(reader::read_named(path, FileKind::ModuleFile)
        .map_err(opening)?
        .ok_or_else(|| absent(path))?
        .bytes)
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
        e => KmodError::Unreadable(e.to_string()),
    }
}

/// The identity of the module file at `path` (a host path below `root`) when a cache is used:
/// one `stat`, nothing opened.
fn identity_below(root: &Root, path: &Path, cache: Option<&FactsCache>) -> Option<FileIdentity> {
    cache?;
    let rel = root.rel_of(path).unwrap_or_else(|| path.to_owned());
    root.identity(&rel)
}

/// Reads the module file at `path` (a host path below `root`), resolved inside the root.
fn read_below(root: &Root, path: &Path) -> Result<facts_cache::ReadFile, KmodError> {
    let rel = root.rel_of(path).unwrap_or_else(|| path.to_owned());
    let file = root
        .read_file(&rel, FileKind::ModuleFile)
        .map_err(opening)?
        .ok_or_else(|| absent(path))?;
    Ok(facts_cache::ReadFile::from(file))
}

/// Inspects the module file at `path` (a host path below `root`, as module resolution gives
/// it): answered from `cache` without opening the file when it holds the facts of this very
/// version of it (same identity, [`facts_cache`]); otherwise read inside the root, and the
/// fresh answer stored.
pub fn inspect_file_with_cache(
    root: &Root,
    path: &Path,
    wanted: &[&str],
    cache: Option<&FactsCache>,
) -> Result<ModuleFile, KmodError> {
    let known = identity_below(root, path, cache);
    if let (Some(cache), Some(key)) = (cache, &known) {
        if let Some(facts) = cache.module(key, wanted) {
            return Ok(with_path(facts, path));
        }
        return cache.after_miss(
            || cache.module(key, wanted).map(|f| Ok(with_path(f, path))),
            || inspect_read(read_below(root, path)?, wanted, Some(cache)),
        );
    }
    inspect_read(read_below(root, path)?, wanted, cache)
}

/// The entry may have been written for the same file under another name.
fn with_path(mut facts: ModuleFile, path: &Path) -> ModuleFile {
    facts.path = path.to_owned();
    facts
}

/// Inspects a module file already read, and stores the answer in `cache` under the identity of
/// what was read.
fn inspect_read(
    file: facts_cache::ReadFile,
    wanted: &[&str],
    cache: Option<&FactsCache>,
) -> Result<ModuleFile, KmodError> {
    let facts = inspect_bytes(&file.path, &file.bytes, wanted)?;
    if let Some(cache) = cache {
        cache.store_module(&file.identity(), wanted, &facts);
    }
    Ok(facts)
}

/// [`inspect_file_with_cache`] and the file's load facts: from `cache` alone when it holds both
/// for this version of the file, else from one read and one decompression (the load facts —
/// symbol versions, signature — are parsed from the image decompressed for the inspection),
/// both then stored.
pub fn inspect_with_load_facts(
    root: &Root,
    path: &Path,
    wanted: &[&str],
    cache: Option<&FactsCache>,
) -> Result<(ModuleFile, Result<LoadFacts, String>), KmodError> {
    let known = identity_below(root, path, cache);
    if let (Some(cache), Some(key)) = (cache, &known) {
        let look = || {
            let (facts, load) = (cache.module(key, wanted)?, cache.load_facts(key)?);
            Some(Ok((with_path(facts, path), Ok(load_with_path(load, path)))))
        };
        if let Some(hit) = look() {
            return hit;
        }
        return cache.after_miss(look, || {
            derive_with_load_facts(root, path, wanted, Some(cache))
        });
    }
    derive_with_load_facts(root, path, wanted, cache)
}

/// [`inspect_with_load_facts`] from the file, the answers stored in `cache`.
fn derive_with_load_facts(
    root: &Root,
    path: &Path,
    wanted: &[&str],
    cache: Option<&FactsCache>,
) -> Result<(ModuleFile, Result<LoadFacts, String>), KmodError> {
    let read = read_below(root, path)?;
    let (compression, image) = kmod::elf_image(path, &read.bytes)?;
    let mut load = load_facts_of_bytes(path, &image).map_err(|e| e.to_string());
    if let Ok(l) = &mut load {
        l.compression = compression;
    }
    let inspected = if compression == Compression::None {
        inspect_bytes(path, &read.bytes, wanted)?
    } else {
        kmod::inspect_image(path, &read.bytes, compression, &image, wanted)?
    };
    if let Some(cache) = cache {
        let key = read.identity();
        cache.store_module(&key, wanted, &inspected);
        if let Ok(l) = &load {
            cache.store_load_facts(&key, l);
        }
    }
    Ok((inspected, load))
}

fn load_with_path(mut facts: LoadFacts, path: &Path) -> LoadFacts {
    facts.path = path.to_owned();
    facts
}

/// The load facts of the module file at `path` (a host path below `root`; a provider of
/// imports), answered from `cache` without opening the file while it is unchanged, and the
/// identity of the version they describe (`None` without a cache).
pub fn load_facts_below(
    root: &Root,
    path: &Path,
    cache: Option<&FactsCache>,
) -> (Result<LoadFacts, String>, Option<FileIdentity>) {
    let known = identity_below(root, path, cache);
    if let (Some(cache), Some(key)) = (cache, &known) {
        let look = || {
            Some((
                Ok(load_with_path(cache.load_facts(key)?, path)),
                known.clone(),
            ))
        };
        if let Some(hit) = look() {
            return hit;
        }
        return cache.after_miss(look, || derive_load_facts(root, path, Some(cache)));
    }
    derive_load_facts(root, path, cache)
}

/// [`load_facts_below`] from the file, the answer stored in `cache`.
fn derive_load_facts(
    root: &Root,
    path: &Path,
    cache: Option<&FactsCache>,
) -> (Result<LoadFacts, String>, Option<FileIdentity>) {
    let read = match read_below(root, path) {
        Ok(read) => read,
        Err(e) => return (Err(e.to_string()), None),
    };
    let load = load_facts_of_bytes(path, &read.bytes).map_err(|e| e.to_string());
    let key = cache.map(|_| read.identity());
    if let (Some(cache), Some(key), Ok(l)) = (cache, &key, &load) {
        cache.store_load_facts(key, l);
    }
    (load, key)
}

/// Reads a module file named on the command line and gives what decides whether it loads
/// (symbol versions, exported CRCs, signature).
pub fn read_load_facts(path: &Path) -> Result<LoadFacts, KmodError> {
    let bytes = read_module_bytes(path)?;
    load_facts_of_bytes(path, &bytes)
}

/// Scans the image at `path` (a host path below `root`, opened inside it) for `needle`, answered
/// from `cache` when it holds the answer for this very version of the image (same identity):
/// the scan decompresses tens of MB. The image is never
/// read whole: its header, then the payload it declares, streamed.
pub fn scan_file_with_cache(
    root: &Root,
    path: &Path,
    needle: &[u8],
    cache: Option<&FactsCache>,
) -> ScanOutcome {
    let rel = root.rel_of(path).unwrap_or_else(|| path.to_owned());
    let file = match root.open_file(&rel, FileKind::KernelImage) {
        Ok(Some(file)) => file,
        Ok(None) => {
            return ScanOutcome::Error(format!("cannot read {}: no such file", path.display()))
        }
        Err(e) => return ScanOutcome::Error(e.to_string()),
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => return ScanOutcome::Error(format!("cannot read {}: {e}", path.display())),
    };
    let image = FileImage {
        file: &file,
        size: meta.len(),
    };
    let Some(cache) = cache else {
        return image_scan::scan_file(&image, needle, Budget::DEFAULT);
    };
    let key = facts_cache::FileIdentity::of_meta(path, &meta);
    if let Some(outcome) = cache.image_scan(&key, needle) {
        return outcome;
    }
    cache.after_miss(
        || cache.image_scan(&key, needle),
        || {
            let outcome = image_scan::scan_file(&image, needle, Budget::DEFAULT);
            cache.store_image_scan(&key, needle, &outcome);
            outcome
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A gzip payload holding `__symbol_get` behind an x86 boot header (one setup sector) that
    /// declares it, right after the stub.
    fn small_bzimage() -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"kernel text ... __symbol_get ... more text")
            .unwrap();
        let payload = gz.finish().unwrap();
        let mut image = vec![0u8; 1024];
        image[0x1f1] = 1;
        image[0x202..0x206].copy_from_slice(b"HdrS");
        image[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
        image[0x24c..0x250].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        image.extend_from_slice(&payload);
        image
    }

    #[test]
    fn a_gigabyte_image_is_scanned_without_being_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let path = root.join("boot/vmlinuz-6.1.0");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let image = small_bzimage();
        let file = std::fs::File::create(&path).unwrap();
        (&file).write_all(&image).unwrap();
        // 1000 MiB in all (sparse: the rest costs no disk).
        file.set_len(1000 << 20).unwrap();
        drop(file);
        let before = thread_rchar();
        let outcome = scan_file_with_cache(&root, &path, b"__symbol_get", None);
        let read = thread_rchar() - before;
        assert_eq!(outcome, ScanOutcome::Found { format: "gzip" });
        // The header and the payload it declares, not the gigabyte behind them (the memory
        // this takes is tested on `check` under a data limit, in the integration tests).
        assert!(read < 1 << 20, "read {read} bytes of the image");
    }

    /// Bytes this thread has read through read(2) and pread(2) so far.
    fn thread_rchar() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").expect("/proc/thread-self/io");
        io.lines()
            .find_map(|l| l.strip_prefix("rchar: "))
            .and_then(|n| n.trim().parse().ok())
            .expect("rchar")
    }

    #[test]
    fn a_cached_image_scan_reads_nothing_of_the_image() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let path = root.join("boot/vmlinuz-6.1.0");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // 16 MiB in all, so that reading any sizeable part of the image would show.
        let mut image = small_bzimage();
        image.resize(16 << 20, 0);
        std::fs::write(&path, &image).unwrap();
        let me = nix::unistd::geteuid().as_raw();
        let cache = FactsCache::with_owner(d.path().join("cache"), me);
        let cold = scan_file_with_cache(&root, &path, b"__symbol_get", Some(&cache));
        assert_eq!(cold, ScanOutcome::Found { format: "gzip" });
        let before = thread_rchar();
        let warm = scan_file_with_cache(&root, &path, b"__symbol_get", Some(&cache));
        let read = thread_rchar() - before;
        assert_eq!(warm, cold);
        // The cache entry is a few hundred bytes; the image is not read at all.
        assert!(read < 4096, "a warm scan read {read} bytes");
    }
}
