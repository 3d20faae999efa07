//! One process at a time derives what the facts cache lacks: an exclusive `flock` on `fill.lock`
//! in the cache directory, taken on a miss and held until the entry is stored.
//!
//! At boot a node mounts its `nfs-gds` fstab lines at once, twenty helpers or more, each finding
//! the cache empty on the first boot after an install or a module update: without a turn each
//! decompresses and parses the same module files, on the CPUs the mounts are waiting for. With
//! one, the first derives the entry and the others, once it is stored, read it. The wait is
//! bounded per process, not per miss ([`MAX_WAIT`] for all of a process's misses together): a
//! holder that takes longer (a stalled disk, a stopped process) costs each other process that
//! long once, after which it derives what it lacks itself, as it would without the lock, and
//! takes the turn only when it is free at once. The kernel releases a `flock` when its holder
//! exits, however it exits, so a killed process never leaves one held. Within one thread the
//! turn is taken once: the fill of one entry can need another (a symbol-version verdict needs
//! its providers' export tables), and a second `flock` on a new descriptor would wait for the
//! thread's own. Other threads of the process wait like other processes, out of the same
//! budget.

use std::cell::Cell;
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;

use super::out_dir::OutDir;

/// The lock file's name in the cache directory.
pub const FILE: &str = "fill.lock";

/// How long a process waits for other processes' fills, all its misses together, before
/// deriving what it lacks itself.
pub const MAX_WAIT: Duration = Duration::from_secs(10);

/// The first poll, doubled up to [`LONGEST_POLL`]: a fill on a real node takes milliseconds.
const FIRST_POLL: Duration = Duration::from_millis(2);
const LONGEST_POLL: Duration = Duration::from_millis(50);

thread_local! {
    /// Whether this thread holds the turn.
    static HELD: Cell<bool> = const { Cell::new(false) };
}

/// The waiting a process has left for other processes' fills.
#[derive(Debug)]
pub struct WaitBudget(Mutex<Duration>);

impl WaitBudget {
    pub const fn new(total: Duration) -> Self {
        WaitBudget(Mutex::new(total))
    }

    fn left(&self) -> Duration {
        self.0.lock().map(|l| *l).unwrap_or(Duration::ZERO)
    }

    fn spend(&self, spent: Duration) {
        if let Ok(mut left) = self.0.lock() {
            *left = left.saturating_sub(spent);
        }
    }
}

/// This process's one bounded wait.
static PROCESS: WaitBudget = WaitBudget::new(MAX_WAIT);

/// This process's turn to fill; dropping it lets the next process have it.
#[derive(Debug)]
pub struct FillTurn {
    /// The locked file; `None` when the turn was already this thread's (an inner fill) or
    /// could not be had (no lock file, or no wait left).
    fd: Option<OwnedFd>,
    /// Whether this process waited while another one held the turn: what it was filling may
    /// be stored now.
    waited: bool,
}

impl FillTurn {
    /// Whether the turn came only after waiting for another process.
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

/// Takes the turn in `dir` (a trusted cache directory), waiting for another process no longer
/// than this process has left of [`MAX_WAIT`]. Never fails: without a lock file (a read-only
/// directory) or once the wait is spent, the caller goes on without the turn.
pub fn take(dir: &OutDir) -> FillTurn {
    take_within(dir, &PROCESS)
}

/// [`take`], waiting out of `budget`.
pub fn take_within(dir: &OutDir, budget: &WaitBudget) -> FillTurn {
    let free = FillTurn {
        fd: None,
        waited: false,
    };
    if HELD.replace(true) {
        // Already this thread's (the flag stays set for the outer turn).
        return free;
    }
    let fd = match dir.lock_file(FILE) {
        Ok(fd) => fd,
        Err(e) => {
            tracing::debug!("no fill lock in {}: {e}", dir.path().display());
            HELD.set(false);
            return free;
        }
    };
    let start = Instant::now();
    let left = budget.left();
    let mut poll = FIRST_POLL;
    let mut waited = false;
    let turn = loop {
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break Some(fd),
            Err(rustix::io::Errno::WOULDBLOCK) if start.elapsed() < left => {
                waited = true;
                std::thread::sleep(poll.min(left.saturating_sub(start.elapsed())));
                poll = (poll * 2).min(LONGEST_POLL);
            }
            Err(e) => {
                if e == rustix::io::Errno::WOULDBLOCK {
                    tracing::debug!(
                        "another process has been filling the facts cache for {} ms (this one waits {} ms at most in all); deriving the facts here too",
                        start.elapsed().as_millis(),
                        MAX_WAIT.as_millis()
                    );
                } else {
                    tracing::debug!("cannot lock {}: {e}", dir.path().join(FILE).display());
                }
                break None;
            }
        }
    };
    if waited {
        budget.spend(start.elapsed());
    }
    if turn.is_none() {
        HELD.set(false);
    }
    FillTurn { fd: turn, waited }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::io::out_dir::Trust;
    use crate::host::io::root::Root;
    use rustix::fs::{Mode, OFlags};
    use std::path::Path;
    use std::process::Command;

