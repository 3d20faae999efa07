//! The mount table as the kernel shows it: `/proc/self/mountinfo` and `/proc/self/mountstats`.
//!
//! mountinfo has a mount id per line but no transport; mountstats has the transport (`xprt:`
//! lines) but no mount id. Both are produced by the same walk over the namespace's mount list,
//! so the n-th mount of a given mount point and device in one is the n-th in the other; that is
//! how [`MountTable`] pairs them. Paths in both are escaped by the kernel as 3-digit octal
//! (`\040` for a space, `\011` tab, `\012` newline, `\134` backslash) and are decoded here, byte
//! for byte, so mount points that are not UTF-8 still compare correctly.

pub mod change;
pub mod counters;
mod errors;
mod escape;
mod fields;
pub mod fstab;
mod mountinfo;
mod mountstats;
mod narrowed;
pub mod nconnect_rdma;
mod options;
pub mod pnfs;
mod points;
mod read;
pub mod records;
pub mod resolve;
#[cfg(test)]
mod samples;
pub mod staged;
mod table;

pub use escape::unescape;
pub use mountinfo::{parse_mountinfo, parse_mountinfo_line, MountInfoEntry, ShownPath};
pub use mountstats::{
    is_rdma_netid, parse_mountstats, MountStats, MountStatsParser, MountStatsRecord, Xprt,
};
pub use narrowed::{
    read_mount_points, read_mount_points_at, read_mountinfo_text, read_mountinfo_text_into,
    read_nfs_mounts_of, MountInfoText,
};
pub use options::{option_value, KEPT_OPTIONS, KEPT_SUPER_OPTIONS};
pub use points::{MountPoints, Under};

pub use errors::{LineError, MountsError};
pub use read::{
    host_tables, read_init_mount_table, read_mount_table, read_mount_table_in_flight,
    read_mounts_at, read_mountstats, read_staged, INIT_MOUNTINFO, INIT_MOUNTSTATS, MOUNTINFO,
    MOUNTSTATS,
};
pub use table::{Mount, MountTable};
