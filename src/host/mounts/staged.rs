//! Mounts in flight: the mount helper's staging area, `/run/nfs-gds/stage`.
//!
//! The helper mounts each NFS export first on a directory of its own below the staging area,
//! verifies it there, and only then moves it onto the mount point the admin asked for (or
//! unmounts it, refused). A mount below the staging area is therefore not a node mount yet: it
//! may be refused a moment later. Every reader of the mount table except the helper's own leaves
//! it out, so nothing counts, labels, judges or exports a mount that nobody can use — the agent's
//! `nfs_gds_mount_ready`, the NFD label, `check`, `verify`, `doctor`, `collect` and the container
//! gate alike. The staging area's own mount (a private bind of the directory onto itself) is left
//! out with it.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The staging area as the host's mount table shows it.
pub const STAGE_AREA: &str = "/run/nfs-gds/stage";

/// Whether a mount point (unescaped, as the table shows it) is the staging area or below it.
pub fn is_staged(mount_point: &Path) -> bool {
    is_staged_bytes(mount_point.as_os_str().as_bytes())
}

/// [`is_staged`] on the bytes of a mount point.
pub fn is_staged_bytes(mount_point: &[u8]) -> bool {
    let area = STAGE_AREA.as_bytes();
    mount_point.starts_with(area)
        && (mount_point.len() == area.len() || mount_point[area.len()] == b'/')
}

/// The NFS mounts below the staging area of `table` (read with the mounts in flight), by mount
/// point: a helper verifying its mount right now, or one that was killed before it could move
/// or unmount it (the next helper run or agent pass removes those).
pub fn staged_nfs(table: &super::table::MountTable) -> Vec<String> {
    table
        .mounts
        .iter()
        .filter(|m| m.is_nfs() && is_staged(m.info.mount_point()))
        .map(|m| format!("{} ({})", m.info.mount_point().display(), m.info.source()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_area_and_what_is_below_it_are_staged_and_nothing_else() {
        assert!(is_staged(Path::new("/run/nfs-gds/stage")));
        assert!(is_staged(Path::new("/run/nfs-gds/stage/1234-ab/mnt")));
        assert!(!is_staged(Path::new("/run/nfs-gds/stages")));
        assert!(!is_staged(Path::new("/run/nfs-gds")));
        assert!(!is_staged(Path::new("/mnt/gds")));
        assert!(!is_staged(Path::new("/srv/run/nfs-gds/stage/x")));
    }
}
