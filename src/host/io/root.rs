//! The root every host path is resolved against, and the record of what was read below it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::escape::escape_control;
use crate::host::io::context::{NodeContext, RootKind};
use crate::host::io::error::HostError;
use crate::host::io::file_identity::FileIdentity;
use crate::host::io::inputs::{Inputs, Seen};
use crate::host::io::lines;
use crate::host::io::reader::{self, LastLink, RootDir};
pub use crate::host::io::reader::{FileKind, FileRead};

/// The directory every host path is resolved against. A root made [`recording`](Root::recording)
/// also keeps a [`Record`] of everything read through it (clones share it), which is how
/// `collect` knows exactly what doctor read.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
    /// `dir`, opened once for every root made from this one ([`RootDir`]).
    handle: Arc<RootDir>,
    record: Option<Arc<Mutex<Record>>>,
    /// The record is for a bundle ([`Root::recording`]), not only for [`Inputs`].
    bundle: bool,
    /// What `stat` and `readlink` answered through a [`remembering`](Root::remembering) root.
    looked: Option<Arc<Mutex<Looked>>>,
    /// What the run decided about the node, once ([`NodeContext`]).
    context: Arc<NodeContext>,
}

/// What a remembering root was told about paths below it, by path relative to it: keyed by
/// the path's bytes (as [`Root::rel`] writes it) with foldhash, not by `Path`'s hash of each
/// component with SipHash (a twentieth of a warm check's instructions hashed paths).
#[derive(Debug, Default)]
struct Looked {
    metadata: Table<std::fs::Metadata>,
    links: Table<String>,
    present: Table<bool>,
}

type Table<T> = HashMap<std::ffi::OsString, Option<T>, foldhash::fast::RandomState>;

impl PartialEq for Root {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir
    }
}

impl Eq for Root {}

/// What was read below a root, by path relative to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Files whose contents were read.
    pub files: BTreeSet<PathBuf>,
    /// Paths whose existence (or kind: a file, a directory) was looked at, and were there.
    pub present: BTreeSet<PathBuf>,
    /// Directories that were listed, with the names they held.
    pub listed: BTreeMap<PathBuf, Vec<String>>,
    /// Every path looked at, with what it was ([`Inputs`]): whether facts derived from them
    /// still hold.
    pub inputs: Inputs,
}

