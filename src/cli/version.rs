//! What the binary says it is: `--version`'s long form, and the name that makes it the mount
//! helper.

/// The version `--version` prints: the crate's, the commit, the target and the enabled features
/// (set by `build.rs`).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("NFS_GDS_COMMIT"),
    ", target ",
    env!("NFS_GDS_TARGET"),
    ", features: ",
    env!("NFS_GDS_FEATURES"),
    ")"
);

/// The file name argv\[0\] must have for the mount(8) helper persona.
pub const HELPER_NAME: &str = "mount.nfs-gds";
