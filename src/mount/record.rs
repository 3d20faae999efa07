//! The record of the mounts the helper made and verified, so that `nfs-gds agent` keeps verifying
//! them: one small JSON file per mount in `/run/nfs-gds/mounts/` (below the root).
//!
//! A mount's options alone do not keep its intent: when the transport trap gives a new NFSv4 mount
//! another mount's TCP client, the kernel prints `proto=tcp` for it, and nothing in the mount
//! table says it was asked for RDMA. The record does. A record names the mount by its device
//! number, mount point and source together (a mount id alone is reused by the kernel), so a
//! record of a mount that is gone matches nothing. When the helper records a mount it removes the
//! records of earlier mounts on the same mount point that its table no longer has; it leaves other
//! mount points' records alone, since it may run in another mount namespace (`-N`) than the
//! mounts they describe; `/run` starts empty at boot. It removes a record by its own directory
//! entry, never by a file name rebuilt from another record's fields. Only root writes here: the
//! directories are created 0755 whatever the umask, and the helper refuses a records directory
//! another user owns or may write in. A forged record could only make the agent check one more
//! mount, never fewer, so records are read without a trust check.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checks::asked::{Asked, AskedBy};
use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
use crate::host::mounts::{Mount, MountTable};
use crate::host::{HostError, Root};

/// Where the records live, below the root (in [`RUN_DIR`]).
pub const DIR: &str = "run/nfs-gds/mounts";

/// Records larger than this are not records (a few hundred bytes is typical).
const MAX_RECORD_BYTES: usize = 16 * 1024;

/// One mount the helper made and verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountRecord {
    /// `server:/export` as the kernel shows it: for a mount that shares an NFS superblock, the
    /// name that superblock was first mounted with.
    pub source: String,
    /// The export the helper was asked to mount (SPEC), as given. Empty in records written
    /// before the field.
    #[serde(default)]
    pub spec: String,
    /// The mount point, as the kernel shows it (lossy for non-UTF-8 paths).
    pub target: String,
    /// `major:minor` of the mount's filesystem.
    pub device: String,
    /// The mount id at the time (for people; matching uses the other fields).
    pub mount_id: u32,
    /// The port the helper verified the mount on.
    pub port: u16,
    /// The options the helper passed to mount.nfs: what the mount asked for, which the kernel's
    /// own list may have dropped (`nconnect=` on kernels that ignore it). Empty in records
    /// written before the field.
    #[serde(default)]
    pub options: String,
}

impl MountRecord {
    pub fn of(m: &Mount, spec: &str, port: u16, options: &str) -> Self {
        MountRecord {
            source: m.info.source().to_string(),
            spec: spec.to_string(),
            target: m.info.mount_point().to_string_lossy().into_owned(),
            device: m.info.device_number().to_string(),
            mount_id: m.info.mount_id,
            port,
            options: options.to_string(),
        }
    }

    /// Whether this record is of `m`: same device, mount point and source.
    pub fn is_of(&self, m: &Mount) -> bool {
        self.device == m.info.device_number()
            && self.source == m.info.source()
            && self.target == m.info.mount_point().to_string_lossy()
    }

    /// The file name: mount id and device, so two live mounts never share one.
    fn file_name(&self) -> String {
        format!("{}-{}.json", self.mount_id, self.device.replace(':', "."))
    }
}

/// Parses one record file.
pub fn parse_record(bytes: &[u8]) -> Result<MountRecord, String> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(format!("larger than {MAX_RECORD_BYTES} bytes"));
    }
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// A record file that could not be used, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    pub path: PathBuf,
    pub reason: String,
}

/// Reads every record below the root. Unreadable or malformed files are returned beside the
/// good ones (they never stop a pass); a missing directory is no records.
pub fn read_records(root: &Root) -> Result<(Vec<MountRecord>, Vec<BadRecord>), HostError> {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for name in root.list_dir(DIR)?.unwrap_or_default() {
        if !name.ends_with(".json") || name.starts_with('.') {
            continue;
        }
        let rel = Path::new(DIR).join(&name);
        let path = root.join(&rel);
        // Resolved inside the root like every read (never a host-path `lstat`, which a
        // symlinked `<root>/run` would lead out of the tree); anything but a regular file is
        // refused by the reader.
        match root.read_bytes(&rel) {
            Ok(Some(bytes)) => match parse_record(&bytes) {
                Ok(r) => good.push(r),
                Err(reason) => bad.push(BadRecord { path, reason }),
            },
            Ok(None) => {}
            Err(e) => bad.push(BadRecord {
                path,
                reason: e.to_string(),
            }),
        }
    }
    Ok((good, bad))
}

/// What the helper recorded `m` asked for: the options of its record of `m`, if any. An
/// unreadable records directory is no record (the kernel's own list then speaks).
pub fn asked_of(root: &Root, m: &Mount) -> Vec<Asked> {
    let records = read_records(root).map(|(good, _)| good).unwrap_or_default();
    records
        .into_iter()
        .filter(|r| r.is_of(m))
        .map(|r| Asked::new(AskedBy::Record, r.options))
        .collect()
}

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
        // What each mount asked: its own record's options, never another mount's.
        assert_eq!(
            asked_of(&root, t.by_id(41).unwrap()),
            [Asked::new(AskedBy::Record, "rw,nconnect=4,vers=4.2")]
        );
        let unrecorded = table("43 1 0:53 / /mnt/gds rw - nfs4 10.0.2.15:/export rw\n");
        assert!(asked_of(&root, unrecorded.by_id(43).unwrap()).is_empty());
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