impl Root {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        // Whether `dir` is the machine is decided once, here, and carried by the context.
        let context = Arc::new(NodeContext::of_kind(RootKind::of(&dir)));
        Root {
            handle: Arc::new(RootDir::new(dir.clone())),
            dir,
            record: None,
            bundle: false,
            looked: None,
            context,
        }
    }

    /// The same root, carrying what the run decided about the node (from this root's own
    /// context, [`NodeContext::decide`], so that its kind is kept).
    pub fn with_context(self, context: NodeContext) -> Self {
        Root {
            context: Arc::new(context),
            ..self
        }
    }

    /// What the run decided about the node.
    pub fn context(&self) -> &NodeContext {
        &self.context
    }

    /// The same root, keeping a record of what is read through it for a bundle (`collect`):
    /// caches are bypassed, so every file the facts come from is really read.
    pub fn recording(&self) -> Self {
        Root {
            bundle: true,
            ..self.watching()
        }
    }

    /// The same root, keeping a record of what is looked at through it, so that facts derived
    /// from it can be known to still hold ([`Record::inputs`]); caches serve it as usual.
    pub fn watching(&self) -> Self {
        Root {
            dir: self.dir.clone(),
            handle: self.handle.clone(),
            record: Some(Arc::new(Mutex::new(Record::default()))),
            bundle: false,
            looked: self.looked.clone(),
            context: self.context.clone(),
        }
    }

    /// The same root, answering [`metadata`](Root::metadata), [`identity`](Root::identity),
    /// [`exists`](Root::exists), [`is_file`](Root::is_file), [`is_dir`](Root::is_dir) and
    /// [`read_link`](Root::read_link) for a path from what it was told the first time (clones
    /// share what is remembered): one read of the host's facts asks about the same module file
    /// several times, and each time costs three system calls. Only for one pass over the
    /// facts: a file that changes meanwhile is seen as it was at the first look, and the cache
    /// keys facts by the identity of what is read, never by what is remembered. Contents are
    /// never remembered.
    pub fn remembering(&self) -> Self {
        Root {
            looked: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// What has been read so far through a recording root (empty for any other).
    pub fn record(&self) -> Record {
        self.record
            .as_ref()
            .and_then(|r| r.lock().ok().map(|r| r.clone()))
            .unwrap_or_default()
    }

    fn note(&self, f: impl FnOnce(&mut Record)) {
        if let Some(Ok(mut r)) = self.record.as_ref().map(|r| r.lock()) {
            f(&mut r);
        }
    }

    fn rel(rel: &Path) -> PathBuf {
        rel.strip_prefix("/").unwrap_or(rel).to_owned()
    }

    /// Keeps what `rel` was in the record's [`Inputs`] (`seen` is only asked for when recording).
    fn saw(&self, rel: &Path, seen: impl FnOnce() -> Seen) {
        self.note(|r| r.inputs.note(&Self::rel(rel), seen()));
    }

    /// The inputs recorded so far by a recording root (empty for any other).
    pub fn inputs(&self) -> Inputs {
        self.record
            .as_ref()
            .and_then(|r| r.lock().ok().map(|r| r.inputs.clone()))
            .unwrap_or_default()
    }

    /// The machine itself.
    pub fn host() -> Self {
        Root::new("/")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory, opened once, that every path below the root is resolved from.
    pub(crate) fn handle(&self) -> &RootDir {
        &self.handle
    }

    /// `rel` below the root; a leading `/` in `rel` is ignored, so host paths can be passed as-is.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.dir.join(rel)
    }

    /// The path below the root that a host path joined with [`Root::join`] stands for; `None`
    /// when it is not below the root.
    pub fn rel_of(&self, path: &Path) -> Option<PathBuf> {
        path.strip_prefix(&self.dir).ok().map(Path::to_path_buf)
    }

    /// Reads a file as `kind` (which sets its size cap), resolved inside the root, together
    /// with the metadata of the descriptor it was read from; `Ok(None)` when it does not exist.
    /// Every other read of [`Root`] goes through this one or [`Root::read_file_into`].
    pub fn read_file(
        &self,
        rel: impl AsRef<Path>,
        kind: FileKind,
    ) -> Result<Option<FileRead>, HostError> {
        self.read_file_into(rel, kind, Vec::new())
    }

    /// [`Root::read_file`] into `spare`, whose bytes are dropped and whose capacity is kept:
    /// for a reader that reads the same large file again and again (the NRI plugin, after each
    /// mount event), the last read's bytes.
    pub fn read_file_into(
        &self,
        rel: impl AsRef<Path>,
        kind: FileKind,
        spare: Vec<u8>,
    ) -> Result<Option<FileRead>, HostError> {
        let rel = rel.as_ref();
        let read = reader::read_below(&self.handle, rel, &self.join(rel), kind, spare);
        match &read {
            Ok(Some(read)) => {
                tracing::trace!(
                    "read {} ({} bytes)",
                    escape_control(&self.join(rel).display().to_string()),
                    read.bytes.len()
                );
                self.note(|r| {
                    r.files.insert(Self::rel(rel));
                });
                self.saw(rel, || {
                    Seen::read(&self.join(rel), kind, &read.meta, &read.bytes)
                });
            }
            Ok(None) => {
                tracing::trace!(
                    "looked for {}: not there",
                    escape_control(&self.join(rel).display().to_string())
                );
                self.saw(rel, || Seen::Absent)
            }
            Err(_) => self.saw(rel, || Seen::Failed),
        }
        read
    }

    /// Opens a regular file below the root, resolved inside it, for a reader that reads it piece
    /// by piece; recorded like a read. `Ok(None)` when it does not exist.
    pub fn open_file(
        &self,
        rel: impl AsRef<Path>,
        kind: FileKind,
    ) -> Result<Option<std::fs::File>, HostError> {
        let rel = rel.as_ref();
        let file = reader::open_below(&self.handle, rel, &self.join(rel), kind);
        match &file {
            Ok(Some(file)) => {
                tracing::trace!(
                    "opened {}",
                    escape_control(&self.join(rel).display().to_string())
                );
                self.note(|r| {
                    r.files.insert(Self::rel(rel));
                });
                self.saw(rel, || {
                    file.metadata()
                        .ok()
                        .and_then(|m| Seen::opened(&self.join(rel), kind, &m))
                        .unwrap_or(Seen::Failed)
                });
            }
            Ok(None) => self.saw(rel, || Seen::Absent),
            Err(_) => self.saw(rel, || Seen::Failed),
        }
        file
    }

    /// Opens a regular file below the root, resolved inside it, to be read line by line (see
    /// [`lines`]); recorded like a read. Its size cap follows from its name ([`FileKind::of`]).
    /// `Ok(None)` when it does not exist.
    pub fn read_lines(&self, rel: impl AsRef<Path>) -> Result<Option<lines::Lines>, HostError> {
        let rel = rel.as_ref();
        let kind = FileKind::of(rel);
        Ok(self
            .open_file(rel, kind)?
            .map(|file| lines::Lines::new(file, &self.join(rel), kind)))
    }

    /// Reads a text file; `Ok(None)` when it does not exist. Its size cap follows from its name
    /// ([`FileKind::of`]).
    pub fn read_text(&self, rel: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        let rel = rel.as_ref();
        match self.read_bytes(rel)? {
            None => Ok(None),
            Some(bytes) => match String::from_utf8(bytes) {
                Ok(s) => Ok(Some(s)),
                Err(_) => Err(HostError::NotText {
                    path: self.join(rel),
                }),
            },
        }
    }

    /// Reads a text file that may contain stray non-UTF-8 bytes (kernel logs, kallsyms of odd
    /// modules); they are replaced rather than refused.
    pub fn read_text_lossy(&self, rel: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        Ok(self
            .read_bytes(rel)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Reads a file's bytes; `Ok(None)` when it does not exist. Its size cap follows from its
    /// name ([`FileKind::of`]).
    pub fn read_bytes(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>, HostError> {
        let rel = rel.as_ref();
        Ok(self.read_file(rel, FileKind::of(rel))?.map(|f| f.bytes))
    }

    /// Whether a path exists below the root (files, directories, device nodes, dangling links
    /// alike). Nothing is opened.
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        let there = self
            .remembered(
                rel.as_ref(),
                |l| &mut l.present,
                || {
                    Ok(Some(
                        reader::resolve_below(&self.handle, rel.as_ref(), LastLink::Keep).is_ok(),
                    ))
                },
            )
            .is_ok_and(|t| t == Some(true));
        if there {
            self.was_there(rel.as_ref());
        }
        self.saw(rel.as_ref(), || Seen::Exists(there));
        there
    }

    /// Notes for a bundle that `rel` was there, so that it goes in even when nobody reads it.
    fn was_there(&self, rel: &Path) {
        self.note(|r| {
            r.present.insert(Self::rel(rel));
        });
    }

    /// Whether a path below the root is a regular file (after following symlinks inside the
    /// root). Nothing is opened.
    pub fn is_file(&self, rel: impl AsRef<Path>) -> bool {
        let file = self.stat(rel.as_ref()).is_some_and(|m| m.is_file());
        if file {
            self.was_there(rel.as_ref());
        }
        self.saw(rel.as_ref(), || Seen::IsFile(file));
        file
    }

    /// Whether a path below the root is a directory (after following symlinks inside the
    /// root). Nothing is opened.
    pub fn is_dir(&self, rel: impl AsRef<Path>) -> bool {
        let dir = self.stat(rel.as_ref()).is_some_and(|m| m.is_dir());
        if dir {
            self.was_there(rel.as_ref());
        }
        self.saw(rel.as_ref(), || Seen::IsDir(dir));
        dir
    }

    fn stat(&self, rel: &Path) -> Option<std::fs::Metadata> {
        self.remembered(rel, |l| &mut l.metadata, || self.stat_below(rel))
            .ok()
            .flatten()
    }

    /// The metadata of a path below the root (after following symlinks inside the root), as
    /// `stat` gives it; `Ok(None)` when it does not exist. Nothing is opened for reading and
    /// nothing goes into a bundle (what a `stat` answers is not a file's contents), but the
    /// record's [`Inputs`] keep the file's identity: facts taken from a cache by this identity
    /// hold exactly as long as it does.
    pub fn metadata(&self, rel: impl AsRef<Path>) -> Result<Option<std::fs::Metadata>, HostError> {
        let rel = rel.as_ref();
        let meta = self.remembered(rel, |l| &mut l.metadata, || self.stat_below(rel));
        self.saw(rel, || match &meta {
            Ok(Some(m)) => {
                Seen::opened(&self.join(rel), FileKind::of(rel), m).unwrap_or(Seen::Failed)
            }
            Ok(None) => Seen::Absent,
            Err(_) => Seen::Failed,
        });
        meta
    }

    /// What a remembering root was told of `rel` the first time (`ask` asks); an error is not
    /// remembered.
    fn remembered<T: Clone>(
        &self,
        rel: &Path,
        table: impl Fn(&mut Looked) -> &mut Table<T>,
        ask: impl FnOnce() -> Result<Option<T>, HostError>,
    ) -> Result<Option<T>, HostError> {
        let Some(looked) = &self.looked else {
            return ask();
        };
        let key = Self::rel(rel).into_os_string();
        if let Some(known) = looked
            .lock()
            .ok()
            .and_then(|mut l| table(&mut l).get(&key).cloned())
        {
            return Ok(known);
        }
        let answer = ask()?;
        if let Ok(mut l) = looked.lock() {
            table(&mut l).insert(key, answer.clone());
        }
        Ok(answer)
    }

    fn stat_below(&self, rel: &Path) -> Result<Option<std::fs::Metadata>, HostError> {
        self.resolve(rel, LastLink::Follow).and_then(|fd| {
            fd.map(|fd| {
                std::fs::File::from(fd)
                    .metadata()
                    .map_err(|source| HostError::Read {
                        path: self.join(rel),
                        source,
                    })
            })
            .transpose()
        })
    }

    /// The identity of the regular file at `rel` now (symlinks followed inside the root), from
    /// its [`metadata`](Root::metadata) alone: nothing is opened for reading. `None` when it is
    /// absent, not a regular file, or cannot be looked at.
    pub fn identity(&self, rel: impl AsRef<Path>) -> Option<FileIdentity> {
        let rel = rel.as_ref();
        let meta = self.metadata(rel).ok()??;
        meta.is_file()
            .then(|| FileIdentity::of_meta(&self.join(rel), &meta))
    }

    /// `rel` resolved inside the root to an `O_PATH` descriptor; `Ok(None)` when absent.
    fn resolve(
        &self,
        rel: &Path,
        last: LastLink,
    ) -> Result<Option<std::os::fd::OwnedFd>, HostError> {
        match reader::resolve_below(&self.handle, rel, last) {
            Ok(fd) => Ok(Some(fd)),
            Err(e) if reader::is_absent(&e) => Ok(None),
            Err(source) => Err(HostError::Read {
                path: self.join(rel),
                source,
            }),
        }
    }

    /// Whether this root reads for a bundle ([`recording`](Root::recording), `collect`):
    /// every file it is asked for must really be read through it, so caches are not used.
    /// A [`watching`](Root::watching) root only notes what it looked at, and caches serve it.
    pub fn is_bundling(&self) -> bool {
        self.record.is_some() && self.bundle
    }

    /// The target a symlink below the root names, as written (`Ok(None)` when the path is not
    /// a symlink or does not exist). Only the link is read; its target is not resolved.
    pub fn read_link(&self, rel: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        let rel = rel.as_ref();
        let target = self.remembered(rel, |l| &mut l.links, || self.link_target(rel));
        self.saw(rel, || match &target {
            Ok(t) => Seen::Link(t.clone()),
            Err(_) => Seen::Failed,
        });
        target
    }

    fn link_target(&self, rel: &Path) -> Result<Option<String>, HostError> {
        let Some(fd) = self.resolve(rel, LastLink::Keep)? else {
            return Ok(None);
        };
        match rustix::fs::readlinkat(&fd, "", Vec::new()) {
            Ok(target) => Ok(Some(target.to_string_lossy().into_owned())),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::INVAL) => Ok(None),
            Err(e) => Err(HostError::Read {
                path: self.join(rel),
                source: e.into(),
            }),
        }
    }

    /// The names in a directory, sorted; `Ok(None)` when the directory does not exist.
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<String>>, HostError> {
        self.list_dir_where(rel, |_| true)
    }

    /// The names in directory `rel` that `keep` accepts, for a reader that looks for a few
    /// names in a big directory (`dev`, a library directory). The inputs hold the whole listing
    /// (any change is a change); a bundle's record holds only the names kept, which is all the
    /// reader sees, so it replays the same without a placeholder for every other entry.
    pub fn list_dir_where(
        &self,
        rel: impl AsRef<Path>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Option<Vec<String>>, HostError> {
        let rel = rel.as_ref();
        let names = self.names_in(rel);
        self.saw(rel, || match &names {
            Ok(names) => Seen::Listing(names.clone()),
            Err(_) => Seen::Failed,
        });
        let names = names?;
        tracing::trace!(
            "listed {} ({})",
            escape_control(&self.join(rel).display().to_string()),
            names
                .as_ref()
                .map_or("not there".into(), |n| format!("{} entries", n.len()))
        );
        let kept = names.map(|n| n.into_iter().filter(|n| keep(n)).collect::<Vec<_>>());
        if let Some(kept) = &kept {
            // Several readers may list one directory: the record keeps what any of them saw.
            self.note(|r| {
                let listed = r.listed.entry(Self::rel(rel)).or_default();
                listed.extend(kept.iter().cloned());
                listed.sort();
                listed.dedup();
            });
        }
        Ok(kept)
    }

    fn names_in(&self, rel: &Path) -> Result<Option<Vec<String>>, HostError> {
        let path = self.join(rel);
        let list_error = |source: io::Error| HostError::List {
            path: path.clone(),
            source,
        };
        // Opened with O_DIRECTORY, in the resolution itself: that never reaches a device's
        // open, it fails first on anything but a directory.
        let dir = match reader::open_dir_below(&self.handle, rel) {
            Ok(dir) => dir,
            // Absent, or not a directory (`ENOTDIR`).
            Err(e) if reader::is_absent(&e) => return Ok(None),
            Err(e) => return Err(list_error(e)),
        };
        let entries = rustix::fs::Dir::new(dir).map_err(|e| list_error(e.into()))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| list_error(e.into()))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(String::from_utf8_lossy(name).into_owned());
            }
        }
        names.sort();
        Ok(Some(names))
    }
}

