//! NFS LOCALIO (Linux 6.12+, `CONFIG_NFS_LOCALIO`): when the NFS client and an nfsd are on the
//! same host, reads, writes and commits bypass RPC and XDR, so a mount whose mountstats say
//! `xprt: rdma` may move no byte through rpcrdma — and never GPU-direct.
//!
//! What is read: the running kernel's configuration (`/boot/config-<release>`, its module tree's
//! `config`, `/proc/config.gz`), and where none can be read, the nfs module's parameters (the
//! `localio_enabled` parameter is defined in `fs/nfs/localio.c`, built only with
//! `CONFIG_NFS_LOCALIO`: a loaded nfs module without it has no LOCALIO); that parameter's value;
//! and, only where LOCALIO can happen, whether an nfsd runs here in any network namespace (its
//! kernel threads are named `nfsd` in every namespace's view of `/proc`;
//! `/proc/fs/nfsd/threads` counts this namespace's). This host's addresses are added by
//! [`crate::host::mount_localio::read_localio`] (their one reader is cufile.json's).

use std::net::IpAddr;

use serde::Serialize;

use super::kernel_config::{ConfigValue, KernelConfig};
use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// The configuration options this reader judges.
pub const CONFIG_OPTIONS: &[&str] = &["CONFIG_NFS_LOCALIO"];

/// Processes whose `comm` is looked at, at most, when looking for nfsd threads.
const MAX_PROCESSES: usize = 8192;

/// The nfs module's parameters: shown for a loaded (or built-in) nfs, `localio_enabled` among
/// them only where the kernel has LOCALIO.
const NFS_PARAMETERS: &str = "sys/module/nfs/parameters";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Localio {
    /// `CONFIG_NFS_LOCALIO` is `y` or `m` (else, without a configuration, the nfs module shows
    /// `localio_enabled`); `None` when neither could be read.
    pub built: Option<bool>,
    /// Where the build was read: the configuration's path, else the nfs module's parameters.
    pub config: Option<String>,
    /// `/sys/module/nfs/parameters/localio_enabled`, when the nfs module shows it.
    pub enabled_param: Option<bool>,
    /// How an nfsd was seen running on this host; read only where LOCALIO can happen.
    pub nfsd: Option<String>,
    /// Whether the processes could be looked at for an nfsd (`/proc` lists some); read only
    /// where LOCALIO can happen.
    pub processes_seen: bool,
    /// This host's own addresses, filled in only where LOCALIO can happen.
    pub addresses: Vec<IpAddr>,
    /// The files the addresses came from (`/proc/net/fib_trie` for IPv4, `/proc/net/if_inet6`
    /// for IPv6): an address of a family whose file was not read is not known to be remote.
    pub address_files: Vec<&'static str>,
}

impl Localio {
    /// Whether a mount of an nfsd on this host would bypass RPC: built, and not turned off.
    pub fn possible(&self) -> bool {
        self.built == Some(true) && self.enabled_param != Some(false)
    }

    /// What says the kernel has no LOCALIO (when [`Localio::built`] is `Some(false)`).
    pub fn why_not_built(&self) -> &'static str {
        match &self.config {
            Some(c) if c.starts_with(&format!("/{NFS_PARAMETERS}")) => {
                "the nfs module has no localio_enabled parameter"
            }
            _ => "CONFIG_NFS_LOCALIO is not set",
        }
    }

    /// Whether `addr` is this host (loopback, or one of its addresses).
    pub fn is_local(&self, addr: IpAddr) -> bool {
        addr.is_loopback() || self.addresses.contains(&addr)
    }

    /// The file that lists this host's addresses of `addr`'s family, when it was not read (so
    /// `addr` is not known to be remote).
    pub fn unread_addresses_of(&self, addr: IpAddr) -> Option<&'static str> {
        let file = match addr {
            IpAddr::V4(_) => "/proc/net/fib_trie",
            IpAddr::V6(_) => "/proc/net/if_inet6",
        };
        (!self.address_files.contains(&file)).then_some(file)
    }

    /// Reads what `config` (the running kernel's, `None` when none could be read) leaves to
    /// look at.
    pub fn read(root: &Root, config: Option<&KernelConfig>) -> Result<Self, HostError> {
        let param = root.read_text_lossy(format!("{NFS_PARAMETERS}/localio_enabled"))?;
        let (built, shown_by) = match config {
            Some(c) => (
                Some(matches!(
                    c.get("CONFIG_NFS_LOCALIO"),
                    Some(ConfigValue::Yes | ConfigValue::Module)
                )),
                Some(c.path.clone()),
            ),
            // No configuration: a loaded nfs module says by its parameters.
            None => match (&param, root.list_dir(NFS_PARAMETERS)?) {
                (Some(_), _) => (
                    Some(true),
                    Some(format!("/{NFS_PARAMETERS}/localio_enabled")),
                ),
                (None, Some(_)) => (
                    Some(false),
                    Some(format!("/{NFS_PARAMETERS} (no localio_enabled)")),
                ),
                (None, None) => (None, None),
            },
        };
        let mut l = Localio {
            built,
            config: shown_by,
            enabled_param: param.map(|t| matches!(t.trim(), "Y" | "y" | "1")),
            ..Localio::default()
        };
        if l.possible() {
            (l.nfsd, l.processes_seen) = read_nfsd(root)?;
        }
        Ok(l)
    }
}

/// Evidence that an nfsd runs on this host: this namespace's thread count, else an `nfsd`
/// kernel thread among the processes; and whether any process could be looked at.
fn read_nfsd(root: &Root) -> Result<(Option<String>, bool), HostError> {
    if let Some(t) = root.read_text_lossy("proc/fs/nfsd/threads")? {
        if t.trim().parse::<u32>().is_ok_and(|n| n > 0) {
            return Ok((Some(format!("/proc/fs/nfsd/threads: {}", t.trim())), true));
        }
    }
    let pids = root.list_dir("proc")?.unwrap_or_default();
    let mut seen = false;
    for pid in pids
        .iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .take(MAX_PROCESSES)
    {
        if let Some(comm) = root.read_text_lossy(format!("proc/{pid}/comm"))? {
            seen = true;
            if comm.trim() == "nfsd" {
                return Ok((
                    Some(format!("/proc/{pid}/comm: nfsd (a kernel thread)")),
                    true,
                ));
            }
        }
    }
    Ok((None, seen))
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

    #[test]
    fn without_a_configuration_the_loaded_nfs_modules_parameters_say_whether_it_was_built() {
        // `localio_enabled` is defined in fs/nfs/localio.c, built only with CONFIG_NFS_LOCALIO.
        let without = tree(&[("sys/module/nfs/parameters/enable_ino64", "Y\n")]);
        let l = Localio::read(&Root::new(without.path()), None).unwrap();
        assert_eq!(l.built, Some(false));
        assert_eq!(
            l.why_not_built(),
            "the nfs module has no localio_enabled parameter"
        );
        let with = tree(&[
            ("sys/module/nfs/parameters/enable_ino64", "Y\n"),
            ("sys/module/nfs/parameters/localio_enabled", "Y\n"),
            ("proc/1/comm", "systemd\n"),
        ]);
        let l = Localio::read(&Root::new(with.path()), None).unwrap();
        assert!(l.possible());
        assert!(l.processes_seen && l.nfsd.is_none());
    }
}
