//! The one way nfs-gds writes below a root: an output directory opened with the same in-root
//! resolution as every read ([`reader::resolve_below`]), so a symlinked ancestor (`<root>/run`
//! pointing out of the tree in a replayed bundle) resolves inside the root, never out of it; and
//! every file in it written, renamed and removed relative to that descriptor, so nothing swapped
//! into the path afterwards redirects a write.
//!
//! Directories it creates are mode 0755 whatever the umask (they are `fchmod`ed after `mkdirat`).
//! A directory nfs-gds owns ([`Trust::Own`]: `/run/nfs-gds` and its mount records) is refused
//! when another user owns it or when group or others may write in it: such a user could plant or
//! swap the files root reads and deletes there. A file is replaced atomically (a dot-named
//! temporary, flushed, then renamed), with SIGTERM, SIGINT and SIGHUP held for those few
//! system calls, so a stop request never leaves a temporary behind (it is acted on as soon as
//! the file is in place).

use std::ffi::OsStr;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
use rustix::fs::{AtFlags, Mode, OFlags};

use super::reader::{self, LastLink};
use super::root::Root;

/// nfs-gds's own directory below the root (its status, readiness file and mount records), held
/// to [`Trust::Own`].
pub const RUN_DIR: &str = "run/nfs-gds";

/// The prefix of a temporary file while it is written.
pub const TEMP_PREFIX: &str = ".nfs-gds.";

/// Whose directory an output directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Shared with others (node_exporter's textfile directory, a path given on the command line):
    /// written in as it is.
    Shared,
    /// nfs-gds's own: refused unless it belongs to root (or the user running nfs-gds) and only
    /// its owner may write in it.
    Own,
}

/// An open output directory below a root.
#[derive(Debug)]
pub struct OutDir {
    fd: OwnedFd,
    shown: PathBuf,
}

impl OutDir {
    /// Opens the directory `rel` below `root`, resolved inside the root, creating what is missing
    /// (mode 0755).
    pub fn open(root: &Root, rel: impl AsRef<Path>, trust: Trust) -> io::Result<OutDir> {
        Self::open_in(root, rel.as_ref(), trust, true, LastLink::Keep)?
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// Opens the directory `rel` below `root` as [`OutDir::open`] does, creating nothing:
    /// `Ok(None)` when it (or a directory on its way) does not exist.
    pub fn existing(
        root: &Root,
        rel: impl AsRef<Path>,
        trust: Trust,
    ) -> io::Result<Option<OutDir>> {
        Self::open_in(root, rel.as_ref(), trust, false, LastLink::Keep)
    }

    /// Opens the directory `rel` below `root` that holds the one nfs-gds uses (the facts
    /// cache's `var/cache`): resolved inside the root, a symbolic link at its end too, and
    /// created (mode 0755) when missing and `create` says so, else `Ok(None)`.
    pub fn parent(root: &Root, rel: impl AsRef<Path>, create: bool) -> io::Result<Option<OutDir>> {
        Self::open_in(root, rel.as_ref(), Trust::Shared, create, LastLink::Follow)
    }

    fn open_in(
        root: &Root,
        rel: &Path,
        trust: Trust,
        create: bool,
        end: LastLink,
    ) -> io::Result<Option<OutDir>> {
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        let mut walked = PathBuf::new();
        let mut dir = open_dir(reader::resolve_below(
            root.handle(),
            &walked,
            LastLink::Follow,
        )?)?;
        let parts: Vec<_> = rel.components().collect();
        for (i, part) in parts.iter().enumerate() {
            walked.push(part);
            // Ancestors resolve inside the root; the directory itself must not be a link.
            let last = i + 1 == parts.len();
            let how = if last { end } else { LastLink::Follow };
            dir = match reader::resolve_below(root.handle(), &walked, how) {
                Ok(fd) if last && File::from(fd.try_clone()?).metadata()?.is_symlink() => {
                    return Err(io::Error::other(format!(
                        "its directory {} is a symbolic link (point the option at the real directory)",
                        root.join(&walked).display()
                    )));
                }
                Ok(fd) => open_dir(fd)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    make_dir(&dir, part.as_os_str(), 0o755).map_err(|e| {
                        if matches!(e.raw_os_error(), Some(n) if n == ELOOP || n == ENOTDIR) {
                            io::Error::other(format!(
                                "{} is a symbolic link to nothing below the root: not creating directories through it",
                                root.join(&walked).display()
                            ))
                        } else {
                            e
                        }
                    })?
                }
                Err(e) => return Err(e),
            };
        }
        let out = OutDir {
            fd: dir,
            shown: root.join(rel),
        };
        if trust == Trust::Own {
            out.check_own(root.context().euid())?;
        }
        Ok(Some(out))
    }

