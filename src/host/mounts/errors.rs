//! Why a mount table could not be read: the file and line of what did not parse.

use std::path::PathBuf;

use crate::host::io::error::HostError;

/// A mount table file that could not be read or understood. Names the file and the line.
#[derive(Debug, thiserror::Error)]
pub enum MountsError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("{} does not exist (is /proc mounted?)", path.display())]
    Missing { path: PathBuf },
    #[error("{}:{line}: {reason}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// A line of mountinfo that does not have the documented shape, with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub reason: String,
}
