//! What a derivation read below a root, each path with what it looked like then, and whether it
//! still looks the same: how facts derived from files are known to be still true without
//! deriving them again.
//!
//! A file on a real file system is told by its identity (device, inode, size, modification and
//! change times to the nanosecond): a rewrite, a replacement or a touch changes one of them. A
//! procfs or sysfs file has a `stat` that says nothing (no blocks, a size of 0 or 4096, the time
//! its inode was made), so such a file — any file without blocks — is told by its bytes, read
//! again. `/proc/kallsyms` is the exception: it is megabytes the kernel generates on every read,
//! and what it adds to the boot's own symbols are those of the loaded modules, which
//! `/proc/modules` lists with their addresses and sizes; it is told by `/proc/modules`, and
//! counts as changed when that was not read. A path looked for and not found, a directory's
//! names, a link's target and a read that failed are kept too: a file that appears, a module
//! that is added, a link that moves, all count as changes; a read that failed counts as changed
//! every time.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::reader::{self, FileKind, LastLink};
use super::root::Root;

/// How long after its last change a file's identity is trusted: file times move in clock ticks,
/// so a file changed again within the tick it was read in keeps its times. A file changed more
/// recently than this when it was read counts as changed at the next look (like git's "racily
/// clean" entries), and is looked at again then, by when it has settled.
const SETTLE: Duration = Duration::from_secs(2);

/// The file whose bytes stand for `/proc/kallsyms`'s when kallsyms is generated.
const LOADED_MODULES: &str = "proc/modules";

/// The metadata that changes when a file on a real file system is changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    fn of(m: &Metadata) -> Self {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// Whether the file had last changed at least [`SETTLE`] before `read_at` (a change time
    /// after it has not).
    fn settled_at(&self, read_at: SystemTime) -> bool {
        let (secs, nanos) = self.ctime;
        let changed = u64::try_from(secs)
            .ok()
            .map(|s| SystemTime::UNIX_EPOCH + Duration::new(s, u32::try_from(nanos).unwrap_or(0)));
        changed
            .and_then(|c| read_at.duration_since(c).ok())
            .is_some_and(|age| age >= SETTLE)
    }
}

/// What one path looked like when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A file on a real file system, and when it was read.
    File(Identity, SystemTime),
    /// A file whose `stat` says nothing (procfs, sysfs): its bytes, read as `kind`.
    Bytes { kind: FileKind, bytes: Vec<u8> },
    /// Generated kallsyms: told by [`LOADED_MODULES`].
    ByLoadedModules,
    /// Looked for (to read, list or test), and not there.
    Absent,
    /// Whether it existed, for a look that opened nothing.
    Exists(bool),
    /// Whether it was a regular file.
    IsFile(bool),
    /// Whether it was a directory.
    IsDir(bool),
    /// A directory's names, sorted (`None`: no directory there).
    Listing(Option<Vec<String>>),
    /// A symlink's target (`None`: not a link).
    Link(Option<String>),
    /// A read that failed: its facts say so, and are derived again.
    Failed,
}

impl Seen {
    /// A file read whole: `bytes` are what was read, `meta` the descriptor's.
    pub fn read(kind: FileKind, meta: &Metadata, bytes: &[u8]) -> Self {
        Self::opened(kind, meta).unwrap_or_else(|| Seen::Bytes {
            kind,
            bytes: bytes.to_vec(),
        })
    }

    /// A file opened to be read piece by piece; `None` when only its bytes would tell it and
    /// they are not at hand (counted as changed: [`Seen::Failed`]).
    pub fn opened(kind: FileKind, meta: &Metadata) -> Option<Self> {
        if meta.blocks() > 0 {
            Some(Seen::File(Identity::of(meta), SystemTime::now()))
        } else if kind == FileKind::Kallsyms {
            Some(Seen::ByLoadedModules)
        } else {
            None
        }
    }
}

/// Every path a derivation read, by path relative to the root, with what it was then (the
/// first look, when a path was looked at twice: a change between the two is a change).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs(BTreeMap<PathBuf, Seen>);

impl Inputs {
    /// Keeps what `rel` was, unless it was seen before.
    pub fn note(&mut self, rel: &Path, seen: Seen) {
        self.0.entry(rel.to_owned()).or_insert(seen);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &Seen)> {
        self.0.iter()
    }

    /// The same inputs as if read `later` than they were (a test's files are all fresh).
    #[cfg(test)]
    pub fn read_later(mut self, later: Duration) -> Self {
        for seen in self.0.values_mut() {
            if let Seen::File(_, at) = seen {
                *at += later;
            }
        }
        self
    }

    /// The first path below `root` that is not as it was, or `None` when every one is. `root`
    /// must not be recording (a look would land in its record).
    pub fn changed(&self, root: &Root) -> Option<&Path> {
        self.0
            .iter()
            .find(|(rel, seen)| !self.same(root, rel, seen))
            .map(|(rel, _)| rel.as_path())
    }

    fn same(&self, root: &Root, rel: &Path, seen: &Seen) -> bool {
        match seen {
            Seen::File(id, read_at) => {
                id.settled_at(*read_at) && identity_below(root, rel).is_some_and(|now| now == *id)
            }
            Seen::Bytes { kind, bytes } => matches!(
                root.read_file(rel, *kind),
                Ok(Some(now)) if now.meta.blocks() == 0 && now.bytes == *bytes
            ),
            Seen::ByLoadedModules => self.0.contains_key(Path::new(LOADED_MODULES)),
            Seen::Absent => matches!(
                reader::resolve_below(root.handle(), rel, LastLink::Follow),
                Err(e) if reader::is_absent(&e)
            ),
            Seen::Exists(was) => root.exists(rel) == *was,
            Seen::IsFile(was) => root.is_file(rel) == *was,
            Seen::IsDir(was) => root.is_dir(rel) == *was,
            Seen::Listing(names) => matches!(root.list_dir(rel), Ok(now) if now == *names),
            Seen::Link(target) => matches!(root.read_link(rel), Ok(now) if now == *target),
            Seen::Failed => false,
        }
    }
}

