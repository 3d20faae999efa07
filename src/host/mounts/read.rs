//! Reading the kernel's tables below the root: mountinfo and mountstats streamed, paired into a
//! [`MountTable`], or only the lines a question needs; this namespace's or PID 1's.

use std::path::PathBuf;

use super::errors::MountsError;
use super::mountinfo::{MountInfoEntry, MountInfoParser};
use super::mountstats::{MountStatsParser, MountStatsRecord};
use super::staged;
use super::table::{Mount, MountTable, Pairing};
use crate::host::io::root::Root;

pub const MOUNTINFO: &str = "proc/self/mountinfo";
pub const MOUNTSTATS: &str = "proc/self/mountstats";

/// Whether a reader sees the mounts in flight below the helper's staging area
/// ([`staged`]): only the helper does, every other reader leaves them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InFlight {
    Seen,
    LeftOut,
}

/// Streams mountinfo below the root through `each` entry of the lines `keep` takes (it sees
/// the raw line; the others are not parsed), the mounts in flight seen or left out.
fn stream_mountinfo_where(
    root: &Root,
    rel: &str,
    keep: impl Fn(&[u8]) -> bool,
    in_flight: InFlight,
    mut each: impl FnMut(MountInfoEntry),
) -> Result<(), MountsError> {
    let mut lines = root.read_lines(rel)?.ok_or_else(|| MountsError::Missing {
        path: root.join(rel),
    })?;
    let mut parser = MountInfoParser::default();
    while let Some(line) = lines.next_line()? {
        if !keep(line) {
            continue;
        }
        let entry = parser.line(line).map_err(|reason| MountsError::Parse {
            path: lines.path().to_owned(),
            line: lines.number(),
            reason,
        })?;
        take_entry(entry, in_flight, &mut each);
    }
    Ok(())
}

/// Hands a parsed mountinfo line's entry to `each`, unless it is a mount in flight left out.
pub(super) fn take_entry(
    entry: Option<MountInfoEntry>,
    in_flight: InFlight,
    each: &mut impl FnMut(MountInfoEntry),
) {
    entry
        .into_iter()
        .filter(|e| in_flight == InFlight::Seen || !staged::is_staged(e.mount_point()))
        .for_each(each);
}

/// Streams mountstats below the root through `each` record; an absent file gives none
/// (containers sometimes hide it), which leaves transports to the `proto=` options. Through the
/// root's reader: confined to the root, capped, never a FIFO, and recorded for `collect` like
/// every other read.
fn stream_mountstats_at(
    root: &Root,
    rel: &str,
    mut each: impl FnMut(MountStatsRecord),
) -> Result<(), MountsError> {
    let Some(mut lines) = root.read_lines(rel)? else {
        return Ok(());
    };
    let mut parser = MountStatsParser::default();
    while let Some(block) = lines.next_lines()? {
        parser.feed_lines(block, &mut each);
    }
    if let Some(rec) = parser.finish() {
        each(rec);
    }
    Ok(())
}

/// Reads and parses mountstats below the root (streamed; see [`read_mount_table`] for the
/// table, which keeps only what the mounts need).
pub fn read_mountstats(root: &Root) -> Result<Vec<MountStatsRecord>, MountsError> {
    let mut records = Vec::new();
    stream_mountstats_at(root, MOUNTSTATS, |rec| records.push(rec))?;
    Ok(records)
}

/// mountinfo, then mountstats streamed and paired record by record.
fn read_table_at(root: &Root, info: &str, stats: &str) -> Result<MountTable, MountsError> {
    read_table_seeing(root, info, stats, InFlight::LeftOut)
}

fn read_table_seeing(
    root: &Root,
    info: &str,
    stats: &str,
    in_flight: InFlight,
) -> Result<MountTable, MountsError> {
    let mut mounts = Vec::new();
    stream_mountinfo_where(
        root,
        info,
        |_| true,
        in_flight,
        |e| mounts.push(Mount::unpaired(e)),
    )?;
    // Grown by doubling: up to half of it room for mounts that never came.
    mounts.shrink_to_fit();
    let mut pairing = Pairing::new(&mounts);
    stream_mountstats_at(root, stats, |rec| pairing.offer(rec))?;
    let paired = pairing.into_paired();
    Ok(MountTable::of(mounts, paired))
}

