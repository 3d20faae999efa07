//! Everything nfs-gds reads from the machine, always below a root directory.
//!
//! The root is `/` in production and a fixture tree in tests (`--root`, `NFS_GDS_ROOT`). Each
//! reader is split into a pure `parse_*` over text and a thin `read_*` that takes the [`Root`]; a
//! missing file is an answer (`None`), never an error. Only real I/O failures (permission, a
//! directory where a file was expected, invalid UTF-8) become [`HostError`]s, and they carry the path.

pub mod facts;
pub mod gpl_rule;
pub mod kallsyms;
pub mod kernel;
pub mod modules;
pub mod mounts;
pub mod nvfs_probe;
pub mod nvidia_fs;
pub mod programs;
pub mod sysmodule;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A failed read of a host file. Always names the path (as seen on the host, i.e. with the root).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not valid UTF-8 text", path.display())]
    NotText { path: PathBuf },
    #[error("cannot list {}: {source}", path.display())]
    List { path: PathBuf, source: io::Error },
}

/// The directory every host path is resolved against. A root made [`recording`](Root::recording)
/// also keeps a [`Record`] of everything read through it (clones share it), which is how
/// `collect` knows exactly what doctor read.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
    record: Option<Arc<Mutex<Record>>>,
}

impl PartialEq for Root {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir
    }
}

impl Eq for Root {}

/// What was read below a root, by path relative to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Files whose contents were read.
    pub files: BTreeSet<PathBuf>,
    /// Paths whose existence was looked at, and were there.
    pub present: BTreeSet<PathBuf>,
    /// Directories that were listed, with the names they held.
    pub listed: BTreeMap<PathBuf, Vec<String>>,
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root {
            dir: dir.into(),
            record: None,
        }
    }

    /// The same root, keeping a record of what is read through it.
    pub fn recording(&self) -> Self {
        Root {
            dir: self.dir.clone(),
            record: Some(Arc::new(Mutex::new(Record::default()))),
        }
    }

    /// What has been read so far through a recording root (empty for any other).
    pub fn record(&self) -> Record {
        self.record
            .as_ref()
            .and_then(|r| r.lock().ok().map(|r| r.clone()))
            .unwrap_or_default()
    }

    /// Notes a file read below the root by a reader that opens it itself (module files, the
    /// kernel image); `path` is the full path, as [`Root::join`] gives it.
    pub fn note_file_read(&self, path: &Path) {
        if let Ok(rel) = path.strip_prefix(&self.dir) {
            self.note(|r| {
                r.files.insert(rel.to_owned());
            });
        }
    }

    fn note(&self, f: impl FnOnce(&mut Record)) {
        if let Some(Ok(mut r)) = self.record.as_ref().map(|r| r.lock()) {
            f(&mut r);
        }
    }

    fn rel(rel: &Path) -> PathBuf {
        rel.strip_prefix("/").unwrap_or(rel).to_owned()
    }

    /// The machine itself.
    pub fn host() -> Self {
        Root::new("/")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `rel` below the root; a leading `/` in `rel` is ignored, so host paths can be passed as-is.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.dir.join(rel)
    }

    /// Reads a text file; `Ok(None)` when it does not exist.
    pub fn read_text(&self, rel: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        let path = self.join(&rel);
        match self.read_bytes_noted(rel.as_ref(), &path)? {
            None => Ok(None),
            Some(bytes) => match String::from_utf8(bytes) {
                Ok(s) => Ok(Some(s)),
                Err(_) => Err(HostError::NotText { path }),
            },
        }
    }

    /// Reads a text file that may contain stray non-UTF-8 bytes (kernel logs, kallsyms of odd
    /// modules); they are replaced rather than refused.
    pub fn read_text_lossy(&self, rel: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        let path = self.join(&rel);
        Ok(self
            .read_bytes_noted(rel.as_ref(), &path)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Reads a file's bytes; `Ok(None)` when it does not exist.
    pub fn read_bytes(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>, HostError> {
        let path = self.join(&rel);
        self.read_bytes_noted(rel.as_ref(), &path)
    }

    fn read_bytes_noted(&self, rel: &Path, path: &Path) -> Result<Option<Vec<u8>>, HostError> {
        let bytes = self.read_bytes_at(path)?;
        if bytes.is_some() {
            self.note(|r| {
                r.files.insert(Self::rel(rel));
            });
        }
        Ok(bytes)
    }

    fn read_bytes_at(&self, path: &Path) -> Result<Option<Vec<u8>>, HostError> {
        match std::fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if is_absent(&e) => Ok(None),
            Err(source) => Err(HostError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Whether a path exists below the root (files, directories, device nodes alike).
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        let there = std::fs::symlink_metadata(self.join(&rel)).is_ok();
        if there {
            self.note(|r| {
                r.present.insert(Self::rel(rel.as_ref()));
            });
        }
        there
    }

    /// The names in a directory, sorted; `Ok(None)` when the directory does not exist.
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<String>>, HostError> {
        let path = self.join(&rel);
        let entries = match std::fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if is_absent(&e) => return Ok(None),
            Err(source) => return Err(HostError::List { path, source }),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| HostError::List {
                path: path.clone(),
                source,
            })?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        self.note(|r| {
            r.listed.insert(Self::rel(rel.as_ref()), names.clone());
        });
        Ok(Some(names))
    }
}

/// "Not there" in any of the ways the kernel says it: no such file, or a path component that is
/// not a directory.
fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Reads the first line of a sysfs-style file, trimmed; `None` when absent or empty.
pub(crate) fn read_first_line(root: &Root, rel: &str) -> Result<Option<String>, HostError> {
    Ok(root
        .read_text(rel)?
        .and_then(|s| s.lines().next().map(|l| l.trim().to_string()))
        .filter(|s| !s.is_empty()))
}
pub use facts::HostFacts;
