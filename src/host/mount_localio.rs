//! What nfs-gds knows of NFS LOCALIO, read once per judgement: the node's LOCALIO facts
//! ([`read_localio`]: the kernel's build, its switch, a local nfsd, this host's addresses) and,
//! for the mount check `mount-localio`, the kernel's own word per NFS superblock where it gives
//! one ([`MountLocalio`]).
//!
//! From Linux 6.16 (`fs/nfs/sysfs.c`, "NFS: add localio to sysfs") a kernel built with
//! `CONFIG_NFS_LOCALIO` shows `/sys/fs/nfs/<major:minor>/localio` for every NFS superblock:
//! the sysfs object of a mount's `nfs_server` is renamed to the superblock's `s_id`, which NFS
//! sets to the `major:minor` mountinfo shows, and the file says `1` when the client negotiated
//! LOCALIO with an nfsd on this host (`nfs_server_is_local`), else `0`. The file lives in the
//! client's network namespace's view of sysfs. Older kernels show no such file; the check then
//! judges by the rule of the node's facts.

use std::collections::HashMap;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;
use crate::host::kernel::KernelInfo;
use crate::host::modules::kernel_config::KernelConfig;
use crate::host::modules::localio::Localio;
use crate::host::modules::module_load::read_running_config;
use crate::host::mounts::{Mount, MountTable};
use crate::host::platform::cufile_json::read_local_addresses;

/// The node's LOCALIO facts for the running kernel's configuration `config`, with this host's
/// addresses where LOCALIO can happen.
pub fn read_localio(root: &Root, config: Option<&KernelConfig>) -> Result<Localio, HostError> {
    let mut l = Localio::read(root, config)?;
    if l.possible() {
        (l.addresses, l.address_files) = read_local_addresses(root)?;
    }
    Ok(l)
}

/// The node's LOCALIO facts, and the kernel's own LOCALIO state per NFS superblock.
#[derive(Debug, Clone, Default)]
pub struct MountLocalio {
    pub node: Localio,
    /// `/sys/fs/nfs/<major:minor>/localio` by `major:minor`, where the kernel shows it.
    shown: HashMap<String, bool>,
}

impl MountLocalio {
    /// Reads the node's LOCALIO facts (the running kernel's configuration among them) and the
    /// state of `table`'s NFS mounts; nothing at all when `table` has no NFS mount.
    pub fn read(root: &Root, table: &MountTable) -> Result<Self, HostError> {
        Self::read_of(root, &table.mounts)
    }

    /// [`MountLocalio::read`] with the state of `mounts` alone: the mounts a judgement asks
    /// about, where the table holds others (a container gate's table also holds every mount
    /// that may share their servers, for the transport trap: thousands, on a node whose
    /// volumes all come from one filer).
    pub fn read_of<'m, M>(root: &Root, mounts: M) -> Result<Self, HostError>
    where
        M: IntoIterator<Item = &'m Mount> + Clone,
    {
        if !mounts.clone().into_iter().any(Mount::is_nfs) {
            return Ok(MountLocalio::default());
        }
        let kernel = KernelInfo::read(root)?;
        let config = read_running_config(root, &kernel)?;
        let node = read_localio(root, config.as_ref())?;
        Ok(Self::with_node_of(root, node, mounts))
    }

    /// The state of `table`'s NFS mounts, with node facts already read (the host facts'). A
    /// state file that cannot be read is as none: the rule then judges that mount, and it
    /// passes only where no nfsd runs on this host, where the kernel would say `0`.
    pub fn with_node(root: &Root, node: Localio, table: &MountTable) -> Self {
        Self::with_node_of(root, node, &table.mounts)
    }

