//! Everything nfs-gds reads from the machine, always below a root directory.
//!
//! The root is `/` in production and a fixture tree in tests (`--root`, `NFS_GDS_ROOT`). Each
//! reader is split into a pure `parse_*` over text and a thin `read_*` that takes the [`Root`]; a
//! missing file is an answer (`None`), never an error. Only real I/O failures (permission, a
//! directory or FIFO where a file was expected, a file over its size cap, invalid UTF-8) become
//! [`HostError`]s, and they carry the path. Every read goes through [`Root::read_file`] (or, for
//! a file read piece by piece or line by line, [`Root::open_file`] and [`Root::read_lines`]),
//! which resolves the path inside the root and reads it with the rules of [`io::reader`].

pub mod boot;
pub mod facts;
#[cfg(test)]
pub mod facts_builder;
pub mod facts_memo;
pub mod io;
pub mod kernel;
pub mod kernel_cmdline;
pub mod modules;
pub mod mount_localio;
pub mod mounts;
pub mod platform;
pub mod stack_facts;
pub mod syslog;

pub use facts::HostFacts;
pub use io::error::HostError;
pub use io::reader::{FileKind, FileRead};
pub use io::root::{read_first_line, Record, Root};
