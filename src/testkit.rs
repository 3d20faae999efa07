//! What the crate's unit tests share: the fixture-tree builder and mount-table texts of the
//! integration tests (the same files, so there is one of each), and a mount table from text.
//! Compiled only for tests; every layer's tests may use it.

#[path = "../tests/support/tree.rs"]
#[allow(dead_code)] // the integration tests use the rest
mod tree;

#[path = "../tests/support/mount_table.rs"]
pub mod mount_text;

pub use tree::{write_below, write_table, Tree};

use crate::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};

/// The table that `mountinfo` and `mountstats` describe.
pub fn table(mountinfo: &str, mountstats: &str) -> MountTable {
    MountTable::join(
        parse_mountinfo(mountinfo.as_bytes()).unwrap(),
        parse_mountstats(mountstats.as_bytes()),
    )
}

/// Mounts a tmpfs on `dir`: a mount event, for a test inside
/// [`in_private_mount_namespace`].
pub fn mount_tmpfs(dir: &std::path::Path) {
    let none: Option<&str> = None;
    nix::mount::mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        nix::mount::MsFlags::empty(),
        none,
    )
    .unwrap();
}

/// Runs `f` on a thread of its own that is in a private mount namespace (`unshare`, then `/`
/// made private recursively): real mounts, seen by nothing outside the thread. Where the
/// namespace cannot be made (no root, a seccomp filter), says so and runs nothing.
pub fn in_private_mount_namespace(f: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        if let Err(e) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS) {
            eprintln!("skipped: no private mount namespace here ({e})");
            return;
        }
        let none: Option<&str> = None;
        nix::mount::mount(
            none,
            "/",
            none,
            nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE,
            none,
        )
        .unwrap();
        f();
    })
    .join()
    .unwrap();
}
