//! The one way nfs-gds opens a file to read it: resolved inside the root, checked on the
//! descriptor, read up to a cap.
//!
//! Every read goes the same three steps. First the path is resolved to an `O_PATH` descriptor,
//! which opens nothing: no FIFO blocks, no device driver's `open` runs (a watchdog is not armed,
//! a tape does not rewind). Below a root other than `/` (a fixture tree, an unpacked `collect`
//! bundle) the kernel resolves it with `openat2(RESOLVE_IN_ROOT)`, so symlinks and `..` stay
//! inside the root; where `openat2` is missing (Linux before 5.6, some seccomp filters) the same
//! walk is done component by component in [`walk_in_root`]. Then that descriptor is `fstat`ed
//! and anything but a regular file is refused. procfs and sysfs files are regular files whose
//! size says nothing (0 or 4096), so for them the size in `fstat` is never trusted; files of
//! the kinds that live on a disk (modules, indexes, images, configuration) are read up to that
//! size, with no further read to learn that the end has come. Last, the file itself is opened
//! through `/proc/self/fd` (the very inode that was checked: whether that is procfs is asked
//! once a process), and at most the cap of its [`FileKind`] is read, plus one byte to tell a
//! file that is too large.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};

use super::error::HostError;
pub use super::file_kind::FileKind;
use super::walk_in_root::walk_in_root;
pub use super::walk_in_root::LastLink;

/// A file read whole, with the metadata of the very descriptor its bytes came from (so a check
/// of owner and mode applies to exactly what is parsed).
#[derive(Debug)]
pub struct FileRead {
    /// The path as the host sees it (with the root), for messages.
    pub path: PathBuf,
    pub meta: Metadata,
    pub bytes: Vec<u8>,
}

/// Reads the file `rel` names below `root`, resolved inside it; `Ok(None)` when it does not
/// exist. `shown` names it in errors.
///
/// `spare` is a buffer to read into (its bytes are dropped, its capacity kept): a reader that
/// reads the same large file again and again passes the last read's, and allocates nothing.
pub(crate) fn read_below(
    root: &RootDir,
    rel: &Path,
    shown: &Path,
    kind: FileKind,
    spare: Vec<u8>,
) -> Result<Option<FileRead>, HostError> {
    let fd = match resolve_below(root, rel, LastLink::Follow) {
        Ok(fd) => fd,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(source) => return Err(read_error(shown, source)),
    };
    read_checked(fd, shown, kind, spare).map(Some)
}

/// Opens the regular file `rel` names below `root`, resolved inside it, for reads the caller
/// makes itself (depmod's binary indexes, read node by node); `Ok(None)` when it does not exist.
pub(crate) fn open_below(
    root: &RootDir,
    rel: &Path,
    shown: &Path,
    kind: FileKind,
) -> Result<Option<File>, HostError> {
    let fd = match resolve_below(root, rel, LastLink::Follow) {
        Ok(fd) => fd,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(source) => return Err(read_error(shown, source)),
    };
    open_checked(fd, shown, kind).map(|(file, _)| Some(file))
}

/// Reads the file `name` in the directory `dir` (one name, never a symbolic link followed);
/// `Ok(None)` when it does not exist. `shown` names it in errors.
pub(crate) fn read_at(
    dir: &OwnedFd,
    name: &str,
    shown: &Path,
    kind: FileKind,
) -> Result<Option<FileRead>, HostError> {
    let fd = match rustix::fs::openat(dir, name, path_flags(LastLink::Keep), Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if is_absent(&e.into()) => return Ok(None),
        Err(e) => return Err(read_error(shown, e.into())),
    };
    read_checked(fd, shown, kind, Vec::new()).map(Some)
}

