//! One process at a time derives what the facts cache lacks: an exclusive `flock` on `fill.lock`
//! in the cache directory, taken on a miss and held until the entry is stored.
//!
//! At boot a node mounts its `nfs-gds` fstab lines at once, twenty helpers or more, each finding
//! the cache empty on the first boot after an install or a module update: without a turn each
//! decompresses and parses the same module files, on the CPUs the mounts are waiting for. With
//! one, the first derives the entry and the others, once it is stored, read it. The wait is
//! bounded ([`MAX_WAIT`]): a holder that takes longer (a stalled disk) only costs the others
//! that long, after which they derive the entry themselves, as they would without the lock. The
//! kernel releases a `flock` when its holder exits, however it exits, so a killed process never
//! leaves one held. Within one thread the turn is taken once: the fill of one entry can need
//! another (a symbol-version verdict needs its providers' export tables), and a second `flock`
//! on a new descriptor would wait for the thread's own. Other threads of the process wait like
//! other processes.

use std::cell::Cell;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode, OFlags};

/// The lock file's name in the cache directory.
pub const FILE: &str = "fill.lock";

/// How long a process waits for another one's fill before deriving the entry itself.
pub const MAX_WAIT: Duration = Duration::from_secs(10);

/// The first poll, doubled up to [`LONGEST_POLL`]: a fill on a real node takes milliseconds.
const FIRST_POLL: Duration = Duration::from_millis(2);
const LONGEST_POLL: Duration = Duration::from_millis(50);

thread_local! {
    /// Whether this thread holds the turn.
    static HELD: Cell<bool> = const { Cell::new(false) };
}

/// This process's turn to fill; dropping it lets the next process have it.
#[derive(Debug)]
pub struct FillTurn {
    /// The locked file; `None` when the turn was already this thread's (an inner fill) or
    /// could not be had (no lock file, or the wait ran out).
    fd: Option<OwnedFd>,
    /// Whether another process held the turn when it was asked for: what it was filling may be
    /// stored now.
    waited: bool,
}

impl FillTurn {
    /// Whether the turn came only after another process let go of it.
    pub fn waited(&self) -> bool {
        self.waited
    }
}

impl Drop for FillTurn {
    fn drop(&mut self) {
        if self.fd.take().is_some() {
            // Closing the descriptor released the lock.
            HELD.set(false);
        }
    }
}

/// Takes the turn in `dir` (a trusted cache directory), waiting at most `max_wait` for another
/// process. Never fails: without a lock file (a read-only directory) or after the wait, the
/// caller goes on without the turn.
pub fn take(dir: &Path, max_wait: Duration) -> FillTurn {
    let free = FillTurn {
        fd: None,
        waited: false,
    };
    if HELD.replace(true) {
        // Already this thread's (the flag stays set for the outer turn).
        return free;
    }
    let opened = rustix::fs::open(
        dir.join(FILE),
        OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    );
    let fd = match opened {
        Ok(fd) => fd,
        Err(e) => {
            tracing::debug!("no fill lock in {}: {e}", dir.display());
            HELD.set(false);
            return free;
        }
    };
    let start = Instant::now();
    let mut poll = FIRST_POLL;
    let mut waited = false;
    loop {
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                return FillTurn {
                    fd: Some(fd),
                    waited,
                }
            }
            Err(rustix::io::Errno::WOULDBLOCK) if start.elapsed() < max_wait => {
                waited = true;
                std::thread::sleep(poll);
                poll = (poll * 2).min(LONGEST_POLL);
            }
            Err(e) => {
                if e == rustix::io::Errno::WOULDBLOCK {
                    tracing::debug!(
                        "another process has been filling the facts cache for {} ms; deriving the facts here too",
                        start.elapsed().as_millis()
                    );
                } else {
                    tracing::debug!("cannot lock {}: {e}", dir.join(FILE).display());
                }
                HELD.set(false);
                return FillTurn { fd: None, waited };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Until another process holds the lock on `lock` (it has created the file and locked it).
    fn until_held_elsewhere(lock: &Path) {
        loop {
            if let Ok(fd) = rustix::fs::open(lock, OFlags::RDWR, Mode::empty()) {
                match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                    Err(rustix::io::Errno::WOULDBLOCK) => return,
                    _ => drop(fd),
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn an_inner_fill_does_not_wait_for_its_own_thread() {
        let dir = tempfile::tempdir().unwrap();
        let outer = take(dir.path(), Duration::from_secs(5));
        assert!(outer.fd.is_some() && !outer.waited());
        let start = Instant::now();
        let inner = take(dir.path(), Duration::from_secs(5));
        assert!(inner.fd.is_none() && !inner.waited());
        assert!(start.elapsed() < Duration::from_secs(1));
        drop(inner);
        // The outer turn is still held: dropping the inner one released nothing.
        assert!(HELD.get());
        drop(outer);
        assert!(!HELD.get());
        let again = take(dir.path(), Duration::from_secs(5));
        assert!(again.fd.is_some() && !again.waited());
    }

    #[test]
    fn waits_for_another_process_and_gives_up_after_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(FILE);
        // Another process holds the lock for a second: the turn comes after it, said so.
        let mut holder = Command::new("flock")
            .arg(&lock)
            .args(["sleep", "1"])
            .spawn()
            .expect("flock(1) from util-linux");
        until_held_elsewhere(&lock);
        let turn = take(dir.path(), Duration::from_secs(30));
        assert!(turn.fd.is_some() && turn.waited(), "{turn:?}");
        holder.wait().unwrap();
        drop(turn);
        // A holder that outstays the bound: the wait ends, without the turn.
        let mut holder = Command::new("flock")
            .arg(&lock)
            .args(["sleep", "30"])
            .spawn()
            .unwrap();
        until_held_elsewhere(&lock);
        let start = Instant::now();
        let turn = take(dir.path(), Duration::from_millis(200));
        let took = start.elapsed();
        assert!(turn.fd.is_none() && turn.waited(), "{turn:?}");
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(10),
            "{took:?}"
        );
        holder.kill().unwrap();
        holder.wait().unwrap();
    }

    #[test]
    fn a_directory_without_room_for_the_lock_is_no_reason_to_wait() {
        let turn = take(Path::new("/nonexistent/nfs-gds-cache"), MAX_WAIT);
        assert!(turn.fd.is_none() && !turn.waited());
        assert!(!HELD.get());
    }
}
