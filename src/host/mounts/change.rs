//! Whether a mount table may have changed since it was last read, for a reader that keeps it
//! (the NRI plugin answers every container from one kept table). The kernel marks an open
//! `/proc/self/mountinfo` with `POLLPRI` (and `POLLERR`) after any mount or unmount in the
//! namespace, and clears the mark when polled: a zero-timeout poll before each answer says
//! whether to read again, so no answer rests on a table older than the last mount event before
//! the request. A mountinfo that is not procfs (a `--root` fixture, a support bundle) has no
//! such mark: then every question says "changed", and the table is read for each answer.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;

#[cfg(test)]
use super::read::MOUNTINFO;
use crate::host::io::root::Root;

/// An open procfs mountinfo to poll, or nothing to poll.
#[derive(Debug)]
pub struct MountsChange {
    /// `None`: not procfs, or not openable; every [`MountsChange::since_last`] says changed.
    proc: Option<File>,
}

impl MountsChange {
    /// Opens `proc/self/mountinfo` below `root` for polling: open it before the first read of
    /// the table, so a change between that read and the first poll is seen.
    pub fn open(root: &Root, mountinfo: &str) -> MountsChange {
        Self::open_path(&root.join(mountinfo))
    }

    fn open_path(path: &std::path::Path) -> MountsChange {
        // Never blocks on a FIFO put there; anything but procfs is not polled.
        let proc = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
            .open(path)
            .ok()
            .filter(|f| {
                nix::sys::statfs::fstatfs(f.as_fd())
                    .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::PROC_SUPER_MAGIC)
            });
        if proc.is_none() {
            tracing::debug!(
                "{} is not procfs: the mount table is read for every answer",
                path.display()
            );
        }
        MountsChange { proc }
    }

    /// Whether the table is polled for changes (procfs), rather than read each time.
    pub fn polled(&self) -> bool {
        self.proc.is_some()
    }

    /// Whether a mount or unmount happened since the last call (or since [`MountsChange::open`]):
    /// a poll that does not wait. Not procfs, or a failed poll: `true`.
    pub fn since_last(&mut self) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let Some(f) = &self.proc else {
            return true;
        };
        let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLPRI)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(0) => false,
            Ok(_) => fds[0].revents().is_none_or(|r| {
                r.intersects(PollFlags::POLLPRI | PollFlags::POLLERR | PollFlags::POLLNVAL)
            }),
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixture_mountinfo_is_not_polled_and_always_says_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join(MOUNTINFO), "").unwrap();
        let mut c = MountsChange::open(&Root::new(dir.path()), MOUNTINFO);
        assert!(!c.polled());
        assert!(c.since_last() && c.since_last());
    }

    #[test]
    fn a_fifo_in_place_of_mountinfo_is_neither_opened_for_long_nor_polled() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        nix::unistd::mkfifo(&dir.path().join(MOUNTINFO), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let mut c = MountsChange::open(&Root::new(dir.path()), MOUNTINFO);
        assert!(!c.polled());
        assert!(c.since_last());
    }

    /// A real mount event, in a private mount namespace of the test's own thread (the thread's
    /// mountinfo: `/proc/self` is the whole process's): the mark is set once, then clear.
    #[test]
    fn a_mount_in_the_namespace_is_seen_once_by_a_poll_that_does_not_wait() {
        crate::testkit::in_private_mount_namespace(|| {
            let mut c =
                MountsChange::open_path(std::path::Path::new("/proc/thread-self/mountinfo"));
            assert!(c.polled());
            // Whatever happened before (the namespace's own making) is taken in.
            c.since_last();
            assert!(!c.since_last(), "no mount event yet");
            let dir = tempfile::tempdir().unwrap();
            crate::testkit::mount_tmpfs(dir.path());
            assert!(c.since_last(), "the mount is seen");
            assert!(!c.since_last(), "and only once");
            nix::mount::umount(dir.path()).unwrap();
            assert!(c.since_last(), "the unmount too");
        });
    }
}