/// Both files, paired; mounts in flight below the helper's staging area left out.
pub fn read_mount_table(root: &Root) -> Result<MountTable, MountsError> {
    read_table_at(root, MOUNTINFO, MOUNTSTATS)
}

/// Both files, paired, with the mounts in flight below the helper's staging area: the helper's
/// own view, and nobody else's ([`staged`]).
pub fn read_mount_table_in_flight(root: &Root) -> Result<MountTable, MountsError> {
    read_table_seeing(root, MOUNTINFO, MOUNTSTATS, InFlight::Seen)
}

/// The mounts whose mount point is `path` exactly (mountinfo only, the other lines not parsed),
/// the mounts in flight included: what the helper asks of its staging area before each mount,
/// at a fraction of a whole table's cost.
pub fn read_mounts_at(root: &Root, path: &std::path::Path) -> Result<MountTable, MountsError> {
    read_mounts_naming(root, path, |point| point == path)
}

/// The mounts below the helper's staging area, the area's own included (mountinfo only, the
/// other lines not parsed): what `doctor` says is staged, without a second whole table.
pub fn read_staged(root: &Root) -> Result<MountTable, MountsError> {
    read_mounts_naming(
        root,
        std::path::Path::new(staged::STAGE_AREA),
        staged::is_staged,
    )
}

/// The mounts whose line names `path` and whose mount point `keep` takes, the mounts in flight
/// included; mountstats is not read.
fn read_mounts_naming(
    root: &Root,
    path: &std::path::Path,
    keep: impl Fn(&std::path::Path) -> bool,
) -> Result<MountTable, MountsError> {
    use std::os::unix::ffi::OsStrExt;
    let want = path.as_os_str().as_bytes();
    let mut mounts = Vec::new();
    stream_mountinfo_where(
        root,
        MOUNTINFO,
        |line| memchr::memmem::find(line, want).is_some(),
        InFlight::Seen,
        |e| {
            if keep(e.mount_point()) {
                mounts.push(e)
            }
        },
    )?;
    Ok(MountTable::join(mounts, Vec::new()))
}

/// PID 1's mount table, the host's as seen from a container that has the host's `/proc`.
pub const INIT_MOUNTINFO: &str = "proc/1/mountinfo";
pub const INIT_MOUNTSTATS: &str = "proc/1/mountstats";

/// The mountinfo and mountstats below `root` of the namespace a container runtime's bind
/// sources are paths in: PID 1's when `proc/1/mountinfo` exists (the host's, also from a pod
/// with the host's PID namespace, where `/proc/self` is the pod's), else this process's.
pub fn host_tables(root: &Root) -> (&'static str, &'static str) {
    if root.exists(INIT_MOUNTINFO) {
        (INIT_MOUNTINFO, INIT_MOUNTSTATS)
    } else {
        (MOUNTINFO, MOUNTSTATS)
    }
}

/// The mount table of PID 1's mount namespace when `proc/1/mountinfo` exists below the root,
/// else this process's; with the path of the mountinfo read. In a container `/proc/self` is the
/// container's own namespace, where kubelet's and the host's NFS mounts are not; PID 1 of the
/// host's `/proc` is in the host's. On a host the two are the same table. A `proc/1/mountinfo`
/// that exists but cannot be read is an error, not a quiet fall-back to a table without the
/// host's mounts.
pub fn read_init_mount_table(root: &Root) -> Result<(MountTable, PathBuf), MountsError> {
    if root.exists(INIT_MOUNTINFO) {
        let table = read_table_at(root, INIT_MOUNTINFO, INIT_MOUNTSTATS)?;
        return Ok((table, root.join(INIT_MOUNTINFO)));
    }
    Ok((read_mount_table(root)?, root.join(MOUNTINFO)))
}

#[cfg(test)]
mod tests {
    use super::super::{parse_mountinfo, parse_mountstats, read_nfs_mounts_of};
    use super::*;
    use crate::host::mounts::samples::*;

