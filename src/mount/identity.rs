//! Which mount is which: a mount's identity, and finding the one a mount call made.
//!
//! The kernel hands out the lowest free mount id, so an id freed by a concurrent unmount comes
//! straight back: "an id not in the table before" is not "my new mount". A mount is identified
//! here by its mount id together with its device (`major:minor`), its parent's id and its mount
//! point, all from mountinfo, and a new mount is told from an old one by that identity and its
//! source together; where the kernel has it (Linux 6.8+, `STATX_MNT_ID_UNIQUE`), the
//! 64-bit unique mount id, which is never reused, is added by the unmounter once the mount has
//! been found. Unmounting goes by this identity, never by path alone.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::host::mounts::{Mount, MountInfoEntry, MountTable};
use crate::nfs::NfsSource;

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

/// Whether a mount's source as mountinfo shows it is the SPEC the helper was given. The kernel
/// rebuilds the path it shows (`srv:/export/` is shown `srv:/export`, repeated slashes become
/// one), so the paths are compared by their components and the server by its name, in any case.
pub fn is_of_spec(shown: &str, spec: &str) -> bool {
    if shown == spec {
        return true;
    }
    let (Ok(a), Ok(b)) = (NfsSource::parse(shown), NfsSource::parse(spec)) else {
        return false;
    };
    let parts = |p: &str| {
        p.split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    a.server_text.eq_ignore_ascii_case(&b.server_text) && parts(&a.path) == parts(&b.path)
}

/// What tells two mountinfo lines apart: the identity and the source. The kernel hands out
/// mount ids and anonymous device minors lowest-free, so a mount made right after another was
/// unmounted from the same point can get the same id, device, parent and mount point; its
/// source still tells it from another server's mount.
fn key(info: &MountInfoEntry) -> (u32, u32, &str, &Path, &str) {
    (
        info.mount_id,
        info.parent_id,
        info.device_number(),
        info.mount_point(),
        info.source(),
    )
}

/// The mounts of `after` that are not in `before` (by identity and source), in table order.
/// One pass over each table: a set of `before`'s keys, then a look-up per mount of `after`.
pub fn new_mounts<'t>(before: &MountTable, after: &'t MountTable) -> Vec<&'t Mount> {
    let old: HashSet<_> = before.mounts.iter().map(|m| key(&m.info)).collect();
    after
        .mounts
        .iter()
        .filter(|m| !old.contains(&key(&m.info)))
        .collect()
}

/// Every new mount on `path`, in table order (a mount stacked on another comes after it).
pub fn new_mounts_on<'t>(
    before: &MountTable,
    after: &'t MountTable,
    path: &Path,
) -> Vec<&'t Mount> {
    new_mounts(before, after)
        .into_iter()
        .filter(|m| m.info.mount_point() == path)
        .collect()
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
        let new = new_mounts_on(&before, &after, Path::new("/mnt/gds"));
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].info.source(), "10.0.2.15:/export");
        let id = MountIdentity::of(&new[0].info);
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
        assert_eq!(
            new_mounts_on(&before, &after, Path::new("/mnt/gds")).len(),
            1
        );
        assert!(new_mounts_on(&before, &before, Path::new("/mnt/gds")).is_empty());
    }

    #[test]
    fn the_same_id_device_parent_and_point_of_another_source_is_a_new_mount() {
        // Another server's mount unmounted during ours: its id and device minor come back.
        let before = table(&format!(
            "{ROOT}70 1 0:50 / /mnt/gds rw - nfs4 10.0.2.99:/export rw,proto=tcp\n"
        ));
        let after = table(&format!(
            "{ROOT}70 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,proto=tcp\n"
        ));
        let new = new_mounts_on(&before, &after, Path::new("/mnt/gds"));
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].info.source(), "10.0.2.15:/export");
    }

    #[test]
    fn a_source_is_the_spec_as_the_kernel_rewrites_it() {
        assert!(is_of_spec("10.0.2.15:/export", "10.0.2.15:/export"));
        assert!(is_of_spec("filer:/export", "FILER:/export/"));
        assert!(is_of_spec("filer:/a/b", "filer://a//b"));
        assert!(is_of_spec("[fe80::1]:/export", "[fe80::1]:/export"));
        assert!(!is_of_spec("10.0.2.99:/export", "10.0.2.15:/export"));
        assert!(!is_of_spec("filer:/export2", "filer:/export"));
        assert!(!is_of_spec("tmpfs", "filer:/export"));
    }

    #[test]
    fn every_new_mount_on_the_point_is_listed_bottom_first() {
        let before = table(ROOT);
        let after = table(&format!(
            "{ROOT}40 1 0:50 / /mnt/gds rw - nfs4 a:/e rw\n41 40 0:51 / /mnt/gds rw - nfs4 b:/e rw\n42 1 0:52 / /mnt/x rw - nfs4 a:/e rw\n"
        ));
        let new = new_mounts_on(&before, &after, Path::new("/mnt/gds"));
        let ids: Vec<u32> = new.iter().map(|m| m.info.mount_id).collect();
        assert_eq!(ids, [40, 41]);
        assert_eq!(
            MountIdentity::of(&new[1].info).device_numbers(),
            Some((0, 51))
        );
    }

    /// A large table (40,000 mounts, one set of keys and one look-up per mount, no pairwise
    /// comparison) still yields exactly the one new mount. How long it takes is a benchmark's
    /// business (`benches/`), not a test's: a wall-clock ratio fails on a loaded machine.
    #[test]
    fn a_large_table_yields_the_one_new_mount() {
        let mut text = ROOT.to_string();
        for i in 0..40_000u32 {
            text.push_str(&format!(
                "{} 1 0:{} / /mnt/m{i} rw - nfs4 10.0.{}.{}:/e rw\n",
                i + 100,
                i + 100,
                i / 256 % 256,
                i % 256
            ));
        }
        let before = table(&text);
        text.push_str("50000 1 0:9 / /mnt/gds rw - nfs4 10.0.2.15:/export rw\n");
        let after = table(&text);
        let new = new_mounts_on(&before, &after, Path::new("/mnt/gds"));
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].info.mount_id, 50000);
        assert_eq!(new_mounts(&before, &after).len(), 1);
    }
}
