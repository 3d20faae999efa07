//! What identifies one version of a file for the facts cache: its metadata (path, device,
//! inode, size, modification and change times), never its content — why that is enough is
//! said in [`facts_cache`](crate::host::io::facts_cache). Taken from one `stat` of a path
//! below the root, or from the descriptor a file was read through.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::host::Root;

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

    /// The identity of the file at `rel` below `root` now (symlinks followed inside the root),
    /// from its metadata alone: nothing is opened for reading. `None` when it is absent or
    /// cannot be looked at.
    pub fn of_path_below(root: &Root, rel: &Path) -> Option<Self> {
        let meta = root.metadata(rel).ok()??;
        meta.is_file()
            .then(|| Self::of_meta(&root.join(rel), &meta))
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
        let read =
            crate::host::io::reader::read_named(&canonical, crate::host::FileKind::of(&canonical))
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

impl From<crate::host::FileRead> for ReadFile {
    /// A file the host reader read (below a root, resolved inside it); its path is the one shown
    /// for it, as the root joins it.
    fn from(read: crate::host::FileRead) -> Self {
        ReadFile {
            path: read.path,
            meta: read.meta,
            bytes: read.bytes,
        }
    }
}