/// Reads a file named on the command line (`inspect-module PATH`, `--config FILE`): the path is
/// taken as given (relative to the working directory) and symlinks are followed, but it is held
/// to the same rules as any host file: a regular file, no larger than the cap of `kind`.
/// `Ok(None)` when it does not exist.
pub fn read_named(path: &Path, kind: FileKind) -> Result<Option<FileRead>, HostError> {
    let fd = match rustix::fs::openat(CWD, path, path_flags(LastLink::Follow), Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if is_absent(&e.into()) => return Ok(None),
        Err(e) => return Err(read_error(path, e.into())),
    };
    read_checked(fd, path, kind, Vec::new()).map(Some)
}

/// Opens a file named on the command line under the rules of [`read_named`], for a reader
/// that reads it piece by piece; with the metadata of the descriptor opened.
pub fn open_named(path: &Path, kind: FileKind) -> Result<Option<(File, Metadata)>, HostError> {
    let fd = match rustix::fs::openat(CWD, path, path_flags(LastLink::Follow), Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if is_absent(&e.into()) => return Ok(None),
        Err(e) => return Err(read_error(path, e.into())),
    };
    open_checked(fd, path, kind).map(Some)
}

/// Reads a stream named on the command line (stdin, a pipe, a FIFO) to its end, held to the
/// cap of `kind`: an endless one is an error naming the cap, not a process that fills memory.
/// `shown` names it in errors.
pub fn read_stream(input: impl Read, shown: &Path, kind: FileKind) -> Result<Vec<u8>, HostError> {
    let mut bytes = Vec::new();
    input
        .take(kind.cap() + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| read_error(shown, source))?;
    if bytes.len() as u64 > kind.cap() {
        return Err(too_large(shown, kind));
    }
    Ok(bytes)
}

/// Reads a FIFO named on the command line with [`read_stream`]. It is opened without waiting for
/// a writer (`O_NONBLOCK`, then blocking reads): one with no writer reads as empty at once
/// instead of waiting forever; one with a writer (`/dev/stdin` of a pipe, `<(…)`) is read to
/// the writer's end.
pub fn read_fifo(path: &Path, kind: FileKind) -> Result<Vec<u8>, HostError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|source| read_error(path, source))?;
    let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| read_error(path, e.into()))?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)
        .map_err(|e| read_error(path, e.into()))?;
    read_stream(file, path, kind)
}

/// A root directory other than `/`, opened (`O_PATH`) at its first resolution and kept: every
/// path below it is then resolved from that descriptor, not by opening the directory again
/// (two system calls a read, a third of a warm check's below `--root`). The descriptor is the
/// directory the root named when it was first used, whatever is renamed over its path later.
/// A directory that cannot be opened is not kept: the next resolution tries again and says why.
#[derive(Debug)]
pub struct RootDir {
    path: PathBuf,
    fd: OnceLock<OwnedFd>,
}

