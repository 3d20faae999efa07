//! The policy: how strictly each check is enforced, per node and per mount.
//!
//! Read from `/etc/nfs-gds/nfs-gds.toml` (below `--root`; `--config` / `NFS_GDS_CONFIG` name
//! another file). A missing default file means the built-in defaults: every check `enforce`,
//! `vers=4.2`, `port=20049`, load rpcrdma first, no wait, `mount.nfs` when installed. The file is
//! refused unless only root can change it ([`trust`]), since it can turn enforcement off.
//! [`file`](mod@file) is the TOML schema; [`effective`] merges it with one mount's own options.

pub mod effective;
pub mod file;
pub mod intent;
pub mod load;
pub mod model;
pub mod trust;

pub use crate::checks::level::{BadLevel, Level};
pub use effective::MountPolicy;
pub use load::{load, load_for, parse_bytes, path_for, PolicyError, DEFAULT_PATH};
pub use model::*;
pub use trust::{Trust, TrustError};
