//! Where the agent writes, and how: every default path is below `--root` (a run against a
//! fixture or bundle never touches the host's `/run`), paths given explicitly are used as given,
//! and no output is written through a symbolic link to its directory (the agent runs as root; a
//! link planted in place of `/run/nfs-gds` must not make it write elsewhere).
//!
//! The readiness file exists, freshly rewritten each pass, exactly while the node is ready: an
//! init container waits for it (and for it to be recent, since a stopped agent leaves it behind).

use std::path::{Path, PathBuf};

use super::atomic::{write_atomic_with, WriteError};
use crate::host::Root;

/// NFD's features.d, used only if it exists.
pub const NFD_DIR: &str = "etc/kubernetes/node-feature-discovery/features.d";
/// node_exporter's textfile directory (Debian's prometheus-node-exporter), used only if it exists.
pub const TEXTFILE_DIR: &str = "var/lib/prometheus/node-exporter";
pub const STATUS_FILE: &str = "run/nfs-gds/status.json";
pub const READY_FILE: &str = "run/nfs-gds/ready";

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("refusing to write {}: its directory {} is a symbolic link (point the option at the real directory)", path.display(), dir.display())]
    SymlinkedDir { path: PathBuf, dir: PathBuf },
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("cannot remove {}: {source}", path.display())]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The files one pass writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// `<dir>/nfs-gds`, when there is a features.d.
    pub features: Option<PathBuf>,
    /// `<dir>/nfs-gds.prom`, when there is a textfile directory.
    pub textfile: Option<PathBuf>,
    pub status: PathBuf,
    pub ready: PathBuf,
}

impl Outputs {
    /// Explicit paths as given; defaults below the root, the two directories only if they exist.
    pub fn resolve(
        root: &Root,
        nfd_dir: Option<&Path>,
        textfile_dir: Option<&Path>,
        status_file: Option<&Path>,
        ready_file: Option<&Path>,
    ) -> Self {
        let dir = |given: Option<&Path>, default: &str| match given {
            Some(d) => Some(d.to_path_buf()),
            None => {
                let d = root.join(default);
                d.is_dir().then_some(d)
            }
        };
        Outputs {
            features: dir(nfd_dir, NFD_DIR).map(|d| d.join("nfs-gds")),
            textfile: dir(textfile_dir, TEXTFILE_DIR).map(|d| d.join("nfs-gds.prom")),
            status: status_file
                .map(Path::to_path_buf)
                .unwrap_or_else(|| root.join(STATUS_FILE)),
            ready: ready_file
                .map(Path::to_path_buf)
                .unwrap_or_else(|| root.join(READY_FILE)),
        }
    }
}

/// Refuses `path` when its directory is a symbolic link.
fn real_dir(path: &Path) -> Result<(), OutputError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    match std::fs::symlink_metadata(dir) {
        Ok(md) if md.file_type().is_symlink() => Err(OutputError::SymlinkedDir {
            path: path.to_owned(),
            dir: dir.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Writes one output atomically, refusing a symlinked directory.
pub fn write(path: &Path, contents: &[u8]) -> Result<(), OutputError> {
    write_with(path, |w| w.write_all(contents))
}

/// Writes one output atomically from what `fill` writes (streamed, never held whole; `fill`
/// buffers), refusing a symlinked directory.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    real_dir(path)?;
    write_atomic_with(path, 0o644, fill)?;
    Ok(())
}

/// Creates (rewrites) the readiness file when `ready`, removes it otherwise.
pub fn set_ready(path: &Path, ready: bool, line: &str) -> Result<(), OutputError> {
    if ready {
        return write(path, format!("{line}\n").as_bytes());
    }
    real_dir(path)?;
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(OutputError::Remove {
            path: path.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_root_and_missing_directories_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        std::fs::create_dir_all(root.join(TEXTFILE_DIR)).unwrap();
        let o = Outputs::resolve(&root, None, None, None, None);
        assert_eq!(o.features, None);
        assert_eq!(
            o.textfile,
            Some(
                d.path()
                    .join("var/lib/prometheus/node-exporter/nfs-gds.prom")
            )
        );
        assert_eq!(o.status, d.path().join("run/nfs-gds/status.json"));
        assert_eq!(o.ready, d.path().join("run/nfs-gds/ready"));
        let o = Outputs::resolve(
            &root,
            Some(Path::new("/x")),
            None,
            Some(Path::new("s.json")),
            None,
        );
        assert_eq!(o.features, Some(PathBuf::from("/x/nfs-gds")));
        assert_eq!(o.status, PathBuf::from("s.json"));
    }

    #[test]
    fn a_symlinked_directory_is_refused_and_nothing_lands_behind_it() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, d.path().join("run")).unwrap();
        let e = write(&d.path().join("run/status.json"), b"{}").unwrap_err();
        assert!(matches!(e, OutputError::SymlinkedDir { .. }), "{e}");
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert!(set_ready(&d.path().join("run/ready"), false, "").is_err());
    }

    #[test]
    fn the_readiness_file_exists_exactly_while_ready() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run/nfs-gds/ready");
        set_ready(&p, true, "ready").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "ready\n");
        set_ready(&p, false, "").unwrap();
        assert!(!p.exists());
        set_ready(&p, false, "").unwrap();
    }
}
