//! Whether the cache's directory and entries may be trusted: owned by the cache's owner (root),
//! not writable by group or others (the directory not open to them at all: mode 0700), and in
//! a parent that cannot swap the directory out; and the directory itself, opened inside the
//! root.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::host::io::out_dir::OutDir;
use crate::host::io::root::Root;

/// Why a cache location was not trusted.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{} is not owned by uid {owner} (owner uid {uid})", path.display())]
    Owner { path: PathBuf, owner: u32, uid: u32 },
    #[error("{} is writable by group or others (mode {mode:o})", path.display())]
    Writable { path: PathBuf, mode: u32 },
    #[error("{} is open to group or others (mode {mode:o}): the cache directory is root's alone, mode 0700 (`chmod 700` it)", path.display())]
    Open { path: PathBuf, mode: u32 },
    #[error("{} is not a {kind}", path.display())]
    Kind { path: PathBuf, kind: &'static str },
    #[error("cannot use {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Where a cache is, and whose it must be: the directory `rel` resolved inside `root` (an output
/// directory: a symlinked `var` or `var/cache` in a tree leads inside the tree, never out of
/// it), trusted only when owned by `owner`.
#[derive(Debug, Clone)]
pub(super) struct CacheDir {
    pub(super) root: Root,
    pub(super) rel: PathBuf,
    /// The directory as the host sees it, for messages.
    pub(super) dir: PathBuf,
    pub(super) owner: u32,
}

impl CacheDir {
    /// The directory `rel` below `root`, to be owned by `owner`.
    pub(super) fn new(root: &Root, rel: impl Into<PathBuf>, owner: u32) -> Self {
        let rel = rel.into();
        CacheDir {
            dir: root.join(&rel),
            root: root.clone(),
            rel,
            owner,
        }
    }

    /// `path` (the directory, or an entry in it) is of `kind`, the owner's, and written by no
    /// one else.
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
        if kind == "directory" && m.mode() & 0o077 != 0 {
            return Err(Refusal::Open {
                path: path.to_owned(),
                mode: m.mode() & 0o7777,
            });
        }
        Ok(())
    }

    /// Opens the directory, resolved inside the root as every output is ([`OutDir`]), after
    /// checking that its parent cannot swap it out; creates it (mode 0700) when absent and
    /// `create` says so, else `Ok(None)`.
    pub(super) fn ready_dir(&self, create: bool) -> Result<Option<OutDir>, Refusal> {
        let io_err = |path: &Path| {
            let path = path.to_owned();
            move |source| Refusal::Io { path, source }
        };
        let parent_rel = self.rel.parent().unwrap_or(Path::new(""));
        let Some(name) = self.rel.file_name().and_then(|n| n.to_str()) else {
            return Err(Refusal::Kind {
                path: self.dir.clone(),
                kind: "directory",
            });
        };
        let parent_shown = self.root.join(parent_rel);
        let parent = OutDir::parent(&self.root, parent_rel, create);
        let Some(parent) = parent.map_err(io_err(&parent_shown))? else {
            return Ok(None);
        };
        // Judge the parent before making anything in it.
        self.parent_trusted(&parent)?;
        let dir = match parent.subdir(name, 0o700, create) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                return Err(Refusal::Kind {
                    path: self.dir.clone(),
                    kind: "directory",
                })
            }
            Err(e) => return Err(io_err(&self.dir)(e)),
        };
        let m = dir.metadata().map_err(io_err(&self.dir))?;
        self.trusted(&self.dir, &m, "directory")?;
        Ok(Some(dir))
    }

    /// The cache directory's parent cannot swap it out: owned by root or the owner, and not
    /// writable by others unless sticky (as `/tmp`, where only an entry's owner may rename it).
    fn parent_trusted(&self, parent: &OutDir) -> Result<(), Refusal> {
        let path = parent.path();
        let pm = parent.metadata().map_err(|source| Refusal::Io {
            path: path.to_owned(),
            source,
        })?;
        let sticky = pm.mode() & 0o1000 != 0;
        if pm.uid() != self.owner && pm.uid() != 0 {
            return Err(Refusal::Owner {
                path: path.to_owned(),
                owner: self.owner,
                uid: pm.uid(),
            });
        }
        if pm.mode() & 0o022 != 0 && !sticky {
            return Err(Refusal::Writable {
                path: path.to_owned(),
                mode: pm.mode() & 0o7777,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::io::root::Root;
    use std::os::unix::fs::symlink;

    /// A tree whose `var` (or `var/cache`) is a symlink to a directory outside it.
    fn tree_with_link(link: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let (tree, outside) = (d.path().join("root"), d.path().join("outside"));
        fs::create_dir_all(tree.join(link).parent().unwrap()).unwrap();
        fs::create_dir_all(&outside).unwrap();
        symlink(&outside, tree.join(link)).unwrap();
        (d, tree, outside)
    }

    #[test]
    fn a_symlinked_var_or_var_cache_leads_inside_the_root_never_out_of_it() {
        let me = nix::unistd::geteuid().as_raw();
        for link in ["var", "var/cache"] {
            let (_d, tree, outside) = tree_with_link(link);
            let cache = CacheDir::new(
                &Root::new(&tree),
                crate::host::io::facts_cache::DEFAULT_DIR,
                me,
            );
            // Where the link leads inside the tree does not exist: nothing is made anywhere.
            assert!(
                matches!(cache.ready_dir(true), Err(Refusal::Io { .. })),
                "{link}"
            );
            assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{link}");
            // Once it leads somewhere inside the tree, the cache is made there.
            let inside = tree.join(outside.strip_prefix("/").unwrap());
            fs::create_dir_all(&inside).unwrap();
            let dir = cache.ready_dir(true).unwrap().expect("made");
            dir.lock_file(crate::host::io::fill_lock::FILE).unwrap();
            assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{link}");
            let made = if link == "var" {
                inside.join("cache/nfs-gds")
            } else {
                inside.join("nfs-gds")
            };
            assert!(made.join("fill.lock").is_file(), "{link}");
        }
    }

    #[test]
    fn a_directory_open_to_others_is_refused_as_the_documentation_says() {
        use std::os::unix::fs::PermissionsExt;
        let me = nix::unistd::geteuid().as_raw();
        let d = tempfile::tempdir().unwrap();
        let cache = CacheDir::new(&Root::host(), d.path().join("nfs-gds"), me);
        cache.ready_dir(true).unwrap().expect("made");
        let mode = fs::metadata(&cache.dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        fs::set_permissions(&cache.dir, fs::Permissions::from_mode(0o755)).unwrap();
        let e = cache.ready_dir(false).unwrap_err();
        assert!(matches!(e, Refusal::Open { mode: 0o755, .. }), "{e}");
        assert!(e.to_string().contains("chmod 700"), "{e}");
    }
}