    fn dir_at(path: &Path) -> OutDir {
        OutDir::open(&Root::new(path), "", Trust::Shared).unwrap()
    }

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
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir_at(tmp.path());
        let budget = WaitBudget::new(Duration::from_secs(5));
        let outer = take_within(&dir, &budget);
        assert!(outer.fd.is_some() && !outer.waited());
        let start = Instant::now();
        let inner = take_within(&dir, &budget);
        assert!(inner.fd.is_none() && !inner.waited());
        assert!(start.elapsed() < Duration::from_secs(1));
        drop(inner);
        // The outer turn is still held: dropping the inner one released nothing.
        assert!(HELD.get());
        drop(outer);
        assert!(!HELD.get());
        let again = take_within(&dir, &budget);
        assert!(again.fd.is_some() && !again.waited());
    }

    #[test]
    fn waits_for_another_process_and_gives_up_after_the_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir_at(tmp.path());
        let lock = tmp.path().join(FILE);
        // Another process holds the lock for a second: the turn comes after it, said so.
        let mut holder = Command::new("flock")
            .arg(&lock)
            .args(["sleep", "1"])
            .spawn()
            .expect("flock(1) from util-linux");
        until_held_elsewhere(&lock);
        let turn = take_within(&dir, &WaitBudget::new(Duration::from_secs(30)));
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
        let turn = take_within(&dir, &WaitBudget::new(Duration::from_millis(200)));
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
    fn a_process_waits_once_for_a_stuck_holder_not_once_per_miss() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir_at(tmp.path());
        let lock = tmp.path().join(FILE);
        // -o: the lock is flock(1)'s own, not its child's, so killing it lets go.
        let mut holder = Command::new("flock")
            .arg("-o")
            .arg(&lock)
            .args(["sleep", "60"])
            .spawn()
            .expect("flock(1) from util-linux");
        until_held_elsewhere(&lock);
        let bound = Duration::from_millis(300);
        let budget = WaitBudget::new(bound);
        let start = Instant::now();
        let first = take_within(&dir, &budget);
        assert!(first.fd.is_none() && first.waited(), "{first:?}");
        let after_first = start.elapsed();
        // Three more misses: no more waiting, and nothing to look for again.
        for _ in 0..3 {
            let turn = take_within(&dir, &budget);
            assert!(turn.fd.is_none() && !turn.waited(), "{turn:?}");
        }
        let took = start.elapsed();
        assert!(after_first >= bound, "{after_first:?}");
        assert!(
            took < bound * 2,
            "four misses waited {took:?}, more than one bound of {bound:?}"
        );
        holder.kill().unwrap();
        holder.wait().unwrap();
        // Free again: the turn is taken at once, the budget spent or not.
        let turn = take_within(&dir, &budget);
        assert!(turn.fd.is_some() && !turn.waited(), "{turn:?}");
    }

    #[test]
    fn a_directory_without_room_for_the_lock_is_no_reason_to_wait() {
        let tmp = tempfile::tempdir().unwrap();
        // The lock's name is taken by a directory: no lock file can be opened.
        std::fs::create_dir(tmp.path().join(FILE)).unwrap();
        let turn = take(&dir_at(tmp.path()));
        assert!(turn.fd.is_none() && !turn.waited());
        assert!(!HELD.get());
    }
}
