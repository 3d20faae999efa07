//! The records of the mounts `mount.nfs-gds` made and verified: one small JSON file per mount
//! in `/run/nfs-gds/mounts/` (below the root), read here for every command that asks which
//! mounts are meant for RDMA; the helper writes them (`crate::mount::record`).
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

use super::table::Mount;
use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// Where the records live, below the root.
pub const DIR: &str = "run/nfs-gds/mounts";

/// Records larger than this are not records (a few hundred bytes is typical).
pub const MAX_RECORD_BYTES: usize = 16 * 1024;

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
    pub fn file_name(&self) -> String {
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
