//! The record of the mounts the helper made and verified, so that `nfs-gds agent` keeps verifying
//! them: one small JSON file per mount in `/run/nfs-gds/mounts/` (below the root).
//!
//! What a record is and how it is read are `crate::host::mounts::records`' (every command reads
//! them); this module writes them. When the helper records a mount it removes the records of
//! earlier mounts on the same mount point that its table no longer has; it leaves other mount
//! points' records alone, since it may run in another mount namespace (`-N`) than the mounts
//! they describe; `/run` starts empty at boot. It removes a record by its own directory entry,
//! never by a file name rebuilt from another record's fields. Only root writes here: the
//! directories are created 0755 whatever the umask, and the helper refuses a records directory
//! another user owns or may write in.

use std::path::PathBuf;

use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
pub use crate::host::mounts::records::{
    parse_record, read_records, BadRecord, MountRecord, DIR, MAX_RECORD_BYTES,
};
use crate::host::mounts::{Mount, MountTable};
use crate::host::Root;

/// Records `m` as made and verified by the helper, asked for `spec` with `options`, and removes the records of earlier mounts on
/// the same mount point that are no longer in `table`. The directory is opened inside the root
/// and refused when another user owns it or may write in it; a record is removed by its own
/// directory entry, never by a name rebuilt from what a record says.
pub fn write_record(
    root: &Root,
    m: &Mount,
    spec: &str,
    port: u16,
    options: &str,
    table: &MountTable,
) -> Result<(), RecordError> {
    let record = MountRecord::of(m, spec, port, options);
    let name = record.file_name();
    let err = |source| RecordError {
        path: root.join(DIR).join(&name),
        source,
    };
    OutDir::open(root, RUN_DIR, Trust::Own).map_err(err)?;
    let dir = OutDir::open(root, DIR, Trust::Own).map_err(err)?;
    for entry in dir.names().map_err(err)? {
        if !entry.ends_with(".json") || entry.starts_with('.') || entry == name {
            continue;
        }
        let Ok(Some(bytes)) = dir.read_small(&entry, MAX_RECORD_BYTES as u64) else {
            continue;
        };
        let Ok(old) = parse_record(&bytes) else {
            continue;
        };
        if old.target == record.target && !table.mounts.iter().any(|t| old.is_of(t)) {
            let _ = dir.remove(&entry);
        }
    }
    let mut text = serde_json::to_string_pretty(&record).expect("a record always serializes");
    text.push('\n');
    // A temporary in the same directory, then rename: the agent reads the old record or the
    // new one, never half.
    dir.write_atomic(&name, 0o644, |w| w.write_all(text.as_bytes()))
        .map_err(err)
}

