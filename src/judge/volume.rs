//! The mount a path lies on, from the mount table alone: the mount whose mount point is the
//! longest leading part of the path (compared component by component), and of the mounts on
//! that point the one applications see ([`MountTable::topmost_at`], as `verify` resolves a
//! mount point). Nothing is looked up on disk: a path below an NFS mount point is never
//! `stat`ed, opened or resolved, since a hard mount of a dead server would hang the caller (the
//! container hook, on every container start). The path is taken as written, cleaned lexically
//! by the caller; a symbolic link in it is not followed.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::host::mounts::{Mount, MountTable};

/// Whether mount point `mp` is `path` or a leading part of it, by whole components.
fn covers(mp: &[u8], path: &[u8]) -> bool {
    if mp == b"/" {
        return path.starts_with(b"/");
    }
    path.starts_with(mp) && (path.len() == mp.len() || path[mp.len()] == b'/')
}

/// The mount `path` (absolute, clean) lies on, or `None` when no mount point covers it.
pub fn mount_under<'t>(table: &'t MountTable, path: &Path) -> Option<&'t Mount> {
    let bytes = path.as_os_str().as_bytes();
    let longest = table
        .mounts
        .iter()
        .map(|m| m.info.mount_point().as_os_str().as_bytes())
        .filter(|mp| covers(mp, bytes))
        .max_by_key(|mp| mp.len())?;
    table.topmost_at(Path::new(std::ffi::OsStr::from_bytes(longest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::table;

    const INFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/nfs rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 40 0:51 / /mnt/nfs/inner rw - tmpfs tmpfs rw
42 1 0:52 / /mnt/nfsx rw - tmpfs tmpfs rw
43 1 0:53 / /mnt/stack rw - nfs4 10.0.2.15:/a rw,vers=4.2,proto=tcp,addr=10.0.2.15
44 43 0:54 / /mnt/stack rw - nfs4 10.0.2.20:/b rw,vers=4.2,proto=rdma,addr=10.0.2.20
";

    fn under(path: &str) -> u32 {
        mount_under(&table(INFO, ""), Path::new(path))
            .unwrap()
            .info
            .mount_id
    }

    #[test]
    fn the_longest_mount_point_by_whole_components_and_the_mount_on_top_of_it() {
        assert_eq!(under("/mnt/nfs/a/b"), 40);
        assert_eq!(under("/mnt/nfs"), 40);
        assert_eq!(under("/mnt/nfs/inner/x"), 41);
        // A look-alike name is not below /mnt/nfs.
        assert_eq!(under("/mnt/nfsx/y"), 42);
        assert_eq!(under("/mnt/nfsy"), 1);
        // Two mounts stacked on one point: the one on top.
        assert_eq!(under("/mnt/stack/d"), 44);
    }

    #[test]
    fn a_table_without_a_root_mount_covers_nothing_else() {
        let t = table(
            "40 1 0:50 / /mnt/nfs rw - nfs4 s:/e rw,vers=4.2,proto=tcp\n",
            "",
        );
        assert!(mount_under(&t, Path::new("/srv/x")).is_none());
    }
}
