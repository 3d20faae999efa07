//! Whether the cache's directory and entries may be trusted: owned by the cache's owner (root),
//! not writable by group or others, and in a parent that cannot swap the directory out.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::FactsCache;

/// Why a cache location was not trusted.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{} is not owned by uid {owner} (owner uid {uid})", path.display())]
    Owner { path: PathBuf, owner: u32, uid: u32 },
    #[error("{} is writable by group or others (mode {mode:o})", path.display())]
    Writable { path: PathBuf, mode: u32 },
    #[error("{} is not a {kind}", path.display())]
    Kind { path: PathBuf, kind: &'static str },
    #[error("cannot use {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl FactsCache {
    pub(super) fn trusted(
        &self,
        path: &Path,
        m: &fs::Metadata,
        kind: &'static str,
    ) -> Result<(), Refusal> {
        let is_kind = match kind {
            "directory" => m.file_type().is_dir(),
            _ => m.file_type().is_file(),
        };
        if !is_kind {
            return Err(Refusal::Kind {
                path: path.to_owned(),
                kind,
            });
        }
        if m.uid() != self.owner {
            return Err(Refusal::Owner {
                path: path.to_owned(),
                owner: self.owner,
                uid: m.uid(),
            });
        }
        if m.mode() & 0o022 != 0 {
            return Err(Refusal::Writable {
                path: path.to_owned(),
                mode: m.mode() & 0o7777,
            });
        }
        Ok(())
    }

    /// Checks the directory (and that its parent cannot swap it out), creating it when absent.
    pub(super) fn ready_dir(&self, create: bool) -> Result<bool, Refusal> {
        let io_err = |path: &Path| {
            let path = path.to_owned();
            move |source| Refusal::Io { path, source }
        };
        let m = match fs::symlink_metadata(&self.dir) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !create {
                    return Ok(false);
                }
                if let Some(parent) = self.dir.parent() {
                    fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o755)
                        .create(parent)
                        .map_err(io_err(parent))?;
                }
                // Judge the parent before making anything in it.
                self.parent_trusted()?;
                fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&self.dir)
                    .map_err(io_err(&self.dir))?;
                fs::symlink_metadata(&self.dir).map_err(io_err(&self.dir))?
            }
            Err(e) => return Err(io_err(&self.dir)(e)),
        };
        self.trusted(&self.dir, &m, "directory")?;
        self.parent_trusted()?;
        Ok(true)
    }

    /// The cache directory's parent cannot swap it out: owned by root or the owner, and not
    /// writable by others unless sticky (as `/tmp`, where only an entry's owner may rename it).
    fn parent_trusted(&self) -> Result<(), Refusal> {
        let io_err = |path: &Path| {
            let path = path.to_owned();
            move |source| Refusal::Io { path, source }
        };
        if let Some(parent) = self.dir.parent() {
            let pm = fs::metadata(parent).map_err(io_err(parent))?;
            let sticky = pm.mode() & 0o1000 != 0;
            if pm.uid() != self.owner && pm.uid() != 0 {
                return Err(Refusal::Owner {
                    path: parent.to_owned(),
                    owner: self.owner,
                    uid: pm.uid(),
                });
            }
            if pm.mode() & 0o022 != 0 && !sticky {
                return Err(Refusal::Writable {
                    path: parent.to_owned(),
                    mode: pm.mode() & 0o7777,
                });
            }
        }
        Ok(())
    }
}
