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
//! mounts they describe; `/run` starts empty at boot. Only root writes here, and a forged record
//! could only make the agent check one more mount, never fewer, so records are read without a
//! trust check.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::host::mounts::{Mount, MountTable};
use crate::host::{HostError, Root};

/// Where the records live, below the root.
pub const DIR: &str = "run/nfs-gds/mounts";

/// Records larger than this are not records (a few hundred bytes is typical).
const MAX_RECORD_BYTES: usize = 16 * 1024;

/// One mount the helper made and verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountRecord {
    /// `server:/export` as the kernel shows it.
    pub source: String,
    /// The mount point, as the kernel shows it (lossy for non-UTF-8 paths).
    pub target: String,
    /// `major:minor` of the mount's filesystem.
    pub device: String,
    /// The mount id at the time (for people; matching uses the other fields).
    pub mount_id: u32,
    /// The port the helper verified the mount on.
    pub port: u16,
}

impl MountRecord {
    pub fn of(m: &Mount, port: u16) -> Self {
        MountRecord {
            source: m.info.source().to_string(),
            target: m.info.mount_point().to_string_lossy().into_owned(),
            device: m.info.device_number().to_string(),
            mount_id: m.info.mount_id,
            port,
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
        match std::fs::symlink_metadata(&path) {
            Ok(md) if md.is_file() && md.len() <= MAX_RECORD_BYTES as u64 => {}
            Ok(_) => {
                bad.push(BadRecord {
                    path,
                    reason: format!("not a regular file of at most {MAX_RECORD_BYTES} bytes"),
                });
                continue;
            }
            Err(_) => continue,
        }
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

/// Records `m` as made and verified by the helper, and removes the records of earlier mounts on
/// the same mount point that are no longer in `table`.
pub fn write_record(
    root: &Root,
    m: &Mount,
    port: u16,
    table: &MountTable,
) -> Result<(), RecordError> {
    let record = MountRecord::of(m, port);
    if let Ok((records, _)) = read_records(root) {
        for old in records {
            if old.target == record.target && !table.mounts.iter().any(|t| old.is_of(t)) {
                let _ = std::fs::remove_file(root.join(DIR).join(old.file_name()));
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&record).expect("a record always serializes");
    text.push('\n');
    let dir = root.join(DIR);
    let path = dir.join(record.file_name());
    let err = |source| RecordError {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    // Same directory, then rename: the agent reads the old record or the new one, never half.
    let mut tmp = tempfile::Builder::new()
        .prefix(".record.")
        .tempfile_in(&dir)
        .map_err(err)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(err)?;
    tmp.persist(&path).map_err(|e| err(e.error))?;
    Ok(())
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
        let r = MountRecord::of(t.by_id(40).unwrap(), 20049);
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
        write_record(&root, t.by_id(40).unwrap(), 20049, &t).unwrap();
        write_record(&root, t.by_id(41).unwrap(), 20050, &t).unwrap();
        let (mut good, bad) = read_records(&root).unwrap();
        good.sort_by_key(|r| r.mount_id);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(good.len(), 2);
        assert_eq!(good[1].port, 20050);
        // A new mount on /mnt/gds replaces the record of the one that is gone; the record of
        // /mnt/other stays although this table lacks it (another namespace may have it).
        let later = table("42 1 0:52 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,proto=rdma\n");
        write_record(&root, later.by_id(42).unwrap(), 20049, &later).unwrap();
        let (good, _) = read_records(&root).unwrap();
        let mut ids: Vec<u32> = good.iter().map(|r| r.mount_id).collect();
        ids.sort();
        assert_eq!(ids, [41, 42]);
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
}
