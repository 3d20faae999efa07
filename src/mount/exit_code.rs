//! mount(8)'s exit codes, which a helper's exit code becomes (libmount `MNT_EX_*`, nfs-utils
//! `xcommon.h`). Anything other than 0 tells mount(8), systemd and `mount -a` the mount failed.

/// Mounted (and verified).
pub const SUCCESS: u8 = 0;
/// Incorrect invocation or options, or not permitted (not root, setuid, untrusted policy).
pub const USAGE: u8 = 1;
/// A system error: /proc unreadable, a program that cannot be executed, setns failed.
pub const SYSERR: u8 = 2;
/// Not mounted: mount failure, or a refusal by policy (before mounting, or after unmounting).
pub const FAIL: u8 = 32;