impl RootDir {
    pub fn new(path: PathBuf) -> Self {
        RootDir {
            path,
            fd: OnceLock::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory's descriptor, opened on the first call.
    fn fd(&self) -> io::Result<BorrowedFd<'_>> {
        if let Some(fd) = self.fd.get() {
            return Ok(fd.as_fd());
        }
        let fd = rustix::fs::openat(
            CWD,
            &self.path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        // Another thread may have kept its own first: either is the same directory.
        Ok(self.fd.get_or_init(|| fd).as_fd())
    }
}

/// An `O_PATH` descriptor for `rel` below `root`. On `/` this is ordinary resolution; below
/// any other root, symlinks (absolute ones too) and `..` are resolved as if `root` were `/`.
pub(crate) fn resolve_below(root: &RootDir, rel: &Path, last: LastLink) -> io::Result<OwnedFd> {
    open_resolved(root, rel, path_flags(last), last)
}

/// The directory `rel` names below `root`, opened for listing in the same resolution: opening
/// with `O_DIRECTORY` never reaches a device's `open`, it fails first (`ENOTDIR`) on anything
/// but a directory, so no `O_PATH` step is needed.
pub(crate) fn open_dir_below(root: &RootDir, rel: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    open_resolved(root, rel, flags, LastLink::Follow)
}

/// `rel` below `root` opened with `flags`, resolved as [`resolve_below`] says; where the walk
/// of [`walk_in_root`] stands in for `openat2`, what it found is opened with `flags` after.
fn open_resolved(root: &RootDir, rel: &Path, flags: OFlags, last: LastLink) -> io::Result<OwnedFd> {
    let rel = rel.strip_prefix("/").unwrap_or(rel);
    if root.path() == Path::new("/") {
        let path = Path::new("/").join(rel);
        return Ok(rustix::fs::openat(CWD, &path, flags, Mode::empty())?);
    }
    let root = root.fd()?;
    if rel.as_os_str().is_empty() {
        return Ok(rustix::fs::openat(
            root,
            ".",
            (flags - OFlags::NOFOLLOW) | OFlags::DIRECTORY,
            Mode::empty(),
        )?);
    }
    let how = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..3 {
        match rustix::fs::openat2(root, rel, flags, Mode::empty(), how) {
            Ok(fd) => return Ok(fd),
            // A concurrent rename somewhere in the tree: the kernel asks to retry.
            Err(rustix::io::Errno::AGAIN) => continue,
            // No openat2 (before 5.6), or a filter that forbids it.
            Err(rustix::io::Errno::NOSYS)
            | Err(rustix::io::Errno::PERM)
            | Err(rustix::io::Errno::INVAL)
            | Err(rustix::io::Errno::TOOBIG) => break,
            Err(e) => return Err(e.into()),
        }
    }
    let found = walk_in_root(root, rel, last)?;
    if flags.contains(OFlags::PATH) {
        return Ok(found);
    }
    Ok(rustix::fs::openat(&found, ".", flags, Mode::empty())?)
}

fn path_flags(last: LastLink) -> OFlags {
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    match last {
        LastLink::Follow => flags,
        LastLink::Keep => flags | OFlags::NOFOLLOW,
    }
}

/// Checks what an `O_PATH` descriptor refers to and reads it, into `spare` (emptied first).
fn read_checked(
    fd: OwnedFd,
    shown: &Path,
    kind: FileKind,
    spare: Vec<u8>,
) -> Result<FileRead, HostError> {
    let (mut file, meta) = open_checked(fd, shown, kind)?;
    let cap = kind.cap();
    let mut bytes = spare;
    bytes.clear();
    bytes.reserve(meta.len().min(cap) as usize);
    if kind.size_is_true() && meta.len() > 0 {
        // The size `fstat` gave is read, and a short read goes on to the end: no read of
        // nothing to learn that the end has come (a file that grows meanwhile is read as it
        // was when it was checked, the size its identity records).
        file.by_ref()
            .take(meta.len())
            .read_to_end(&mut bytes)
            .map_err(|source| read_error(shown, source))?;
        if (bytes.len() as u64) < meta.len() {
            file.take(cap + 1 - bytes.len() as u64)
                .read_to_end(&mut bytes)
                .map_err(|source| read_error(shown, source))?;
        }
    } else {
        file.take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| read_error(shown, source))?;
    }
    if bytes.len() as u64 > cap {
        return Err(too_large(shown, kind));
    }
    Ok(FileRead {
        path: shown.to_owned(),
        meta,
        bytes,
    })
}

/// Opens for reading the regular file an `O_PATH` descriptor refers to, and nothing else.
fn open_checked(fd: OwnedFd, shown: &Path, kind: FileKind) -> Result<(File, Metadata), HostError> {
    let probe = File::from(fd);
    let meta = probe
        .metadata()
        .map_err(|source| read_error(shown, source))?;
    if let Some(what) = not_regular(&meta) {
        return Err(HostError::NotRegular {
            path: shown.to_owned(),
            what,
        });
    }
    if meta.len() > kind.cap() {
        return Err(too_large(shown, kind));
    }
    // The magic link names the inode just checked, whatever happened to the path since.
    let reopen = PathBuf::from(format!("/proc/self/fd/{}", probe.as_fd().as_raw_fd()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(&reopen)
        .map_err(|source| {
            let source = if source.kind() == io::ErrorKind::NotFound {
                io::Error::other("cannot reopen it safely: /proc is not mounted")
            } else {
                source
            };
            read_error(shown, source)
        })?;
    // Where `/proc/self/fd` is procfs, the magic link is the inode checked; anywhere else
    // (a `/proc` that is not procfs) what was opened is compared with it.
    if !proc_fd_is_procfs() {
        let opened = file
            .metadata()
            .map_err(|source| read_error(shown, source))?;
        if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
            return Err(read_error(
                shown,
                io::Error::other("it changed while it was being opened"),
            ));
        }
    }
    Ok((file, meta))
}

/// Whether `/proc/self/fd` is procfs, asked once a process (`statfs`).
fn proc_fd_is_procfs() -> bool {
    static PROCFS: OnceLock<bool> = OnceLock::new();
    *PROCFS.get_or_init(|| {
        rustix::fs::statfs("/proc/self/fd").is_ok_and(|s| s.f_type == rustix::fs::PROC_SUPER_MAGIC)
    })
}

/// What a file is when it is not a regular file, as an error says it.
fn not_regular(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else {
        Some("not a file")
    }
}

fn too_large(path: &Path, kind: FileKind) -> HostError {
    HostError::TooLarge {
        path: path.to_owned(),
        cap: kind.cap(),
        noun: kind.noun(),
    }
}

fn read_error(path: &Path, source: io::Error) -> HostError {
    HostError::Read {
        path: path.to_owned(),
        source,
    }
}

/// "Not there" in any of the ways the kernel says it: no such file, or a path component that is
/// not a directory.
pub(crate) fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Whether a path component is fit to be spliced into a host path as one name: not empty, no
/// `/`, not `.` or `..`, no NUL. Kernel releases read from a bundle go through it before they
/// name a directory.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && !name.contains('/')
        && !name.contains('\0')
        && !name.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A bundle below `dir/root` and a secret beside it, outside.
    struct Hostile {
        dir: tempfile::TempDir,
    }

    impl Hostile {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("root");
            for d in ["etc", "usr/lib", "sys/module/nvidia_fs", "dev", "proc"] {
                std::fs::create_dir_all(root.join(d)).unwrap();
            }
            std::fs::write(dir.path().join("secret"), "SECRET\n").unwrap();
            std::fs::write(root.join("usr/lib/os-release"), "ID=debian\n").unwrap();
            Hostile { dir }
        }
        fn root(&self) -> PathBuf {
            self.dir.path().join("root")
        }
        fn secret(&self) -> PathBuf {
            self.dir.path().join("secret")
        }
    }

