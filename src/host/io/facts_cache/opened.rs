//! The cache directory, opened once per process. A check asks the cache for a dozen entries,
//! and each ask walked to the directory below the root and judged it and its parent again (some
//! ten system calls); now the first ask opens and judges it, and the rest use that handle: the
//! directory as it was when it was judged trusted, whatever is renamed over it later, judged
//! again at each ask by one `fstat` of the handle.
//!
//! A store opens the directory afresh (it may have to create it) and the handle it got replaces
//! the one kept, so a directory removed and made again under a long-running agent is used again
//! from its next store on. A directory that is not there is not remembered: the next ask looks
//! again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::host::io::out_dir::OutDir;

/// The directories opened so far, by the path shown for them and the owner they were judged for.
static OPENED: Mutex<Vec<(PathBuf, u32, Arc<OutDir>)>> = Mutex::new(Vec::new());

/// The handle kept for `dir` judged for `owner`, if any.
pub(super) fn kept(dir: &Path, owner: u32) -> Option<Arc<OutDir>> {
    let opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    opened
        .iter()
        .find(|(d, o, _)| d == dir && *o == owner)
        .map(|(_, _, h)| h.clone())
}

/// Keeps `handle` for `dir` judged for `owner`, in place of any kept before; returns it.
pub(super) fn keep(dir: &Path, owner: u32, handle: OutDir) -> Arc<OutDir> {
    let handle = Arc::new(handle);
    let mut opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    opened.retain(|(d, o, _)| !(d == dir && *o == owner));
    opened.push((dir.to_owned(), owner, handle.clone()));
    handle
}
