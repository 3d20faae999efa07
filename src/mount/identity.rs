//! Which mount is which: a mount's identity, and finding the one a mount call made.
//!
//! The kernel hands out the lowest free mount id, so an id freed by a concurrent unmount comes
//! straight back: "an id not in the table before" is not "my new mount". A mount is identified
//! here by its mount id together with its device (`major:minor`), its parent's id and its mount
//! point, all from mountinfo; where the kernel has it (Linux 6.8+, `STATX_MNT_ID_UNIQUE`), the
//! 64-bit unique mount id, which is never reused, is added by the unmounter once the mount has
//! been found. Unmounting goes by this identity, never by path alone.

use std::path::{Path, PathBuf};

use crate::host::mounts::{Mount, MountInfoEntry, MountTable};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountIdentity {
    pub mount_id: u32,
    pub parent_id: u32,
    /// `major:minor` as mountinfo prints it.
    pub device: String,
    pub mount_point: PathBuf,
    /// The never-reused id of `statx(STATX_MNT_ID_UNIQUE)`, when the kernel has one.
    pub unique_id: Option<u64>,
}

impl MountIdentity {
    pub fn of(info: &MountInfoEntry) -> Self {
        MountIdentity {
            mount_id: info.mount_id,
            parent_id: info.parent_id,
            device: info.device_number().to_string(),
            mount_point: info.mount_point().to_path_buf(),
            unique_id: None,
        }
    }

    /// Whether a mountinfo line shows this mount (the unique id is not in mountinfo).
    pub fn matches(&self, info: &MountInfoEntry) -> bool {
        info.mount_id == self.mount_id
            && info.parent_id == self.parent_id
            && info.device_number() == self.device
            && info.mount_point() == self.mount_point
    }

    /// This mount in `table`, if it is there.
    pub fn find<'t>(&self, table: &'t MountTable) -> Option<&'t Mount> {
        table.mounts.iter().find(|m| self.matches(&m.info))
    }

    /// `major` and `minor` of the device, for comparing with `stat`.
    pub fn device_numbers(&self) -> Option<(u32, u32)> {
        let (major, minor) = self.device.split_once(':')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    }
}

/// The mounts of `after` whose identity is not in `before`, in table order.
pub fn new_mounts<'t>(before: &MountTable, after: &'t MountTable) -> Vec<&'t Mount> {
    let old: Vec<MountIdentity> = before
        .mounts
        .iter()
        .map(|m| MountIdentity::of(&m.info))
        .collect();
    after
        .mounts
        .iter()
        .filter(|m| !old.iter().any(|o| o.matches(&m.info)))
        .collect()
}

/// The mount on `path` in `after` whose identity is not in `before`, topmost first. A mount
/// that reuses the id of one unmounted meanwhile still counts as new: its device, parent or
/// mount point differ.
pub fn new_mount_on<'t>(
    before: &MountTable,
    after: &'t MountTable,
    path: &Path,
) -> Option<&'t Mount> {
    let fresh: Vec<&Mount> = new_mounts(before, after)
        .into_iter()
        .filter(|m| m.info.mount_point() == path)
        .collect();
    fresh
        .iter()
        .rev()
        .find(|m| !fresh.iter().any(|o| o.info.parent_id == m.info.mount_id))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::parse_mountinfo;

    fn table(text: &str) -> MountTable {
        MountTable::join(parse_mountinfo(text.as_bytes()).unwrap(), Vec::new())
    }

    const ROOT: &str = "1 0 254:0 / / rw - ext4 /dev/vda rw\n";

    #[test]
    fn a_reused_id_on_another_mount_point_is_a_new_mount() {
        let before = table(&format!(
            "{ROOT}40 1 0:50 / /mnt/other rw - nfs4 10.0.2.99:/e rw,proto=rdma\n"
        ));
        let after = table(&format!(
            "{ROOT}40 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,proto=tcp\n"
        ));
        let new = new_mount_on(&before, &after, Path::new("/mnt/gds")).unwrap();
        assert_eq!(new.info.source(), "10.0.2.15:/export");
        let id = MountIdentity::of(&new.info);
        assert!(id.find(&after).is_some());
        assert!(id.find(&before).is_none());
    }

    #[test]
    fn a_reused_id_and_mount_point_with_another_device_is_a_new_mount() {
        let before = table(&format!(
            "{ROOT}40 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,proto=rdma\n"
        ));
        let after = table(&format!(
            "{ROOT}40 1 0:51 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,proto=tcp\n"
        ));
        assert!(new_mount_on(&before, &after, Path::new("/mnt/gds")).is_some());
        assert!(new_mount_on(&before, &before, Path::new("/mnt/gds")).is_none());
    }

    #[test]
    fn the_topmost_new_mount_is_chosen() {
        let before = table(ROOT);
        let after = table(&format!(
            "{ROOT}40 1 0:50 / /mnt/gds rw - nfs4 a:/e rw\n41 40 0:51 / /mnt/gds rw - nfs4 b:/e rw\n"
        ));
        let new = new_mount_on(&before, &after, Path::new("/mnt/gds")).unwrap();
        assert_eq!(new.info.mount_id, 41);
        assert_eq!(MountIdentity::of(&new.info).device_numbers(), Some((0, 51)));
    }
}
