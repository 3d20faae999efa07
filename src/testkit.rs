//! What the crate's unit tests share: the fixture-tree builder and mount-table texts of the
//! integration tests (the same files, so there is one of each), and a mount table from text.
//! Compiled only for tests; every layer's tests may use it.

#[path = "../tests/support/tree.rs"]
#[allow(dead_code)] // the integration tests use the rest
mod tree;

#[path = "../tests/support/mount_table.rs"]
pub mod mount_text;

pub use tree::{write_below, write_table, Tree};

use crate::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};

/// The table that `mountinfo` and `mountstats` describe.
pub fn table(mountinfo: &str, mountstats: &str) -> MountTable {
    MountTable::join(
        parse_mountinfo(mountinfo.as_bytes()).unwrap(),
        parse_mountstats(mountstats.as_bytes()),
    )
}
