//! What a derivation read below a root, each path with what it looked like then: how facts
//! derived from files are known to be still true without deriving them again (whether each
//! still looks the same is [`unchanged`](super::unchanged)'s to say).
//!
//! A file on a real file system is told by its identity (device, inode, size, modification and
//! change times to the nanosecond): a rewrite, a replacement or a touch changes one of them. A
//! procfs or sysfs file has a `stat` that says nothing (no blocks, a size of 0 or 4096, the time
//! its inode was made), so such a file — any file without blocks — is told by its bytes, read
//! again. `/proc/kallsyms` is the exception: it is megabytes the kernel generates on every read,
//! and what it adds to the boot's own symbols are those of the loaded modules, which
//! `/proc/modules` lists with their addresses and sizes; it is told by `/proc/modules`, and
//! counts as changed when that was not read. A path looked for and not found, a directory's
//! names, a link's target and a read that failed are kept too: a file that appears, a module
//! that is added, a link that moves, all count as changes; a read that failed counts as changed
//! every time.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
#[cfg(test)]
use std::time::Duration;
use std::time::SystemTime;

use super::file_identity::FileIdentity;
use super::reader::FileKind;

/// The file whose bytes stand for `/proc/kallsyms`'s when kallsyms is generated.
pub(super) const LOADED_MODULES: &str = "proc/modules";

/// What one path looked like when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A file on a real file system, and when it was read.
    File(FileIdentity, SystemTime),
    /// A file whose `stat` says nothing (procfs, sysfs): its bytes, read as `kind`.
    Bytes { kind: FileKind, bytes: Vec<u8> },
    /// Generated kallsyms: told by [`LOADED_MODULES`].
    ByLoadedModules,
    /// Looked for (to read, list or test), and not there.
    Absent,
    /// Whether it existed, for a look that opened nothing.
    Exists(bool),
    /// Whether it was a regular file.
    IsFile(bool),
    /// Whether it was a directory.
    IsDir(bool),
    /// A directory's names, sorted (`None`: no directory there).
    Listing(Option<Vec<String>>),
    /// A symlink's target (`None`: not a link).
    Link(Option<String>),
    /// A read that failed: its facts say so, and are derived again.
    Failed,
}

impl Seen {
    /// A file read whole, shown as `path`: `bytes` are what was read, `meta` the descriptor's.
    pub fn read(path: &Path, kind: FileKind, meta: &Metadata, bytes: &[u8]) -> Self {
        Self::opened(path, kind, meta).unwrap_or_else(|| Seen::Bytes {
            kind,
            bytes: bytes.to_vec(),
        })
    }

    /// A file opened to be read piece by piece; `None` when only its bytes would tell it and
    /// they are not at hand (counted as changed: [`Seen::Failed`]).
    pub fn opened(path: &Path, kind: FileKind, meta: &Metadata) -> Option<Self> {
        if meta.blocks() > 0 {
            Some(Seen::File(
                FileIdentity::of_meta(path, meta),
                SystemTime::now(),
            ))
        } else if kind == FileKind::Kallsyms {
            Some(Seen::ByLoadedModules)
        } else {
            None
        }
    }
}

/// Every path a derivation read, by path relative to the root, with what it was then (the
/// first look, when a path was looked at twice: a change between the two is a change).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs(BTreeMap<PathBuf, Seen>);

impl Inputs {
    /// Keeps what `rel` was, unless it was seen before.
    pub fn note(&mut self, rel: &Path, seen: Seen) {
        self.0.entry(rel.to_owned()).or_insert(seen);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &Seen)> {
        self.0.iter()
    }

    /// The same inputs as if read `later` than they were (a test's files are all fresh).
    #[cfg(test)]
    pub fn read_later(mut self, later: Duration) -> Self {
        for seen in self.0.values_mut() {
            if let Seen::File(_, at) = seen {
                *at += later;
            }
        }
        self
    }

    /// What `rel` was when first looked at.
    pub fn get(&self, rel: &Path) -> Option<&Seen> {
        self.0.get(rel)
    }
}
