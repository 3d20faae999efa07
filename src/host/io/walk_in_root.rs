//! `RESOLVE_IN_ROOT` in user space, for kernels without `openat2` (Linux before 5.6) and
//! seccomp filters that forbid it: the reader's fallback ([`super::reader`]).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// Whether the last component may be a symlink that is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastLink {
    Follow,
    /// Resolve to the link itself (`lstat` semantics).
    Keep,
}

/// Symlinks followed in one resolution before giving up, as the kernel does (`ELOOP`).
const MAX_LINKS: usize = 40;

/// `RESOLVE_IN_ROOT` in user space: one component at a time from `root`, never following a
/// symlink with the kernel's resolution. `..` goes back up the components walked (and stays at
/// the root at the top), and a symlink's target is spliced into the rest of the path, from the
/// root when it is absolute.
pub(crate) fn walk_in_root(
    root: BorrowedFd<'_>,
    rel: &Path,
    last: LastLink,
) -> io::Result<OwnedFd> {
    // The directories walked through, root first; the top is where the next name is looked up.
    let mut stack: Vec<OwnedFd> = vec![root.try_clone_to_owned()?];
    // What remains to walk, the next component last.
    let mut todo = components(rel.as_os_str().as_bytes());
    todo.reverse();
    let mut links = 0;
    while let Some(name) = todo.pop() {
        match name.as_slice() {
            b"." => continue,
            b".." => {
                // `..` at the top of the root is the root.
                if stack.len() > 1 {
                    stack.pop();
                }
                continue;
            }
            _ => {}
        }
        let dir = top(&stack)?;
        let name = OsStr::from_bytes(&name);
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let meta = File::from(fd.try_clone()?).metadata()?;
        let is_last = todo.is_empty();
        if meta.is_symlink() && !(is_last && last == LastLink::Keep) {
            links += 1;
            if links > MAX_LINKS {
                return Err(rustix::io::Errno::LOOP.into());
            }
            let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
            if target.as_bytes().starts_with(b"/") {
                stack.truncate(1);
            }
            let mut parts = components(target.as_bytes());
            parts.reverse();
            todo.extend(parts);
            continue;
        }
        if is_last {
            return Ok(fd);
        }
        if !meta.is_dir() {
            return Err(io::Error::from(io::ErrorKind::NotADirectory));
        }
        stack.push(fd);
    }
    // The path ended in `.`, `..` or a link to a directory path that did.
    top(&stack)?.try_clone()
}

/// The non-empty components of a path, as bytes.
fn components(path: &[u8]) -> Vec<Vec<u8>> {
    path.split(|b| *b == b'/')
        .filter(|c| !c.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn top(stack: &[OwnedFd]) -> io::Result<&OwnedFd> {
    stack
        .last()
        .ok_or_else(|| io::Error::other("the walk lost its root"))
}
