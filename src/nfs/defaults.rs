//! The NFS facts the helper fills in when a mount does not say them: the protocol version and
//! the port an NFS/RDMA server listens on; and the one rule for a port other than that one, and
//! for the number of connections the kernel takes. The version a mount is made with is decided
//! here once ([`OptionDefaults::version`]): the helper mounts by it, and `check` and `doctor`
//! judge an `nfs-gds` fstab line by it.

use super::version::BadVersion;
use super::NfsVersion;

/// The port NFS/RDMA servers listen on (`NFS_RDMA_PORT`); the kernel's default for RDMA mounts.
pub const NFS_RDMA_PORT: u16 = 20049;

/// The RPC netid of NFS over RDMA on IPv4.
pub const RDMA_NETID: &str = "rdma";

/// The RPC netid of NFS over RDMA on IPv6.
pub const RDMA6_NETID: &str = "rdma6";

/// The RPC netids of NFS over RDMA (`proto=`, `mountproto=`, mountstats' `xprt:`).
pub const RDMA_NETIDS: [&str; 2] = [RDMA_NETID, RDMA6_NETID];

/// Whether an RPC netid / `proto=` value is RDMA: the one rule the helper, the checks, `lint`
/// and the mount table share.
pub fn is_rdma_netid(netid: &str) -> bool {
    RDMA_NETIDS.contains(&netid)
}

/// The port NFSv4 uses when the kernel prints none (it omits `port=` when it is 2049).
pub const NFS_PORT: u16 = 2049;

/// The most connections `nconnect=` may ask for (the kernel's `NFS_MAX_CONNECTIONS`); the
/// kernel refuses the mount outside 1..=16.
pub const NFS_MAX_CONNECTIONS: u32 = 16;

/// The warning for an RDMA mount on `port`, or `None` on the standard one: the one rule `lint`,
/// the helper (`-o port=`) and `policy check` (`[options] port`) share. A warning, never a
/// refusal: some servers do serve NFS/RDMA on 2049. `0` is the kernel's default, 20049.
pub fn rdma_port_warning(port: u16) -> Option<String> {
    (port != NFS_RDMA_PORT && port != 0).then(|| {
        format!(
            "port={port} with RDMA: the standard NFS/RDMA port is {NFS_RDMA_PORT}; keep {port} only if the server serves NFS/RDMA there"
        )
    })
}

/// The defaults the helper adds when the options do not set them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionDefaults {
    pub vers: NfsVersion,
    pub port: u16,
}

impl OptionDefaults {
    /// The version a mount is made with: the one its options name, else [`Self::vers`] (the
    /// policy's `[options] vers`, or [`NfsVersion::DEFAULT`]), as the helper fills it in.
    pub fn version(&self, named: Option<NfsVersion>) -> NfsVersion {
        named.unwrap_or(self.vers)
    }

    /// [`Self::version`] of a mount asking `options` (one option each, as an fstab line or
    /// `-o` gives them): the rightmost version they name, as mount.nfs takes it. A version
    /// nfs-gds does not mount (`vers=2`) names none here; the helper refuses it.
    pub fn version_of<'a>(&self, options: impl IntoIterator<Item = &'a str>) -> NfsVersion {
        let named = options
            .into_iter()
            .filter_map(named_version)
            .filter_map(Result::ok)
            .last();
        self.version(named)
    }
}

/// The version `option` names: `vers=V`, `nfsvers=V` or the flag `vV` (`v3`, `v4.1`); `None`
/// when it names none.
pub fn named_version(option: &str) -> Option<Result<NfsVersion, BadVersion>> {
    let text = match option.split_once('=') {
        Some(("vers" | "nfsvers", v)) => v,
        Some(_) => return None,
        None => option
            .strip_prefix('v')
            .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))?,
    };
    Some(text.parse())
}

impl Default for OptionDefaults {
    fn default() -> Self {
        OptionDefaults {
            vers: NfsVersion::DEFAULT,
            port: NFS_RDMA_PORT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_is_made_with_the_version_it_names_else_the_default() {
        let v3 = OptionDefaults {
            vers: NfsVersion::V3,
            ..OptionDefaults::default()
        };
        assert_eq!(v3.version_of(["_netdev", "nconnect=4"]), NfsVersion::V3);
        assert_eq!(
            OptionDefaults::default().version_of(["nconnect=4"]),
            NfsVersion::DEFAULT
        );
        assert_eq!(v3.version_of(["vers=4.1"]), NfsVersion::V4(Some(1)));
        assert_eq!(v3.version_of(["nfsvers=4"]), NfsVersion::V4(None));
        assert_eq!(v3.version_of(["v4.2", "hard"]), NfsVersion::V4(Some(2)));
        assert_eq!(
            v3.version_of(["vers=4.1", "vers=4.2"]),
            NfsVersion::V4(Some(2))
        );
        assert_eq!(v3.version_of(["vers=2", "verbose"]), NfsVersion::V3);
        assert_eq!(named_version("v2").map(|r| r.is_err()), Some(true));
        assert_eq!(named_version("vers"), None);
        assert_eq!(named_version("port=4"), None);
    }

    #[test]
    fn only_a_port_other_than_20049_is_warned_about_and_the_warning_names_20049() {
        assert_eq!(rdma_port_warning(NFS_RDMA_PORT), None);
        assert_eq!(rdma_port_warning(0), None);
        let w = rdma_port_warning(2049).unwrap();
        assert!(
            w.starts_with("port=2049 with RDMA: the standard NFS/RDMA port is 20049"),
            "{w}"
        );
    }
}
