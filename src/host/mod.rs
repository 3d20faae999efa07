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
pub mod nvidia_fs;
pub mod symbol_providers;
pub mod sysmodule;

use std::io;
use std::path::{Path, PathBuf};

/// A failed read of a host file. Always names the path (as seen on the host, i.e. with the root).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not valid UTF-8 text", path.display())]
    NotText { path: PathBuf },
    #[error("{} is corrupt: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot list {}: {source}", path.display())]
    List { path: PathBuf, source: io::Error },
}

/// The directory every host path is resolved against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root { dir: dir.into() }
    }

    /// The machine itself.
    pub fn host() -> Self {
        Root::new("/")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn is_host(&self) -> bool {
        self.dir == Path::new("/")
    }

    /// `rel` below the root; a leading `/` in `rel` is ignored, so host paths can be passed as-is.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.dir.join(rel)
    }

    /// Reads a text file; `Ok(None)` when it does not exist.
    pub fn read_text(&self, rel: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        let path = self.join(rel);
        match self.read_bytes_at(&path)? {
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
        let path = self.join(rel);
        Ok(self
            .read_bytes_at(&path)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Reads a file's bytes; `Ok(None)` when it does not exist.
    pub fn read_bytes(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>, HostError> {
        let path = self.join(rel);
        self.read_bytes_at(&path)
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
        std::fs::symlink_metadata(self.join(rel)).is_ok()
    }

    /// The names in a directory, sorted; `Ok(None)` when the directory does not exist.
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<String>>, HostError> {
        let path = self.join(rel);
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
