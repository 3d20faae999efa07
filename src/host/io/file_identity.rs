//! What identifies one version of a file: its metadata (path, device, inode, size,
//! modification and change times), never its content — the one answer to "is this file
//! unchanged", for the facts cache (why that is enough is said in
//! [`facts_cache`](crate::host::io::facts_cache)) and for what a derivation read
//! ([`inputs`](super::inputs), which also asks that the file had [settled](FileIdentity::settled_at)).
//! Taken from one `stat` of a path below the root ([`Root::identity`](super::root::Root::identity)),
//! or from the descriptor a file was read through.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::reader::{self, FileKind, FileRead};

/// How long after its last change a file's identity is trusted: file times move in clock ticks,
/// so a file changed again within the tick it was read in keeps its times. A file changed more
/// recently than this when it was read counts as changed at the next look (like git's "racily
/// clean" entries), and is looked at again then, by when it has settled.
pub const SETTLE: Duration = Duration::from_secs(2);

/// What identifies one version of a file: its metadata, never its content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileIdentity {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl FileIdentity {
    /// The identity of the file whose metadata is `meta`, shown as `path`.
    pub fn of_meta(path: &Path, meta: &fs::Metadata) -> Self {
        FileIdentity {
            path: path.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file had last changed at least [`SETTLE`] before `read_at` (a change time
    /// after it has not): only then do its times tell a later change.
    pub fn settled_at(&self, read_at: SystemTime) -> bool {
        let (secs, nanos) = self.ctime;
        let changed = u64::try_from(secs)
            .ok()
            .map(|s| SystemTime::UNIX_EPOCH + Duration::new(s, u32::try_from(nanos).unwrap_or(0)));
        changed
            .and_then(|c| read_at.duration_since(c).ok())
            .is_some_and(|age| age >= SETTLE)
    }

    /// Reads the file `path` names now and returns its identity and content.
    pub fn read(path: &Path) -> io::Result<(Self, Vec<u8>)> {
        let file = ReadFile::open(path)?;
        Ok((file.identity(), file.bytes))
    }
}

/// A file read whole, with the metadata of the very inode that was read.
#[derive(Debug)]
pub struct ReadFile {
    /// The canonical path (symlinks resolved).
    pub path: PathBuf,
    meta: fs::Metadata,
    pub bytes: Vec<u8>,
}

impl ReadFile {
    /// Reads the file `path` names, with the host reader's rules (a regular file, capped).
    pub fn open(path: &Path) -> io::Result<Self> {
        let canonical = fs::canonicalize(path)?;
        let read = reader::read_named(&canonical, FileKind::of(&canonical))
            .map_err(io::Error::other)?
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(ReadFile {
            path: canonical,
            meta: read.meta,
            bytes: read.bytes,
        })
    }

    /// The identity of what was read: the metadata of the very descriptor it was read from.
    pub fn identity(&self) -> FileIdentity {
        FileIdentity::of_meta(&self.path, &self.meta)
    }
}

impl From<FileRead> for ReadFile {
    /// A file the host reader read (below a root, resolved inside it); its path is the one shown
    /// for it, as the root joins it.
    fn from(read: FileRead) -> Self {
        ReadFile {
            path: read.path,
            meta: read.meta,
            bytes: read.bytes,
        }
    }
}
