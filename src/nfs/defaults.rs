//! The NFS facts the helper fills in when a mount does not say them: the protocol version and
//! the port an NFS/RDMA server listens on.

use super::NfsVersion;

/// The port NFS/RDMA servers listen on (`NFS_RDMA_PORT`); the kernel's default for RDMA mounts.
pub const NFS_RDMA_PORT: u16 = 20049;

/// The port NFSv4 uses when the kernel prints none (it omits `port=` when it is 2049).
pub const NFS_PORT: u16 = 2049;

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
