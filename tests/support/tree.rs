//! A root tree in a temporary directory, the one builder of fixture nodes: the crate's unit tests
//! (through `src/testkit.rs`) and the integration tests (through `tests/support`) both write their
//! `/proc`, `/sys`, `/lib/modules` and tool files with it, so a tree looks the same to both.
//!
//! Only `std` and `tempfile` here: this file is compiled into both test crates.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A temporary directory that tests fill with files, removed when dropped.
#[derive(Debug)]
pub struct Tree {
    dir: tempfile::TempDir,
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
    }
}

impl Tree {
    /// An empty tree whose root is world-readable, as `/` is.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("nfs-gds-fixture-")
            .tempdir()
            .expect("temporary directory");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
            .expect("chmod the fixture root");
        Tree { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` below the root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root().join(rel)
    }

    /// Writes `data` to `rel`, making the directories above it.
    pub fn write(&self, rel: impl AsRef<Path>, data: impl AsRef<[u8]>) -> PathBuf {
        write_below(self.root(), rel, data)
    }

    /// Writes `text` to `rel`, executable.
    pub fn executable(&self, rel: impl AsRef<Path>, text: &str) -> PathBuf {
        let path = self.write(rel, text);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod fixture file");
        path
    }

    /// Removes `rel`, a file or a whole directory.
    pub fn remove(&self, rel: impl AsRef<Path>) {
        let path = self.path(rel);
        if path.is_dir() {
            fs::remove_dir_all(&path).expect("remove fixture directory");
        } else {
            fs::remove_file(&path).expect("remove fixture file");
        }
    }

    /// Makes `info` and `stats` the mount table (`/proc/self/mountinfo`, `…/mountstats`).
    pub fn table(&self, info: &str, stats: &str) {
        write_table(self.root(), info, stats);
    }
}

/// [`Tree::write`] for code that holds only the root, such as a fake that changes the tree.
pub fn write_below(root: &Path, rel: impl AsRef<Path>, data: impl AsRef<[u8]>) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("a file below the root"))
        .expect("create fixture directory");
    fs::write(&path, data).expect("write fixture file");
    path
}

/// [`Tree::table`] for code that holds only the root.
pub fn write_table(root: &Path, info: &str, stats: &str) {
    write_below(root, "proc/self/mountinfo", info);
    write_below(root, "proc/self/mountstats", stats);
}
