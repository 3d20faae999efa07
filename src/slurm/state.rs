//! The record that nfs-gds drained this node: `/run/nfs-gds/slurm-drained` below the root, in
//! nfs-gds's own run directory (refused when another user owns it or may write in it). While
//! it exists the health check asks slurmctld about the node, and resumes it only from a drain
//! whose reason is still nfs-gds's; while it does not, a healthy node costs slurmctld nothing.
//! `/run` empties at boot: a node still drained by nfs-gds is found again by the next check
//! that finds it not ready.

use std::io;

use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
use crate::host::{FileKind, Root};

/// The file's name in the run directory.
pub const FILE: &str = "slurm-drained";

/// The record's path, for messages.
pub fn path(root: &Root) -> std::path::PathBuf {
    root.join(RUN_DIR).join(FILE)
}

/// Whether nfs-gds recorded draining this node.
pub fn drained_by_us(root: &Root) -> Result<bool, String> {
    let shown = || path(root).display().to_string();
    let Some(dir) =
        OutDir::existing(root, RUN_DIR, Trust::Own).map_err(|e| format!("{}: {e}", shown()))?
    else {
        return Ok(false);
    };
    dir.read_file(FILE, FileKind::Text)
        .map(|read| read.is_some())
        .map_err(|e| e.to_string())
}

/// Records that nfs-gds drained `node` with `reason`.
pub fn remember(root: &Root, node: &str, reason: &str) -> io::Result<()> {
    OutDir::open(root, RUN_DIR, Trust::Own)?.write_atomic(FILE, 0o644, |w| {
        writeln!(w, "node={node}")?;
        writeln!(w, "reason={reason}")
    })
}

/// Removes the record: `true` when there was one.
pub fn forget(root: &Root) -> io::Result<bool> {
    match OutDir::existing(root, RUN_DIR, Trust::Own)? {
        Some(dir) => dir.remove(FILE),
        None => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_is_written_read_and_removed_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert_eq!(drained_by_us(&root), Ok(false));
        assert!(!forget(&root).unwrap());
        remember(&root, "gpu01", "nfs-gds: rpcrdma-hooks rpcrdma").unwrap();
        assert_eq!(drained_by_us(&root), Ok(true));
        let text = std::fs::read_to_string(dir.path().join("run/nfs-gds/slurm-drained")).unwrap();
        assert_eq!(text, "node=gpu01\nreason=nfs-gds: rpcrdma-hooks rpcrdma\n");
        assert!(forget(&root).unwrap());
        assert_eq!(drained_by_us(&root), Ok(false));
    }

    #[test]
    fn a_run_directory_others_may_write_in_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run/nfs-gds");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join(FILE), "planted\n").unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
        let root = Root::new(dir.path());
        let e = drained_by_us(&root).unwrap_err();
        assert!(e.contains("writable by others"), "{e}");
    }
}
