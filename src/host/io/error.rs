//! The error every failed read of a host file becomes: it always names the path.

use std::io;
use std::path::PathBuf;

/// A failed read of a host file. Always names the path (as seen on the host, i.e. with the root).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not valid UTF-8 text", path.display())]
    NotText { path: PathBuf },
    #[error("{} is corrupt: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot list {}: {source}", path.display())]
    List { path: PathBuf, source: io::Error },
    #[error("{} is {what}, not a regular file: not reading it", path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{} is larger than {}, more than any {noun} should be: not reading it", path.display(), in_mib(*cap))]
    TooLarge {
        path: PathBuf,
        cap: u64,
        noun: &'static str,
    },
    #[error("{}:{line}: the line is longer than {cap} bytes, more than any line of a {noun} should be: not reading it", path.display())]
    LineTooLong {
        path: PathBuf,
        line: usize,
        cap: u64,
        noun: &'static str,
    },
}

/// A cap in words: `64 MiB` when it is a whole number of MiB, else its bytes.
fn in_mib(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}
