//! Replacing an output file atomically: readers (NFD, node_exporter) see the old file or the new
//! one, never half of either. The temporary file is created in the same directory with a leading
//! dot (NFD ignores dot files; node_exporter reads only `*.prom`), flushed to disk, then renamed.

use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// Writes `contents` to `path` atomically, creating the directory (0755) if needed.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), WriteError> {
    write_atomic_with(path, mode, |w| w.write_all(contents))
}

/// Writes what `fill` writes to `path` atomically, creating the directory (0755) if needed:
/// straight into the temporary file, so an output of megabytes (one line per mount on a node
/// with thousands) is never held whole. `fill` buffers its own writes (a `BufWriter` of its
/// own is one its many small writes reach without a dynamic call).
pub fn write_atomic_with(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), WriteError> {
    use std::os::unix::fs::PermissionsExt;
    let err = |source| WriteError {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".nfs-gds.")
        .tempfile_in(dir)
        .map_err(err)?;
    fill(tmp.as_file_mut()).map_err(err)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_and_leaves_no_temporaries() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/nfs-gds.prom");
        write_atomic(&p, b"one\n", 0o644).unwrap();
        write_atomic(&p, b"two\n", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two\n");
        let names: Vec<_> = std::fs::read_dir(d.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["nfs-gds.prom"]);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
}