    /// The directory `name` in this one, never through a symbolic link; made with `mode`
    /// (whatever the umask) when it is missing and `create` says so, else `Ok(None)`.
    pub fn subdir(&self, name: &str, mode: u32, create: bool) -> io::Result<Option<OutDir>> {
        plain(name)?;
        let shown = self.shown.join(name);
        match rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty()) {
            Ok(fd) => Ok(Some(OutDir { fd, shown })),
            Err(rustix::io::Errno::NOENT) if create => Ok(Some(OutDir {
                fd: make_dir(&self.fd, OsStr::new(name), mode)?,
                shown,
            })),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!(
                    "{} is not a directory (a symbolic link or a file): not using it",
                    shown.display()
                ),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// What `fstat` says of the directory itself.
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        File::from(self.fd.try_clone()?).metadata()
    }

    /// The file `name` in this directory, opened for a `flock` (created mode 0600 when missing,
    /// never through a symbolic link).
    pub fn lock_file(&self, name: &str) -> io::Result<OwnedFd> {
        plain(name)?;
        let flags = OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(rustix::fs::openat(
            &self.fd,
            name,
            flags,
            Mode::from_raw_mode(0o600),
        )?)
    }

    /// Reads the regular file `name` in this directory under the rules of every host read
    /// (never opened when it is anything else, at most the cap of `kind`), with the metadata
    /// of what was read; `Ok(None)` when it is not there.
    pub fn read_file(
        &self,
        name: &str,
        kind: reader::FileKind,
    ) -> Result<Option<reader::FileRead>, crate::host::io::error::HostError> {
        let shown = self.shown.join(name);
        if plain(name).is_err() {
            return Err(crate::host::io::error::HostError::Read {
                path: shown,
                source: io::Error::from(io::ErrorKind::InvalidInput),
            });
        }
        reader::read_at(&self.fd, name, &shown, kind)
    }

