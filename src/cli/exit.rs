//! Exit codes of the read-only commands: 0 ready, 1 not ready, 2 error.

/// Ready: no check failed (warnings may have been printed).
pub const READY: u8 = 0;
/// Not ready: at least one check failed.
pub const NOT_READY: u8 = 1;
/// The command could not run (bad arguments, unreadable input).
pub const ERROR: u8 = 2;

/// The exit code of a command's verdict: every read-only command maps it here.
pub fn of(verdict: crate::checks::Verdict) -> u8 {
    ready_or_not(verdict.is_ready())
}

/// The exit code of a command whose answer is ready or not (`inspect-module`'s hooks).
pub fn ready_or_not(ready: bool) -> u8 {
    if ready {
        READY
    } else {
        NOT_READY
    }
}