/// A record that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot record the mount in {}: {source}", path.display())]
pub struct RecordError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::{parse_mountinfo, MountTable};

    fn table(text: &str) -> MountTable {
        MountTable::join(parse_mountinfo(text.as_bytes()).unwrap(), Vec::new())
    }

    const TWO: &str = "\
40 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 1 0:51 / /mnt/other rw - nfs4 10.0.2.15:/other rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
";

    #[test]
    fn a_record_matches_its_mount_and_not_a_reused_id() {
        let t = table(TWO);
        let r = MountRecord::of(t.by_id(40).unwrap(), "", 20049, "");
        assert!(r.is_of(t.by_id(40).unwrap()));
        assert!(!r.is_of(t.by_id(41).unwrap()));
        // Same id, another filesystem on the same point: not the recorded mount.
        let reused = table("40 1 0:77 / /mnt/gds rw - nfs4 10.0.2.15:/export rw\n");
        assert!(!r.is_of(reused.by_id(40).unwrap()));
    }

    #[test]
    fn records_round_trip_and_a_gone_mount_on_the_same_point_is_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let t = table(TWO);
        write_record(&root, t.by_id(40).unwrap(), "", 20049, "", &t).unwrap();
        write_record(
            &root,
            t.by_id(41).unwrap(),
            "filer:/e",
            20050,
            "rw,nconnect=4,vers=4.2",
            &t,
        )
        .unwrap();
        let (mut good, bad) = read_records(&root).unwrap();
        good.sort_by_key(|r| r.mount_id);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(good.len(), 2);
        assert_eq!(good[1].port, 20050);
        assert_eq!(good[1].options, "rw,nconnect=4,vers=4.2");
        assert_eq!(good[1].spec, "filer:/e");
        // A new mount on /mnt/gds replaces the record of the one that is gone; the record of
        // /mnt/other stays although this table lacks it (another namespace may have it).
        let later = table("42 1 0:52 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,proto=rdma\n");
        write_record(&root, later.by_id(42).unwrap(), "", 20049, "", &later).unwrap();
        let (good, _) = read_records(&root).unwrap();
        let mut ids: Vec<u32> = good.iter().map(|r| r.mount_id).collect();
        ids.sort();
        assert_eq!(ids, [41, 42]);
    }

    #[test]
    fn pruning_never_deletes_a_file_a_record_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let t = table(TWO);
        write_record(&root, t.by_id(41).unwrap(), "", 20049, "", &t).unwrap();
        // A planted record of a gone mount on /mnt/gds whose device climbs out to another
        // record: the old pruner rebuilt `{mount_id}-{device}.json` from it and removed that.
        let victim = root.join(DIR).join("41-0.51.json");
        assert!(victim.is_file());
        let planted = r#"{"source":"10.0.2.15:/export","target":"/mnt/gds","device":"../mounts/41-0.51","mount_id":9,"port":20049}"#;
        std::fs::write(root.join(DIR).join("planted.json"), planted).unwrap();
        write_record(&root, t.by_id(40).unwrap(), "", 20049, "", &t).unwrap();
        assert!(victim.is_file(), "the record of /mnt/other was deleted");
        assert!(
            !root.join(DIR).join("planted.json").exists(),
            "the stale record itself goes"
        );
    }

    #[test]
    fn a_records_directory_others_may_write_in_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(root.join(DIR)).unwrap();
        std::fs::set_permissions(root.join(DIR), std::fs::Permissions::from_mode(0o777)).unwrap();
        let t = table(TWO);
        let e = write_record(&root, t.by_id(40).unwrap(), "", 20049, "", &t).unwrap_err();
        assert!(e.to_string().contains("writable by others"), "{e}");
        assert_eq!(std::fs::read_dir(root.join(DIR)).unwrap().count(), 0);
    }

    #[test]
    fn a_symlinked_run_leads_nowhere_outside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let (tree, outside) = (dir.path().join("root"), dir.path().join("outside"));
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("run")).unwrap();
        let root = Root::new(&tree);
        let t = table(TWO);
        assert!(write_record(&root, t.by_id(40).unwrap(), "", 20049, "", &t).is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        std::fs::create_dir_all(tree.join(outside.strip_prefix("/").unwrap())).unwrap();
        write_record(&root, t.by_id(40).unwrap(), "", 20049, "", &t).unwrap();
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        let (good, _) = read_records(&root).unwrap();
        assert_eq!(
            good.len(),
            1,
            "the record is inside the tree, where reads find it"
        );
    }

    #[test]
    fn a_malformed_record_is_reported_with_its_path_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(root.join(DIR)).unwrap();
        std::fs::write(root.join(DIR).join("1-0.5.json"), "{not json").unwrap();
        std::fs::write(root.join(DIR).join("README"), "ignored").unwrap();
        let (good, bad) = read_records(&root).unwrap();
        assert!(good.is_empty());
        assert_eq!(bad.len(), 1);
        assert!(bad[0].path.ends_with("1-0.5.json"));
        assert!(parse_record(&vec![b' '; MAX_RECORD_BYTES + 1]).is_err());
    }

    #[test]
    fn a_record_from_before_the_options_field_still_reads() {
        let r = parse_record(
            br#"{"source":"s:/e","target":"/mnt/gds","device":"0:50","mount_id":70,"port":20050}"#,
        )
        .unwrap();
        assert_eq!((r.port, r.options.as_str()), (20050, ""));
    }
}
