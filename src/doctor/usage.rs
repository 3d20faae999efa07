//! Whether rpcrdma may be reloaded right now: not while an NFS mount runs over RDMA, nfsd listens
//! on RDMA, or anything else holds a reference to the module.

use serde::Serialize;

use crate::host::facts::RPCRDMA;
use crate::host::{HostError, HostFacts};

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
    pub fn read(facts: &HostFacts) -> Result<Self, HostError> {
        let refcount = facts
            .loaded_modules
            .iter()
            .flatten()
            .find(|m| m.name == RPCRDMA)
            .and_then(|m| m.refcount);
        let rdma_mounts = facts
            .root
            .read_text("proc/self/mounts")?
            .map(|t| rdma_nfs_mounts(&t))
            .unwrap_or_default();
        let nfsd_rdma_listener = facts
            .root
            .read_text("proc/fs/nfsd/portlist")?
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

/// Mount points of NFS mounts over RDMA in a `/proc/mounts`-format text.
pub fn rdma_nfs_mounts(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 4 || !matches!(f[2], "nfs" | "nfs4") {
                return None;
            }
            f[3].split(',')
                .any(|o| o == "proto=rdma" || o == "proto=rdma6")
                .then(|| f[1].replace("\\040", " "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_rdma_mounts_only() {
        let t = "srv:/a /mnt/a nfs4 rw,vers=4.2,proto=rdma,port=20049 0 0\n\
                 srv:/b /mnt/b\\040x nfs rw,vers=3,proto=rdma6 0 0\n\
                 srv:/c /mnt/c nfs4 rw,proto=tcp 0 0\n\
                 tmpfs /tmp tmpfs rw 0 0\n";
        assert_eq!(rdma_nfs_mounts(t), vec!["/mnt/a", "/mnt/b x"]);
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
