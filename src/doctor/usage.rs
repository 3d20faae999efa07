//! Whether rpcrdma may be reloaded right now: not while an NFS mount runs over RDMA, nfsd listens
//! on RDMA, or anything else holds a reference to the module.

use serde::Serialize;

use crate::host::mounts::{is_rdma_netid, read_mount_table, MountTable, MountsError};
use crate::host::{HostError, HostFacts};
use crate::kmod::RPCRDMA;

#[derive(Debug, Clone, Default, Serialize)]
pub struct RpcrdmaUsage {
    /// The module's reference count from `/proc/modules`.
    pub refcount: Option<u32>,
    /// Mount points of NFS mounts whose options say `proto=rdma` or `rdma6`.
    pub rdma_mounts: Vec<String>,
    /// `/proc/fs/nfsd/portlist` has an `rdma` line.
    pub nfsd_rdma_listener: bool,
}

impl RpcrdmaUsage {
    /// Reads the mount table itself; see [`RpcrdmaUsage::with_table`] to reuse one.
    pub fn read(facts: &HostFacts) -> Result<Self, HostError> {
        Self::with_table(facts, read_mount_table(&facts.root).as_ref())
    }

    /// The usage given a mount table already read (or why it could not be read).
    pub fn with_table(
        facts: &HostFacts,
        table: Result<&MountTable, &MountsError>,
    ) -> Result<Self, HostError> {
        let refcount = facts
            .loaded_modules
            .iter()
            .flatten()
            .find(|m| m.name == RPCRDMA)
            .and_then(|m| m.refcount);
        // An unreadable mount table is taken as "unknown", which must not allow a reload.
        let rdma_mounts = match table {
            Ok(table) => rdma_nfs_mounts(table),
            Err(e) => vec![format!("(mount table unreadable: {e})")],
        };
        let nfsd_rdma_listener = facts
            .root
            .read_text_lossy("proc/fs/nfsd/portlist")?
            .is_some_and(|t| t.lines().any(|l| l.trim_start().starts_with("rdma")));
        Ok(RpcrdmaUsage {
            refcount,
            rdma_mounts,
            nfsd_rdma_listener,
        })
    }

    pub fn in_use(&self) -> bool {
        !self.reasons().is_empty()
    }

    /// Each reason rpcrdma cannot be unloaded now, in words.
    pub fn reasons(&self) -> Vec<String> {
        let mut r = Vec::new();
        if !self.rdma_mounts.is_empty() {
            r.push(format!(
                "NFS over RDMA is mounted on {}",
                self.rdma_mounts.join(", ")
            ));
        }
        if self.nfsd_rdma_listener {
            r.push("nfsd listens on RDMA (/proc/fs/nfsd/portlist)".into());
        }
        if let Some(n) = self.refcount.filter(|n| *n > 0) {
            if r.is_empty() {
                r.push(format!("rpcrdma is in use ({n} references)"));
            }
        }
        r
    }
}

/// Mount points of NFS mounts that ask for or run over RDMA.
pub fn rdma_nfs_mounts(table: &MountTable) -> Vec<String> {
    table
        .mounts
        .iter()
        .filter(|m| m.is_nfs())
        .filter(|m| {
            m.runs_over_rdma() == Some(true) || m.option("proto").is_some_and(is_rdma_netid)
        })
        .map(|m| m.info.mount_point_shown().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::parse_mountinfo;

    #[test]
    fn finds_rdma_mounts_only() {
        let info = "1 0 0:1 / / rw - ext4 /dev/vda rw\n\
                    2 1 0:2 / /mnt/a rw - nfs4 srv:/a rw,vers=4.2,proto=rdma,port=20049\n\
                    3 1 0:3 / /mnt/b\\040x rw - nfs srv:/b rw,vers=3,proto=rdma6\n\
                    4 1 0:4 / /mnt/c rw - nfs4 srv:/c rw,proto=tcp\n\
                    5 1 0:5 / /tmp rw - tmpfs tmpfs rw\n";
        let table = MountTable::join(parse_mountinfo(info.as_bytes()).unwrap(), vec![]);
        assert_eq!(rdma_nfs_mounts(&table), vec!["/mnt/a", "/mnt/b x"]);
    }

    #[test]
    fn refcount_alone_is_a_reason() {
        let u = RpcrdmaUsage {
            refcount: Some(2),
            ..Default::default()
        };
        assert!(u.in_use());
        assert!(!RpcrdmaUsage::default().in_use());
    }
}
