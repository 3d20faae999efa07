//! The NFS vocabulary every layer shares: source specs and server identity, protocol versions,
//! and the defaults a mount gets. It reads nothing from the host and imports nothing above it.

pub mod defaults;
pub mod export_identity;
pub mod source;
pub mod version;

pub use defaults::{
    is_rdma_netid, named_version, rdma_port_warning, OptionDefaults, NFS_MAX_CONNECTIONS, NFS_PORT,
    NFS_RDMA_PORT, RDMA6_NETID, RDMA_NETID, RDMA_NETIDS,
};
pub use export_identity::{ServerAddrs, ShownExport};
pub use source::{NfsSource, Sameness, ServerHost, SourceError};
pub use version::{BadVersion, NfsVersion};
