//! SIGTERM, SIGINT and SIGHUP while a mount is in flight: held until the mount is verified and,
//! if refused, unmounted again.
//!
//! systemd's mount timeout and `systemctl stop` send SIGTERM, a terminal sends SIGINT or SIGHUP,
//! to the helper or to its whole process group. Arriving after `mount.nfs` made a mount and
//! before the helper judged it, the default action would end the helper with an unverified
//! (possibly TCP) mount in place and no record of it. While a [`Hold`] lives, those signals are
//! caught instead: the helper forwards one to `mount.nfs` if it is still running (so a mount
//! that is still retrying stops), finishes verifying, unmounting or recording, says what it did,
//! and exits with 128 + the signal's number. Before the first hold and after the last, each of
//! them does what it would do without nfs-gds. SIGKILL cannot be caught: see docs/helper.md.
//!
//! Signal dispositions belong to the process, so this is process-wide state: one flag of the
//! signal caught, and a count of holds.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::Signal;

/// The signals held.
pub const HELD: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// The last held signal that arrived while holding (0: none).
static CAUGHT: AtomicUsize = AtomicUsize::new(0);
/// Whether a held signal does what it would without nfs-gds (no hold is active).
static DEFAULT: AtomicBool = AtomicBool::new(true);
static HOLDS: Mutex<usize> = Mutex::new(0);
static INSTALLED: OnceLock<()> = OnceLock::new();

fn install() {
    INSTALLED.get_or_init(|| {
        for sig in HELD {
            let n = sig as i32;
            // Only SIGKILL and SIGSTOP cannot be caught; these three always can.
            let _ = signal_hook::flag::register_usize(n, &CAUGHT, n as usize);
            let _ = signal_hook::flag::register_conditional_default(n, &DEFAULT);
        }
    });
}

/// While it lives, the held signals are caught and noted instead of ending the process.
#[derive(Debug)]
pub struct Hold(());

impl Hold {
    pub fn start() -> Hold {
        install();
        let mut holds = HOLDS.lock().unwrap_or_else(|e| e.into_inner());
        if *holds == 0 {
            CAUGHT.store(0, Ordering::SeqCst);
            DEFAULT.store(false, Ordering::SeqCst);
        }
        *holds += 1;
        Hold(())
    }

    /// The signal that arrived since the hold began, if one did.
    pub fn caught(&self) -> Option<Signal> {
        caught()
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut holds = HOLDS.lock().unwrap_or_else(|e| e.into_inner());
        *holds = holds.saturating_sub(1);
        if *holds == 0 {
            DEFAULT.store(true, Ordering::SeqCst);
        }
    }
}

/// [`caught`]'s signal as its number: what the machine's system passes on to a program it
/// waits for (`mount.nfs`).
pub fn caught_number() -> Option<i32> {
    caught().map(|s| s as i32)
}

/// The held signal that arrived while a [`Hold`] lives, if one did (for a backend waiting on
/// `mount.nfs`, which forwards it).
pub fn caught() -> Option<Signal> {
    if DEFAULT.load(Ordering::SeqCst) {
        return None;
    }
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        n => i32::try_from(n).ok().and_then(|n| Signal::try_from(n).ok()),
    }
}

/// The exit code of a process ended by `sig`, as a shell reports it.
pub fn exit_code(sig: Signal) -> u8 {
    u8::try_from(128 + sig as i32).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_the_shells() {
        assert_eq!(exit_code(Signal::SIGTERM), 143);
        assert_eq!(exit_code(Signal::SIGINT), 130);
        assert_eq!(exit_code(Signal::SIGHUP), 129);
    }

    #[test]
    fn a_hold_notes_nothing_by_itself() {
        let hold = Hold::start();
        assert_eq!(hold.caught(), None);
    }
}
