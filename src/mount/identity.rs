//! A mount's identity: how the helper names one mount of the table, and unmounts or moves
//! exactly that mount.
//!
//! The kernel hands out the lowest free mount id, so an id freed by a concurrent unmount comes
//! straight back. A mount is identified here by its mount id together with its device
//! (`major:minor`), its parent's id and its mount point, all from mountinfo; where the kernel has
//! it (Linux 6.8+, `STATX_MNT_ID_UNIQUE`), the 64-bit unique mount id, which is never reused, is
//! added by the unmounter once the mount has been found. Unmounting and moving go by this
//! identity, never by path alone. Which mount is the helper's own is not decided here: it is
//! the one on the helper's own staging point ([`super::stage`]).

use std::path::PathBuf;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::parse_mountinfo;

    fn table(text: &str) -> MountTable {
        MountTable::join(parse_mountinfo(text.as_bytes()).unwrap(), Vec::new())
    }

    #[test]
    fn an_identity_matches_only_its_own_line() {
        let t = table(
            "40 1 0:50 / /mnt/gds rw - nfs4 s:/e rw\n41 40 0:51 / /mnt/gds rw - nfs4 s:/e rw\n",
        );
        let lower = MountIdentity::of(&t.mounts[0].info);
        assert_eq!(lower.find(&t).map(|m| m.info.mount_id), Some(40));
        assert_eq!(lower.device_numbers(), Some((0, 50)));
        // The same id on another device (freed and reused) is another mount.
        let reused = table("40 1 0:52 / /mnt/gds rw - nfs4 s:/e rw\n");
        assert!(lower.find(&reused).is_none());
        // The same id and device on another mount point too.
        let moved = table("40 1 0:50 / /mnt/other rw - nfs4 s:/e rw\n");
        assert!(lower.find(&moved).is_none());
    }
}
