//! The NFS facts the helper fills in when a mount does not say them: the protocol version and
//! the port an NFS/RDMA server listens on; and the one rule for a port other than that one, and
//! for the number of connections the kernel takes.

use super::NfsVersion;

/// The port NFS/RDMA servers listen on (`NFS_RDMA_PORT`); the kernel's default for RDMA mounts.
pub const NFS_RDMA_PORT: u16 = 20049;

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
