//! NFS LOCALIO (Linux 6.12+, `CONFIG_NFS_LOCALIO`): when the NFS client and an nfsd are on the
//! same host, reads, writes and commits bypass RPC and XDR, so a mount whose mountstats say
//! `xprt: rdma` may move no byte through rpcrdma — and never GPU-direct.
//!
//! What is read: the running kernel's configuration (`/boot/config-<release>`, its module tree's
//! `config`, `/proc/config.gz`); the nfs module's `localio_enabled` parameter; and, only where
//! LOCALIO can happen, whether an nfsd runs here in any network namespace (its kernel threads
//! are named `nfsd` in every namespace's view of `/proc`; `/proc/fs/nfsd/threads` counts this
//! namespace's). This host's addresses are the host facts' to add (one reader of them).

use std::net::IpAddr;

use serde::Serialize;

use super::kernel_config::{ConfigValue, KernelConfig};
use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// The configuration options this reader judges.
pub const CONFIG_OPTIONS: &[&str] = &["CONFIG_NFS_LOCALIO"];

/// Processes whose `comm` is looked at, at most, when looking for nfsd threads.
const MAX_PROCESSES: usize = 8192;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Localio {
    /// `CONFIG_NFS_LOCALIO` is `y` or `m`; `None` when no configuration could be read.
    pub built: Option<bool>,
    /// Where the configuration was read.
    pub config: Option<String>,
    /// `/sys/module/nfs/parameters/localio_enabled`, when the nfs module shows it.
    pub enabled_param: Option<bool>,
    /// How an nfsd was seen running on this host; read only where LOCALIO can happen.
    pub nfsd: Option<String>,
    /// This host's own addresses, filled in by the host facts (the one reader of them is
    /// cufile.json's) only where LOCALIO can happen.
    pub addresses: Vec<IpAddr>,
}

impl Localio {
    /// Whether a mount of an nfsd on this host would bypass RPC: built, and not turned off.
    pub fn possible(&self) -> bool {
        self.built == Some(true) && self.enabled_param != Some(false)
    }

    /// Whether `addr` is this host (loopback, or one of its addresses).
    pub fn is_local(&self, addr: IpAddr) -> bool {
        addr.is_loopback() || self.addresses.contains(&addr)
    }

    /// Reads what `config` (the running kernel's, `None` when none could be read) leaves to
    /// look at.
    pub fn read(root: &Root, config: Option<&KernelConfig>) -> Result<Self, HostError> {
        let built = config.map(|c| {
            matches!(
                c.get("CONFIG_NFS_LOCALIO"),
                Some(ConfigValue::Yes | ConfigValue::Module)
            )
        });
        let enabled_param = root
            .read_text_lossy("sys/module/nfs/parameters/localio_enabled")?
            .map(|t| matches!(t.trim(), "Y" | "y" | "1"));
        let mut l = Localio {
            built,
            config: config.map(|c| c.path.clone()),
            enabled_param,
            ..Localio::default()
        };
        if l.possible() {
            l.nfsd = read_nfsd(root)?;
        }
        Ok(l)
    }
}

/// Evidence that an nfsd runs on this host: this namespace's thread count, else an `nfsd`
/// kernel thread among the processes.
fn read_nfsd(root: &Root) -> Result<Option<String>, HostError> {
    if let Some(t) = root.read_text_lossy("proc/fs/nfsd/threads")? {
        if t.trim().parse::<u32>().is_ok_and(|n| n > 0) {
            return Ok(Some(format!("/proc/fs/nfsd/threads: {}", t.trim())));
        }
    }
    let pids = root.list_dir("proc")?.unwrap_or_default();
    for pid in pids
        .iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .take(MAX_PROCESSES)
    {
        if let Some(comm) = root.read_text_lossy(format!("proc/{pid}/comm"))? {
            if comm.trim() == "nfsd" {
                return Ok(Some(format!("/proc/{pid}/comm: nfsd (a kernel thread)")));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// The running kernel's configuration as `/boot/config-6.12.30-amd64` holds `text`.
    fn config(text: &str) -> Option<KernelConfig> {
        Some(KernelConfig::scan(
            "/boot/config-6.12.30-amd64",
            text.as_bytes(),
            CONFIG_OPTIONS,
        ))
    }

    #[test]
    fn only_a_kernel_built_with_localio_and_not_turned_off_is_looked_at_further() {
        let built = config("CONFIG_NFS_LOCALIO=y\n");
        let r = built.as_ref();
        let dir = tree(&[("proc/1234/comm", "nfsd\n")]);
        let l = Localio::read(&Root::new(dir.path()), r).unwrap();
        assert!(l.possible());
        assert_eq!(
            l.nfsd.as_deref(),
            Some("/proc/1234/comm: nfsd (a kernel thread)")
        );
        assert!(l.is_local("127.0.0.1".parse().unwrap()));
        assert!(!l.is_local("10.0.2.16".parse().unwrap()));

        let off = tree(&[("proc/1234/comm", "nfsd\n")]);
        let not_built = config("# CONFIG_NFS_LOCALIO is not set\n");
        let l = Localio::read(&Root::new(off.path()), not_built.as_ref()).unwrap();
        assert_eq!(l.built, Some(false));
        assert!(l.nfsd.is_none(), "not looked for");

        let param = tree(&[("sys/module/nfs/parameters/localio_enabled", "N\n")]);
        assert!(!Localio::read(&Root::new(param.path()), r)
            .unwrap()
            .possible());
        let none = tree(&[]);
        assert_eq!(
            Localio::read(&Root::new(none.path()), None).unwrap().built,
            None
        );
    }
}