/// Reads the first line of a sysfs-style file, trimmed; `None` when absent or empty. A value
/// that is not UTF-8 text is that one fact unreadable: it is `None` too, with a warning, and
/// does not stop whatever else is being read.
pub fn read_first_line(root: &Root, rel: &str) -> Result<Option<String>, HostError> {
    let text = match root.read_text(rel) {
        Ok(text) => text,
        Err(e @ HostError::NotText { .. }) => {
            tracing::warn!("{e}: taking it as unreadable");
            None
        }
        Err(e) => return Err(e),
    };
    Ok(text
        .and_then(|s| s.lines().next().map(|l| l.trim().to_string()))
        .filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_told_by_where_the_path_leads_not_how_it_is_spelt() {
        let tree = tempfile::tempdir().unwrap();
        assert!(!Root::new(tree.path()).context().is_machine());
        // As many `..` as the tree is deep lead back to `/`.
        let mut up = tree.path().to_path_buf();
        for _ in 1..tree.path().components().count() {
            up.push("..");
        }
        assert_ne!(up, Path::new("/"));
        assert!(Root::new(&up).context().is_machine(), "{}", up.display());
        assert!(Root::new(&up).recording().context().is_machine());
        assert!(Root::host().context().is_machine());
        assert!(!Root::new(tree.path().join("missing/.."))
            .context()
            .is_machine());
    }

    #[test]
    fn only_directories_are_listed_and_a_fifo_is_not_waited_on() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("d/e")).unwrap();
        std::fs::write(tree.path().join("d/f"), b"").unwrap();
        std::os::unix::fs::symlink("/d", tree.path().join("abs")).unwrap();
        nix::unistd::mkfifo(&tree.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let root = Root::new(tree.path());
        let names = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(root.list_dir("d").unwrap(), names(&["e", "f"]));
        // An absolute link is followed inside the root.
        assert_eq!(root.list_dir("abs").unwrap(), names(&["e", "f"]));
        assert_eq!(root.list_dir("").unwrap(), names(&["abs", "d", "fifo"]));
        for not_a_dir in ["d/f", "fifo", "absent", "d/f/g"] {
            assert_eq!(root.list_dir(not_a_dir).unwrap(), None, "{not_a_dir}");
        }
    }

    #[test]
    fn a_remembering_root_answers_what_it_was_told_first_and_reads_afresh() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(tree.path().join("m.ko"), b"one").unwrap();
        std::os::unix::fs::symlink("m.ko", tree.path().join("link")).unwrap();
        let plain = Root::new(tree.path());
        let pass = plain.remembering();
        let first = pass.identity("m.ko").unwrap();
        assert_eq!(first.size, 3);
        assert!(!pass.exists("absent"));
        assert_eq!(pass.read_link("link").unwrap().as_deref(), Some("m.ko"));

        std::fs::write(tree.path().join("m.ko"), b"longer").unwrap();
        std::fs::write(tree.path().join("absent"), b"").unwrap();
        std::fs::remove_file(tree.path().join("link")).unwrap();
        // The pass (and its clones) keep what they were told...
        let copy = pass.clone();
        assert_eq!(copy.metadata("m.ko").unwrap().unwrap().len(), 3);
        assert_eq!(pass.identity("/m.ko"), Some(first));
        assert!(!pass.exists("absent"));
        assert_eq!(pass.read_link("link").unwrap().as_deref(), Some("m.ko"));
        // ...but contents are read afresh, and any other root looks again.
        assert_eq!(pass.read_bytes("m.ko").unwrap().unwrap(), b"longer");
        assert_eq!(plain.identity("m.ko").unwrap().size, 6);
        assert!(plain.exists("absent"));
        assert_eq!(plain.read_link("link").unwrap(), None);
        assert_eq!(plain.remembering().identity("m.ko").unwrap().size, 6);
    }
}