    #[test]
    fn the_mounts_at_a_path_are_those_exactly_there_staged_ones_included() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(
            dir.path().join(MOUNTINFO),
            "22 1 0:24 / /run rw shared:5 - tmpfs tmpfs rw\n\
             30 22 0:24 /nfs-gds/stage /run/nfs-gds/stage rw - tmpfs tmpfs rw\n\
             31 30 0:51 / /run/nfs-gds/stage/7/mnt rw - nfs4 s:/e rw\n\
             32 22 0:24 / /run/nfs-gds/stagex rw shared:5 - tmpfs tmpfs rw\n",
        )
        .unwrap();
        let at = read_mounts_at(&root, std::path::Path::new("/run/nfs-gds/stage")).unwrap();
        let ids: Vec<u32> = at.mounts.iter().map(|m| m.info.mount_id).collect();
        assert_eq!(ids, [30]);
        let staged =
            read_mounts_at(&root, std::path::Path::new("/run/nfs-gds/stage/7/mnt")).unwrap();
        assert_eq!(staged.mounts.len(), 1, "a mount in flight is seen here");
        assert!(read_mount_table(&root)
            .unwrap()
            .mounts
            .iter()
            .all(|m| !m.is_nfs()));
    }

    #[test]
    fn the_streamed_read_is_the_parse_of_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        // No trailing newline on the last line, and a CRLF-free capture.
        let text = CAPTURE.trim_end();
        std::fs::write(dir.path().join(MOUNTSTATS), text).unwrap();
        assert_eq!(
            read_mountstats(&root).unwrap(),
            parse_mountstats(text.as_bytes())
        );
        assert_eq!(read_mountstats(&root).unwrap().len(), 10);
    }

    #[test]
    fn the_nfs_mounts_of_ids_are_the_whole_tables_with_their_records() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join(MOUNTINFO), CAPTURE_MOUNTINFO).unwrap();
        std::fs::write(dir.path().join(MOUNTSTATS), CAPTURE).unwrap();
        let whole = read_mount_table(&root).unwrap();
        let want: Vec<&Mount> = whole.mounts.iter().filter(|m| m.is_nfs()).collect();
        assert!(want.len() >= 2, "the capture has NFS mounts");
        assert!(want.iter().all(|m| m.stats.is_some()));
        let ids: Vec<u32> = want.iter().map(|m| m.info.mount_id).collect();
        let nfs = read_nfs_mounts_of(&root, MOUNTINFO, MOUNTSTATS, &ids).unwrap();
        assert_eq!(nfs.mounts.iter().collect::<Vec<_>>(), want);
        // One of them: the capture's mounts are all of one server, so all are kept.
        let one = read_nfs_mounts_of(&root, MOUNTINFO, MOUNTSTATS, &ids[..1]).unwrap();
        assert_eq!(one.mounts.iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn streamed_mountinfo_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/1")).unwrap();
        let text = format!("{MOUNTINFO_TEXT}\n\n5 1 0:3 / /x rw nonsense without separator\n");
        std::fs::write(dir.path().join(INIT_MOUNTINFO), &text).unwrap();
        let err = read_init_mount_table(&root).unwrap_err().to_string();
        let whole = parse_mountinfo(text.as_bytes()).unwrap_err();
        assert_eq!(whole.line, 7);
        assert!(
            err.contains("proc/1/mountinfo:7: no ' - ' separator"),
            "{err}"
        );
        std::fs::write(
            dir.path().join(INIT_MOUNTINFO),
            "x 1 0:3 / /x rw - nfs4 s:/ rw",
        )
        .unwrap();
        let err = read_init_mount_table(&root).unwrap_err().to_string();
        assert!(
            err.contains("proc/1/mountinfo:1: the mount id is not a number"),
            "{err}"
        );
    }

    #[test]
    fn missing_mountinfo_is_an_error_missing_mountstats_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert!(matches!(
            read_mount_table(&root),
            Err(MountsError::Missing { .. })
        ));
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join(MOUNTINFO), MOUNTINFO_TEXT).unwrap();
        let t = read_mount_table(&root).unwrap();
        assert_eq!(t.mounts.len(), 4);
        std::fs::write(dir.path().join(MOUNTINFO), "garbage\n").unwrap();
        let err = read_mount_table(&root).unwrap_err().to_string();
        assert!(err.contains("proc/self/mountinfo:1:"), "{err}");
    }
}
