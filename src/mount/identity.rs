//! Which mount is which: a mount's identity, and finding the one a mount call made.
//!
//! The kernel hands out the lowest free mount id, so an id freed by a concurrent unmount comes
//! straight back: "an id not in the table before" is not "my new mount". A mount is identified
//! here by its mount id together with its device (`major:minor`), its parent's id and its mount
//! point, all from mountinfo, and a new mount is told from an old one by that identity and its
//! source together; where the kernel has it (Linux 6.8+, `STATX_MNT_ID_UNIQUE`), the
//! 64-bit unique mount id, which is never reused, is added by the unmounter once the mount has
//! been found. Unmounting goes by this identity, never by path alone.
//!
//! Which new mount on the target is the helper's own is [`sort_new_on`]'s answer. The kernel
//! does not show the source as given: every mount that shares an NFS superblock (`sharecache`,
//! the default; NFSv4 also merges two addresses of one server into one client) is shown under
//! the superblock's first name, so the helper's mount of `10.0.2.15:/export` made while
//! `127.0.0.1:/export` of the same machine is mounted appears as `127.0.0.1:/export`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::host::mounts::{Mount, MountInfoEntry, MountTable};
use crate::nfs::export_identity::{self, ServerAddrs};
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

/// Why a new mount on the target is the helper's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ours {
    /// The kernel shows it as SPEC's export: the same path, and the same server by name or by
    /// address (`addr=`, or SPEC's name resolved).
    Export,
    /// The kernel shows it under another name, as it shows every mount that shares an NFS
    /// superblock: it has the device of a mount that was there before (that mount's id and
    /// source), it is SPEC's path, and it is the only new NFS mount anywhere in the table, so it
    /// is the one the successful mount call made.
    SharedSuperblock { first_id: u32, first_source: String },
}

/// The new mounts on the target, each the helper's own (with why) or someone else's.
#[derive(Debug, Default)]
pub struct NewOnTarget<'t> {
    pub ours: Vec<(&'t Mount, Ours)>,
    pub others: Vec<&'t Mount>,
}

/// Tells the helper's own new mounts on `target` from others'. A new mount is the helper's
/// when the kernel shows it as the export of `spec` ([`export_identity::is_export`]), or when it
/// shares the superblock of an NFS mount that was there before and no other NFS mount appeared
/// anywhere ([`Ours::SharedSuperblock`]); anything else is someone else's, and never judged or
/// unmounted by the helper.
pub fn sort_new_on<'t>(
    before: &MountTable,
    after: &'t MountTable,
    target: &Path,
    spec: &NfsSource,
    addrs: &ServerAddrs,
) -> NewOnTarget<'t> {
    let new = new_mounts(before, after);
    let new_nfs = new.iter().filter(|m| m.is_nfs()).count();
    let mut sorted = NewOnTarget::default();
    for m in new.into_iter().filter(|m| m.info.mount_point() == target) {
        match ours(m, before, spec, addrs, new_nfs) {
            Some(why) => sorted.ours.push((m, why)),
            None => sorted.others.push(m),
        }
    }
    sorted
}

fn ours(
    m: &Mount,
    before: &MountTable,
    spec: &NfsSource,
    addrs: &ServerAddrs,
    new_nfs: usize,
) -> Option<Ours> {
    if !m.is_nfs() {
        return None;
    }
    if export_identity::is_export(spec, m.shown_export(), addrs) {
        return Some(Ours::Export);
    }
    if new_nfs != 1 || !same_path(m.info.source(), spec) {
        return None;
    }
    before
        .mounts
        .iter()
        .find(|old| old.is_nfs() && old.info.device_number() == m.info.device_number())
        .map(|first| Ours::SharedSuperblock {
            first_id: first.info.mount_id,
            first_source: first.info.source().to_string(),
        })
}