    /// Both resolvers below a root: the kernel's `RESOLVE_IN_ROOT` and the user-space walk.
    fn both(root: &Path, rel: &str, last: LastLink) -> [io::Result<OwnedFd>; 2] {
        let fd = rustix::fs::openat(
            CWD,
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        [
            resolve_below(&RootDir::new(root.to_owned()), Path::new(rel), last),
            walk_in_root(fd.as_fd(), Path::new(rel), last),
        ]
    }

    fn content(fd: io::Result<OwnedFd>, kind: FileKind) -> Result<Option<String>, String> {
        match fd {
            Ok(fd) => read_checked(fd, Path::new("x"), kind, Vec::new())
                .map(|f| Some(String::from_utf8_lossy(&f.bytes).into_owned()))
                .map_err(|e| e.to_string()),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn symlinks_out_of_the_root_resolve_inside_it() {
        let h = Hostile::new();
        let root = h.root();
        symlink(h.secret(), root.join("sys/module/nvidia_fs/version")).unwrap();
        symlink("../../../../secret", root.join("etc/os-release")).unwrap();
        symlink("/etc/shadow", root.join("etc/shadow-link")).unwrap();
        for rel in [
            "sys/module/nvidia_fs/version",
            "etc/os-release",
            "etc/shadow-link",
            "../secret",
            "etc/../../secret",
        ] {
            for fd in both(&root, rel, LastLink::Follow) {
                let got = content(fd, FileKind::Text);
                assert!(
                    !format!("{got:?}").contains("SECRET") && !format!("{got:?}").contains("root:"),
                    "{rel}: {got:?}"
                );
            }
        }
        // The escaping relative link lands on the root's own `secret`, if it has one.
        std::fs::write(root.join("secret"), "inside\n").unwrap();
        for fd in both(&root, "etc/os-release", LastLink::Follow) {
            assert_eq!(content(fd, FileKind::Text), Ok(Some("inside\n".into())));
        }
    }

    #[test]
    fn symlinks_inside_the_root_are_followed() {
        let h = Hostile::new();
        let root = h.root();
        symlink("../usr/lib/os-release", root.join("etc/os-release")).unwrap();
        symlink("/usr/lib", root.join("lib")).unwrap();
        for rel in [
            "etc/os-release",
            "lib/os-release",
            "etc/./../lib/os-release",
        ] {
            for fd in both(&root, rel, LastLink::Follow) {
                assert_eq!(
                    content(fd, FileKind::Text),
                    Ok(Some("ID=debian\n".into())),
                    "{rel}"
                );
            }
        }
        // `Keep` resolves to the link itself, which is no file to read.
        for fd in both(&root, "etc/os-release", LastLink::Keep) {
            let e = content(fd, FileKind::Text).unwrap_err();
            assert!(e.contains("a symbolic link"), "{e}");
        }
    }

    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() {
        let h = Hostile::new();
        let root = h.root();
        symlink("b", root.join("etc/a")).unwrap();
        symlink("a", root.join("etc/b")).unwrap();
        for fd in both(&root, "etc/a", LastLink::Follow) {
            let e = fd.unwrap_err();
            assert_eq!(
                e.raw_os_error(),
                Some(rustix::io::Errno::LOOP.raw_os_error())
            );
        }
    }

    /// Runs `f` on a thread and fails the test if it does not return promptly.
    fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the read hung")
    }

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let h = Hostile::new();
        let root = h.root();
        nix::unistd::mkfifo(&root.join("etc/os-release"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        symlink("/dev/zero", root.join("dev/zero-link")).unwrap();
        let shown = root.join("etc/os-release");
        let r = promptly(move || {
            read_below(
                &RootDir::new(root),
                Path::new("etc/os-release"),
                &shown,
                FileKind::Text,
                Vec::new(),
            )
            .map(|f| f.map(|f| f.bytes))
        });
        let e = r.unwrap_err().to_string();
        assert!(e.contains("is a FIFO, not a regular file"), "{e}");
        assert!(e.contains("etc/os-release"), "names the file: {e}");
        // Inside the root, a link to /dev/zero points at the root's own dev/zero: absent.
        let root = h.root();
        let r = read_below(
            &RootDir::new(root.clone()),
            Path::new("dev/zero-link"),
            &root,
            FileKind::Text,
            Vec::new(),
        )
        .unwrap();
        assert!(r.is_none());
        // Named on the command line, the link is followed, and the device refused unopened.
        let fifo = h.root().join("etc/os-release");
        let named = promptly(move || read_named(&fifo, FileKind::ModuleFile).map(|_| ()));
        assert!(named.unwrap_err().to_string().contains("a FIFO"));
        let e = read_named(&h.root().join("dev/zero-link"), FileKind::Policy).unwrap_err();
        assert!(e.to_string().contains("is a character device"), "{e}");
    }

    #[test]
    fn each_kind_has_its_cap() {
        let h = Hostile::new();
        let big = h.root().join("etc/nfs-gds.toml");
        let f = File::create(&big).unwrap();
        f.set_len(FileKind::Policy.cap() + 1).unwrap();
        let e = read_named(&big, FileKind::Policy).unwrap_err().to_string();
        assert!(e.contains("larger than 1 MiB"), "{e}");
        assert!(e.contains("policy file"), "{e}");
        f.set_len(FileKind::Policy.cap()).unwrap();
        let read = read_named(&big, FileKind::Policy).unwrap().unwrap();
        assert_eq!(read.bytes.len() as u64, FileKind::Policy.cap());
        assert_eq!(read.meta.len(), FileKind::Policy.cap());
    }

    /// A root is opened once: a directory that is not there yet is not kept (it is looked for
    /// again), and once opened, paths resolve in that directory even after its path was renamed.
    #[test]
    fn a_root_directory_is_opened_once_and_kept() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("root");
        let root = RootDir::new(path.clone());
        let rel = Path::new("etc/os-release");
        assert!(is_absent(
            &resolve_below(&root, rel, LastLink::Follow).unwrap_err()
        ));
        std::fs::create_dir_all(path.join("etc")).unwrap();
        std::fs::write(path.join("etc/os-release"), "ID=first\n").unwrap();
        let read = |root: &RootDir| {
            let f = read_below(root, rel, rel, FileKind::Text, Vec::new())
                .unwrap()
                .unwrap();
            String::from_utf8(f.bytes).unwrap()
        };
        assert_eq!(read(&root), "ID=first\n");
        std::fs::rename(&path, d.path().join("moved")).unwrap();
        std::fs::create_dir_all(path.join("etc")).unwrap();
        std::fs::write(path.join("etc/os-release"), "ID=second\n").unwrap();
        assert_eq!(read(&root), "ID=first\n", "the directory first opened");
        assert_eq!(read(&RootDir::new(path)), "ID=second\n");
    }

    #[test]
    fn proc_files_are_read_although_their_size_says_zero() {
        let status = read_below(
            &RootDir::new("/".into()),
            Path::new("proc/self/status"),
            Path::new("/proc/self/status"),
            FileKind::Text,
            Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(status.meta.len(), 0);
        assert!(String::from_utf8_lossy(&status.bytes).contains("Pid:"));
    }

    /// A spare buffer is read into: what it held is gone, and where its capacity suffices the
    /// file's bytes land in the same allocation.
    #[test]
    fn a_spare_buffer_is_emptied_and_read_into() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("etc")).unwrap();
        std::fs::write(d.path().join("etc/os-release"), "ID=debian\n").unwrap();
        let mut spare = Vec::with_capacity(4096);
        spare.extend_from_slice(b"what the last read left");
        let at = spare.as_ptr();
        let rel = Path::new("etc/os-release");
        let read = read_below(
            &RootDir::new(d.path().into()),
            rel,
            rel,
            FileKind::Text,
            spare,
        )
        .unwrap()
        .unwrap();
        assert_eq!(read.bytes, b"ID=debian\n");
        assert_eq!(read.bytes.as_ptr(), at, "no new allocation");
    }

    #[test]
    fn kinds_follow_well_known_names() {
        let of = |p: &str| FileKind::of(Path::new(p));
        assert_eq!(of("proc/self/mountinfo"), FileKind::MountTable);
        assert_eq!(of("/proc/self/mountstats"), FileKind::MountTable);
        assert_eq!(of("/etc/fstab"), FileKind::MountTable);
        assert_eq!(of("proc/kallsyms"), FileKind::Kallsyms);
        assert_eq!(of("lib/modules/6.1.0/modules.dep"), FileKind::ModuleIndex);
        assert_eq!(
            of("lib/modules/6.1.0/updates/rpcrdma.ko.xz"),
            FileKind::ModuleFile
        );
        assert_eq!(of("/boot/vmlinuz-6.1.0"), FileKind::KernelImage);
        assert_eq!(of("/etc/nfs-gds/nfs-gds.toml"), FileKind::Policy);
        assert_eq!(of("/etc/cufile.json"), FileKind::Config);
        assert_eq!(of("sys/module/nvidia_fs/version"), FileKind::Text);
    }

    #[test]
    fn release_names_are_single_plain_components() {
        assert!(is_plain_name("6.1.0-50-amd64"));
        for bad in ["", ".", "..", "../../x", "a/b", "6.1..0", "a\0b"] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
    }
}