    /// The directory as the host sees it (root included), for messages.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// The directory belongs to root or to `me`, and only its owner writes it.
    fn check_own(&self, me: u32) -> io::Result<()> {
        let meta = File::from(self.fd.try_clone()?).metadata()?;
        if meta.uid() != 0 && meta.uid() != me {
            return Err(io::Error::other(format!(
                "it belongs to uid {}, not root: refusing to use a directory another user controls",
                meta.uid()
            )));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "it is writable by {} (mode {:04o}): refusing to use it, since they could plant or swap files in it; `chmod go-w` it",
                if meta.mode() & 0o002 != 0 { "others" } else { "its group" },
                meta.mode() & 0o7777
            )));
        }
        Ok(())
    }

    /// Replaces the file `name` atomically with what `fill` writes, mode `mode`, flushed to
    /// disk before it takes the name.
    pub fn write_atomic(
        &self,
        name: &str,
        mode: u32,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        self.replace(name, mode, true, fill)
    }

    /// Replaces the file `name` atomically as [`OutDir::write_atomic`] does, without waiting
    /// for the disk: for what may be lost in a crash (a cache entry), since a file that did not
    /// reach the disk whole is one that cannot be parsed, never a wrong one.
    pub fn write_atomic_unsynced(
        &self,
        name: &str,
        mode: u32,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        self.replace(name, mode, false, fill)
    }

    fn replace(
        &self,
        name: &str,
        mode: u32,
        sync: bool,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        plain(name)?;
        self.replaceable(name)?;
        let _held = HeldSignals::hold();
        let (tmp, file) = self.create_temp()?;
        let done = (|| {
            let mut file = file;
            fill(&mut file)?;
            rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            if sync {
                file.sync_all()?;
            }
            rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name)?;
            Ok(())
        })();
        if done.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
        }
        done
    }

    /// Whether `name` may be replaced by a rename: absent, a regular file, or a symbolic link
    /// (the link itself is replaced). A device node, FIFO, socket or directory in its place is
    /// someone else's (`--status-file /dev/full` would turn the device into a file): refused.
    fn replaceable(&self, name: &str) -> io::Result<()> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match rustix::fs::FileType::from_raw_mode(st.st_mode) {
                rustix::fs::FileType::RegularFile | rustix::fs::FileType::Symlink => Ok(()),
                kind => Err(io::Error::other(format!(
                    "{} is a {}, not a regular file: not replacing it",
                    self.shown.join(name).display(),
                    match kind {
                        rustix::fs::FileType::Directory => "directory",
                        rustix::fs::FileType::Fifo => "FIFO",
                        rustix::fs::FileType::Socket => "socket",
                        _ => "device node",
                    }
                ))),
            },
            Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A new temporary file, mode 0600, with a name nobody else has.
    fn create_temp(&self) -> io::Result<(String, File)> {
        for _ in 0..16 {
            let random = std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish();
            let tmp = format!("{TEMP_PREFIX}{random:016x}");
            let flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rustix::fs::openat(&self.fd, tmp.as_str(), flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => return Ok((tmp, File::from(fd))),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::other("no free temporary file name"))
    }

    /// Removes the entry `name`: `true` when it was there, `false` (not an error) when not.
    pub fn remove(&self, name: &str) -> io::Result<bool> {
        plain(name)?;
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the empty directory `name`: `true` when it was there, `false` (not an error) when
    /// not. A directory that is not empty, or is a mount point, is an error (`ENOTEMPTY`,
    /// `EBUSY`).
    pub fn remove_dir(&self, name: &str) -> io::Result<bool> {
        plain(name)?;
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The file `name` in this directory, opened for a `flock` when it exists (never through a
    /// symbolic link); `None` when it does not.
    pub fn existing_lock_file(&self, name: &str) -> io::Result<Option<OwnedFd>> {
        plain(name)?;
        let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(fd)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The directory's own descriptor, for a `flock` held across several steps.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The names in the directory, sorted.
    pub fn names(&self) -> io::Result<Vec<String>> {
        let dir = rustix::fs::openat(&self.fd, ".", dir_flags(), Mode::empty())?;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::new(dir)? {
            let name = entry?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                names.push(String::from_utf8_lossy(&name).into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// An exclusive lock on the directory (`flock(2)` on its descriptor) until the guard is
    /// dropped, for a read-modify-write of a file in it by processes that run at once (the
    /// container hook's counters). Tried for about a second, never waited on for good: `None`
    /// when another holder keeps it that long.
    pub fn lock(&self) -> io::Result<Option<DirLock<'_>>> {
        use rustix::fs::FlockOperation;
        for _ in 0..100 {
            match rustix::fs::flock(&self.fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(Some(DirLock(self))),
                Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// The contents of the regular file `name`, at most `cap` bytes; `None` when it is not
    /// there, is not a regular file (never opened: a FIFO does not block) or is larger.
    pub fn read_small(&self, name: &str, cap: u64) -> io::Result<Option<Vec<u8>>> {
        plain(name)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let file = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::LOOP) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta = file.metadata()?;
        if !meta.is_file() || meta.len() > cap {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        file.take(cap + 1).read_to_end(&mut bytes)?;
        Ok((bytes.len() as u64 <= cap).then_some(bytes))
    }
}

/// The lock of [`OutDir::lock`], released when dropped.
#[derive(Debug)]
pub struct DirLock<'a>(&'a OutDir);

impl Drop for DirLock<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0.fd, rustix::fs::FlockOperation::Unlock);
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Makes the directory `name` in `parent` with `mode` whatever the umask, and opens it (never
/// through a symbolic link: one put there meanwhile is `ELOOP`).
fn make_dir(parent: &OwnedFd, name: &OsStr, mode: u32) -> io::Result<OwnedFd> {
    let made_here = match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(mode)) {
        Ok(()) => true,
        // Made by someone else meanwhile: taken as it is (and judged as such).
        Err(rustix::io::Errno::EXIST) => false,
        Err(e) => return Err(e.into()),
    };
    let made = rustix::fs::openat(parent, name, dir_flags(), Mode::empty())?;
    if made_here {
        rustix::fs::fchmod(&made, Mode::from_raw_mode(mode))?;
    }
    Ok(made)
}

const ELOOP: i32 = rustix::io::Errno::LOOP.raw_os_error();
const ENOTDIR: i32 = rustix::io::Errno::NOTDIR.raw_os_error();

/// A real directory descriptor for a resolved `O_PATH` one; anything else is an error.
fn open_dir(fd: OwnedFd) -> io::Result<OwnedFd> {
    match rustix::fs::openat(&fd, ".", dir_flags(), Mode::empty()) {
        Ok(dir) => Ok(dir),
        Err(rustix::io::Errno::NOTDIR) => Err(io::Error::from(io::ErrorKind::NotADirectory)),
        Err(e) => Err(e.into()),
    }
}

/// A name to write in the directory must be one plain name.
fn plain(name: &str) -> io::Result<()> {
    if reader::is_plain_name(name) && !OsStr::new(name).as_bytes().contains(&b'/') {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a plain file name"),
        ))
    }
}

/// SIGTERM, SIGINT and SIGHUP held (blocked) for this thread while it lives; on drop the
/// previous mask comes back and a held signal is delivered then.
struct HeldSignals(Option<SigSet>);

impl HeldSignals {
    fn hold() -> Self {
        let mut held = SigSet::empty();
        for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
            held.add(s);
        }
        let mut old = SigSet::empty();
        match pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&held), Some(&mut old)) {
            Ok(()) => HeldSignals(Some(old)),
            Err(_) => HeldSignals(None),
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    /// `agent --status-file /dev/full` once renamed its file over the device: whatever is not a
    /// regular file (or a link) in the file's place is left as it is, and named.
    #[test]
    fn a_fifo_or_directory_in_the_files_place_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let out = OutDir::open(&root, "out", Trust::Shared).unwrap();
        nix::unistd::mkfifo(
            &dir.path().join("out/status.json"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("out/ready")).unwrap();
        for (name, kind) in [("status.json", "FIFO"), ("ready", "directory")] {
            let e = out
                .write_atomic(name, 0o644, |w| w.write_all(b"{}"))
                .unwrap_err();
            assert!(
                e.to_string().ends_with(&format!(
                    "out/{name} is a {kind}, not a regular file: not replacing it"
                )),
                "{e}"
            );
        }
        let kinds: Vec<bool> = ["status.json", "ready"]
            .iter()
            .map(|n| {
                std::fs::symlink_metadata(dir.path().join("out").join(n))
                    .unwrap()
                    .is_file()
            })
            .collect();
        assert_eq!(kinds, [false, false], "both left as they were");
        out.write_atomic("fresh.json", 0o644, |w| w.write_all(b"{}"))
            .unwrap();
        out.write_atomic("fresh.json", 0o644, |w| w.write_all(b"[]"))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("out/fresh.json")).unwrap(),
            "[]"
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("out")).unwrap().count(),
            3
        );
    }

    #[test]
    fn a_symlinked_ancestor_resolves_inside_the_root() {
        let d = tempfile::tempdir().unwrap();
        let (root, outside) = (d.path().join("root"), d.path().join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        symlink(&outside, root.join("run")).unwrap();
        // Where the link leads inside the tree does not exist: refused, nothing written.
        let e = OutDir::open(&Root::new(&root), "run/nfs-gds", Trust::Own).unwrap_err();
        assert!(
            e.to_string()
                .contains("symbolic link to nothing below the root"),
            "{e}"
        );
        // The absolute link resolves as if the root were `/`: to `<root>/<outside's path>`.
        let inside = root.join(outside.strip_prefix("/").unwrap());
        std::fs::create_dir_all(&inside).unwrap();
        let dir = OutDir::open(&Root::new(&root), "run/nfs-gds", Trust::Own).unwrap();
        dir.write_atomic("status.json", 0o644, |w| w.write_all(b"{}"))
            .unwrap();
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        assert_eq!(
            std::fs::read(inside.join("nfs-gds/status.json")).unwrap(),
            b"{}"
        );
    }

    #[test]
    fn a_directory_others_may_write_in_is_refused_when_it_is_ours() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("run/nfs-gds");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = OutDir::open(&Root::new(d.path()), "run/nfs-gds", Trust::Own).unwrap_err();
        assert!(
            e.to_string().contains("writable by others (mode 0777)"),
            "{e}"
        );
        assert!(OutDir::open(&Root::new(d.path()), "run/nfs-gds", Trust::Shared).is_ok());
    }

    #[test]
    fn stop_signals_are_held_while_a_temporary_exists_and_none_is_left() {
        let d = tempfile::tempdir().unwrap();
        let dir = OutDir::open(&Root::new(d.path()), "out", Trust::Shared).unwrap();
        let held = |s: Signal| {
            let mut now = SigSet::empty();
            pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut now)).unwrap();
            now.contains(s)
        };
        let mut during = Vec::new();
        dir.write_atomic("a", 0o644, |w| {
            during = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP]
                .map(held)
                .to_vec();
            w.write_all(b"x")
        })
        .unwrap();
        assert_eq!(during, vec![true, true, true]);
        assert!(!held(Signal::SIGTERM));
        let failed = dir.write_atomic("b", 0o644, |_| Err(io::Error::other("full")));
        assert!(failed.is_err());
        assert_eq!(dir.names().unwrap(), vec!["a"]);
        assert_eq!(mode(&d.path().join("out/a")), 0o644);
    }
}