/// The identity of the file `rel` names below the root now (symlinks followed inside it), by
/// `fstat` of a descriptor that opens nothing; `None` when it cannot be had.
fn identity_below(root: &Root, rel: &Path) -> Option<Identity> {
    let fd = reader::resolve_below(root.handle(), rel, LastLink::Follow).ok()?;
    let meta = std::fs::File::from(fd).metadata().ok()?;
    (meta.blocks() > 0).then(|| Identity::of(&meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        (dir, root)
    }

    fn write(root: &Root, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// What a recording root saw of one read of `rel`, then `change`, then whether it is seen.
    fn seen_after(setup: &str, read: impl Fn(&Root), change: impl Fn(&Root)) -> Option<PathBuf> {
        let (_dir, root) = tree();
        write(&root, "etc/a.conf", setup);
        let recording = root.recording();
        read(&recording);
        let fresh = recording.record().inputs;
        assert!(!fresh.is_empty());
        if fresh.iter().any(|(_, s)| matches!(s, Seen::File(..))) {
            // Just written: not yet to be told by its times.
            assert!(fresh.changed(&root).is_some(), "{fresh:?}");
        }
        let inputs = fresh.read_later(SETTLE);
        assert_eq!(inputs.changed(&root), None, "{inputs:?}");
        // Past the file system's clock tick, as a change after a settled read is.
        std::thread::sleep(Duration::from_millis(30));
        change(&root);
        inputs.changed(&root).map(Path::to_path_buf)
    }

    #[test]
    fn a_rewritten_or_replaced_file_is_a_change_an_untouched_one_is_not() {
        let read = |r: &Root| {
            r.read_text("etc/a.conf").unwrap();
        };
        let rewritten = seen_after("x=1\n", read, |r| write(r, "etc/a.conf", "x=2\n"));
        assert_eq!(rewritten.as_deref(), Some(Path::new("etc/a.conf")));
        let replaced = seen_after("x=1\n", read, |r| {
            write(r, "etc/b.conf", "x=1\n");
            fs::rename(r.join("etc/b.conf"), r.join("etc/a.conf")).unwrap();
        });
        assert!(replaced.is_some());
        let untouched = seen_after("x=1\n", read, |r| write(r, "etc/other", "y"));
        assert_eq!(untouched, None);
    }

    #[test]
    fn a_file_that_appears_a_new_name_and_a_moved_link_are_changes() {
        let missing = |r: &Root| {
            assert!(r.read_text("etc/cufile.json").unwrap().is_none());
        };
        let appeared = seen_after("", missing, |r| write(r, "etc/cufile.json", "{}"));
        assert_eq!(appeared.as_deref(), Some(Path::new("etc/cufile.json")));
        let listed = |r: &Root| {
            r.list_dir("etc").unwrap();
        };
        assert!(seen_after("", listed, |r| write(r, "etc/new", "")).is_some());
        let looked = |r: &Root| {
            assert!(!r.exists("etc/gone"));
        };
        assert!(seen_after("", looked, |r| write(r, "etc/gone", "")).is_some());
        let linked = |r: &Root| {
            r.read_link("etc/link").unwrap();
        };
        let moved = seen_after("", linked, |r| {
            std::os::unix::fs::symlink("a.conf", r.join("etc/link")).unwrap()
        });
        assert!(moved.is_some());
    }

    #[test]
    fn a_file_without_blocks_is_told_by_its_bytes() {
        // An empty file has no blocks, like every procfs and sysfs file.
        let read = |r: &Root| {
            r.read_text("etc/a.conf").unwrap();
        };
        let (_dir, root) = tree();
        write(&root, "sys/module/rpcrdma/srcversion", "");
        let recording = root.recording();
        recording
            .read_text("sys/module/rpcrdma/srcversion")
            .unwrap();
        let inputs = recording.record().inputs;
        let rel = Path::new("sys/module/rpcrdma/srcversion");
        assert!(matches!(inputs.0[rel], Seen::Bytes { .. }), "{inputs:?}");
        // Written again with the same (no) bytes: the same; with others: a change.
        write(&root, "sys/module/rpcrdma/srcversion", "");
        assert_eq!(inputs.changed(&root), None);
        write(&root, "sys/module/rpcrdma/srcversion", "A1B2\n");
        assert_eq!(inputs.changed(&root), Some(rel));
        assert!(seen_after("", read, |_| ()).is_none());
    }

    #[test]
    fn generated_kallsyms_stands_on_proc_modules_and_a_failed_read_is_always_a_change() {
        let mut inputs = Inputs::default();
        let (_dir, root) = tree();
        inputs.note(Path::new("proc/kallsyms"), Seen::ByLoadedModules);
        assert_eq!(inputs.changed(&root), Some(Path::new("proc/kallsyms")));
        write(&root, LOADED_MODULES, "");
        inputs.note(
            Path::new(LOADED_MODULES),
            Seen::Bytes {
                kind: FileKind::Text,
                bytes: Vec::new(),
            },
        );
        assert_eq!(inputs.changed(&root), None);
        inputs.note(Path::new("etc/locked"), Seen::Failed);
        assert_eq!(inputs.changed(&root), Some(Path::new("etc/locked")));
    }
}