    /// [`MountLocalio::with_node`] with the state of `mounts` alone (as [`MountLocalio::read_of`]).
    pub fn with_node_of<'m>(
        root: &Root,
        node: Localio,
        mounts: impl IntoIterator<Item = &'m Mount>,
    ) -> Self {
        let mut shown = HashMap::new();
        // A kernel without LOCALIO has no such file: not looked for.
        if node.built != Some(false) {
            for m in mounts.into_iter().filter(|m| m.is_nfs()) {
                let dev = m.info.device_number();
                if shown.contains_key(dev) || !is_device_number(dev) {
                    continue;
                }
                let file = format!("sys/fs/nfs/{dev}/localio");
                match root.read_text_lossy(&file) {
                    Ok(Some(t)) => match t.trim() {
                        "1" => shown.insert(dev.to_string(), true),
                        "0" => shown.insert(dev.to_string(), false),
                        _ => None,
                    },
                    Ok(None) => None,
                    Err(e) => {
                        tracing::warn!("{e}: judging the mount by the LOCALIO rule");
                        None
                    }
                };
            }
        }
        MountLocalio { node, shown }
    }

    /// Facts for a judgement whose kernel has no LOCALIO.
    pub fn without_localio() -> Self {
        MountLocalio {
            node: Localio {
                built: Some(false),
                config: Some("CONFIG_NFS_LOCALIO is not set".into()),
                ..Localio::default()
            },
            shown: HashMap::new(),
        }
    }

    /// The kernel's own LOCALIO state of `m` (`/sys/fs/nfs/<major:minor>/localio`), with the
    /// file's path; `None` where the kernel shows none.
    pub fn kernel_state(&self, m: &Mount) -> Option<(bool, String)> {
        let dev = m.info.device_number();
        self.shown
            .get(dev)
            .map(|&on| (on, format!("/sys/fs/nfs/{dev}/localio")))
    }
}

/// `major:minor` in decimal: the only names looked up under `/sys/fs/nfs`.
fn is_device_number(dev: &str) -> bool {
    dev.split_once(':').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && (a.bytes().chain(b.bytes())).all(|c| c.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{table, Tree};

    const INFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/a rw - nfs4 10.0.2.15:/a rw,vers=4.2,proto=rdma,addr=10.0.2.15
41 1 0:51 / /mnt/b rw - nfs4 10.0.2.20:/b rw,vers=4.2,proto=rdma,addr=10.0.2.20
42 1 ../..:1 / /mnt/c rw - nfs4 10.0.2.20:/c rw,vers=4.2,proto=rdma,addr=10.0.2.20
";

    fn tree(files: &[(&str, &str)]) -> Tree {
        let t = Tree::new();
        for (rel, text) in files {
            t.write(rel, text);
        }
        t
    }

    #[test]
    fn the_kernels_own_state_is_read_per_superblock_and_only_by_device_number() {
        let t = table(INFO, "");
        let dir = tree(&[
            ("boot/config-6.16.1", "CONFIG_NFS_LOCALIO=m\n"),
            ("proc/sys/kernel/osrelease", "6.16.1\n"),
            ("sys/fs/nfs/0:50/localio", "1\n"),
            ("sys/fs/nfs/0:51/localio", "0\n"),
            ("sys/fs/nfs/1/localio", "1\n"),
        ]);
        let l = MountLocalio::read(&Root::new(dir.root()), &t).unwrap();
        let state = |id| l.kernel_state(t.by_id(id).unwrap());
        assert_eq!(state(40), Some((true, "/sys/fs/nfs/0:50/localio".into())));
        assert_eq!(state(41).map(|s| s.0), Some(false));
        // A device number that is not `major:minor` names no file.
        assert_eq!(state(42), None);

        // A kernel without LOCALIO: its files are not looked for.
        let no = MountLocalio::with_node(
            &Root::new(dir.root()),
            MountLocalio::without_localio().node,
            &t,
        );
        assert_eq!(no.kernel_state(t.by_id(40).unwrap()), None);
    }

    #[test]
    fn a_table_without_nfs_reads_nothing() {
        let t = table("1 0 254:0 / / rw - ext4 /dev/vda rw\n", "");
        let dir = tree(&[
            ("boot/config-6.16.1", "CONFIG_NFS_LOCALIO=y\n"),
            ("proc/sys/kernel/osrelease", "6.16.1\n"),
        ]);
        let l = MountLocalio::read(&Root::new(dir.root()), &t).unwrap();
        assert_eq!(l.node.built, None, "not read");
        // The same tree with an NFS mount is read.
        let nfs = table(INFO, "");
        let l = MountLocalio::read(&Root::new(dir.root()), &nfs).unwrap();
        assert_eq!(l.node.built, Some(true));
    }
}