/// Whether the source the kernel shows has SPEC's path (by components; any server).
fn same_path(shown: &str, spec: &NfsSource) -> bool {
    let parts = |p: &str| {
        p.split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    NfsSource::parse(shown).is_ok_and(|s| parts(&s.path) == parts(&spec.path))
}

/// The new NFS mounts anywhere of the export of `spec`.
pub fn new_mounts_of<'t>(
    before: &MountTable,
    after: &'t MountTable,
    spec: &NfsSource,
    addrs: &ServerAddrs,
) -> Vec<&'t Mount> {
    new_mounts(before, after)
        .into_iter()
        .filter(|m| m.is_nfs() && export_identity::is_export(spec, m.shown_export(), addrs))
        .collect()
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

    fn sort(before: &str, after: &str, spec: &str) -> (Vec<(u32, Ours)>, Vec<u32>) {
        let (before, after) = (table(before), table(after));
        let hosts = crate::system::Fake::new().host("filer", &["10.0.2.15".parse().unwrap()]);
        let addrs = ServerAddrs::new(&hosts);
        let spec = NfsSource::parse(spec).unwrap();
        let s = sort_new_on(&before, &after, Path::new("/mnt/gds"), &spec, &addrs);
        (
            s.ours
                .iter()
                .map(|(m, w)| (m.info.mount_id, w.clone()))
                .collect(),
            s.others.iter().map(|m| m.info.mount_id).collect(),
        )
    }

    #[test]
    fn a_new_mount_is_ours_by_the_export_the_kernel_shows() {
        for shown in [
            "10.0.2.15:/export rw,addr=10.0.2.15",
            "filer:/export rw,addr=10.0.2.15",
            "10.0.2.15:/export/ rw",
        ] {
            let after = format!("{ROOT}40 1 0:50 / /mnt/gds rw - nfs4 {shown}\n");
            assert_eq!(
                sort(ROOT, &after, "10.0.2.15:/export"),
                (vec![(40, Ours::Export)], vec![]),
                "{shown}"
            );
        }
        // SPEC by name, shown by address.
        let after =
            format!("{ROOT}40 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,addr=10.0.2.15\n");
        assert_eq!(sort(ROOT, &after, "FILER:/export").0.len(), 1);
    }

    /// The transport trap on the real kernel: 127.0.0.1:/export (the same machine) was mounted
    /// over TCP; the helper's mount of 10.0.2.15:/export shares its superblock and is shown
    /// under its name and address.
    #[test]
    fn the_only_new_mount_sharing_an_earlier_superblock_is_ours() {
        let lo = "34 1 0:60 / /mnt/lo rw - nfs4 127.0.0.1:/export rw,proto=tcp,addr=127.0.0.1\n";
        let before = format!("{ROOT}{lo}");
        let after = format!(
            "{before}35 1 0:60 / /mnt/gds rw - nfs4 127.0.0.1:/export rw,proto=tcp,addr=127.0.0.1\n"
        );
        assert_eq!(
            sort(&before, &after, "10.0.2.15:/export"),
            (
                vec![(
                    35,
                    Ours::SharedSuperblock {
                        first_id: 34,
                        first_source: "127.0.0.1:/export".into()
                    }
                )],
                vec![]
            )
        );
        // Another path of that server is not SPEC's export.
        assert_eq!(sort(&before, &after, "10.0.2.15:/other").1, [35]);
        // Two new NFS mounts: which one the call made is not known; the stranger stays one.
        let two = format!(
            "{after}36 1 0:61 / /mnt/x rw - nfs4 10.0.2.77:/x rw,proto=tcp,addr=10.0.2.77\n"
        );
        assert_eq!(sort(&before, &two, "10.0.2.15:/export").1, [35]);
    }

    /// A plain NFS mount of another server on the target during ours is never ours, new
    /// superblock or shared.
    #[test]
    fn another_servers_mount_on_the_target_is_someone_elses() {
        let other = "77 1 0:70 / /mnt/o rw - nfs4 10.0.2.99:/export rw,addr=10.0.2.99\n";
        let before = format!("{ROOT}{other}");
        let after = format!(
            "{before}40 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,addr=10.0.2.15\n41 40 0:70 / /mnt/gds rw - nfs4 10.0.2.99:/export rw,addr=10.0.2.99\n"
        );
        assert_eq!(
            sort(&before, &after, "10.0.2.15:/export"),
            (vec![(40, Ours::Export)], vec![41])
        );
        let after = format!(
            "{ROOT}40 1 0:51 / /mnt/gds rw - nfs4 10.0.2.99:/export rw,addr=10.0.2.99\n42 1 0:9 / /mnt/gds rw - tmpfs tmpfs rw\n"
        );
        assert_eq!(sort(ROOT, &after, "10.0.2.15:/export").1, [40, 42]);
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
