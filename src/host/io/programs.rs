//! The programs nfs-gds runs, found by absolute path in one search list.
//!
//! mount(8) removes `PATH` (and `HOME`) from the environment of every helper, even for root, so
//! `mount.nfs`, `modprobe`, `umount` and doctor's `ofed_info`, `dkms`, `dpkg`, `rpm`, `dmesg` are
//! looked up in a fixed list of directories — below the root, so a fixture tree can provide
//! recording fakes — and children get a fixed `PATH` when nfs-gds itself has none (`modprobe`
//! install commands and nfs-utils scripts expect one).

use std::path::PathBuf;

use crate::host::io::root::Root;

pub use crate::system::SEARCH_PATH;

/// The absolute path of an executable `name` in [`SEARCH_PATH`] below the root.
pub fn find(root: &Root, name: &str) -> Option<PathBuf> {
    crate::system::find_program(root.dir(), name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &std::path::Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn tools_are_found_below_the_root_in_search_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert_eq!(find(&root, "mount.nfs"), None);
        executable(&dir.path().join("bin/mount.nfs"));
        assert_eq!(
            find(&root, "mount.nfs"),
            Some(dir.path().join("bin/mount.nfs"))
        );
        executable(&dir.path().join("usr/sbin/mount.nfs"));
        assert_eq!(
            find(&root, "mount.nfs"),
            Some(dir.path().join("usr/sbin/mount.nfs"))
        );
    }

    #[test]
    fn a_file_that_is_not_executable_is_not_a_tool() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sbin/modprobe");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(find(&Root::new(dir.path()), "modprobe"), None);
    }
}
