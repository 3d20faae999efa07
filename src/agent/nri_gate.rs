//! Whether the NRI plugin (`nfs-gds nri`) is the runtime's gate right now, for the agent's
//! `nfs_gds_nri_connected`. NRI 0.8 lets a container start when its plugin is not there (fail
//! open), so an operator must see the gate down. The plugin holds an exclusive `flock` on
//! `run/nfs-gds/nri.lock` for as long as it runs (the kernel drops it when the process dies,
//! `kill -9` included), and after each successful registration writes `nri.registered`: when,
//! and on which runtime socket. The gate is up while the lock is held and that registration is
//! newer than the runtime's start — the modification time of its socket, which the runtime
//! creates anew each time it starts. A plugin the runtime started itself (pre-registered) names
//! no socket: it lives and dies with its runtime's connection, so the held lock says it.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
use crate::host::Root;

/// The lock the plugin holds while it runs, in [`RUN_DIR`].
pub const LOCK: &str = "nri.lock";
/// The last registration, in [`RUN_DIR`].
pub const REGISTERED: &str = "nri.registered";

/// What [`REGISTERED`] says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Seconds since the epoch, and nanoseconds, of the runtime's answer.
    pub at_secs: u64,
    #[serde(default)]
    pub at_nanos: u32,
    /// The runtime's socket as the plugin named it; `None` when the runtime started the plugin.
    pub socket: Option<String>,
}

/// The plugin's hold on [`LOCK`]: released when dropped or when the process ends.
#[derive(Debug)]
pub struct Held {
    dir: OutDir,
    _fd: OwnedFd,
}

/// Takes [`LOCK`] below `root`; `Ok(None)` when another process holds it.
pub fn hold(root: &Root) -> io::Result<Option<Held>> {
    let dir = OutDir::open(root, RUN_DIR, Trust::Own)
        .map_err(|e| io::Error::other(format!("{}: {e}", root.join(RUN_DIR).display())))?;
    let fd = dir.lock_file(LOCK)?;
    match rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(Held { dir, _fd: fd })),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Held {
    /// Records a registration answered at `at`, on `socket` (`None`: pre-registered).
    pub fn registered(&self, socket: Option<&Path>, at: SystemTime) -> io::Result<()> {
        let now = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let r = Registration {
            at_secs: now.as_secs(),
            at_nanos: now.subsec_nanos(),
            socket: socket.map(|p| p.display().to_string()),
        };
        let text = serde_json::to_vec(&r).map_err(io::Error::other)?;
        self.dir
            .write_atomic(REGISTERED, 0o644, |w| io::Write::write_all(w, &text))
    }
}

/// Whether another process holds [`LOCK`] below `root` (a missing file: no).
fn lock_held(root: &Root) -> io::Result<bool> {
    let Some(dir) = OutDir::existing(root, RUN_DIR, Trust::Own)? else {
        return Ok(false);
    };
    let Some(fd) = dir.existing_lock_file(LOCK)? else {
        return Ok(false);
    };
    match rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockShared) {
        Ok(()) => Ok(false),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Whether the gate is up below `root`: the lock held and the last registration newer than
/// its runtime's socket. Anything unreadable says down, and why is logged.
pub fn connected(root: &Root) -> bool {
    match connected_or_why(root) {
        Ok(up) => up,
        Err(e) => {
            tracing::debug!("NRI gate taken as down: {e}");
            false
        }
    }
}

fn connected_or_why(root: &Root) -> io::Result<bool> {
    if !lock_held(root)? {
        return Ok(false);
    }
    let rel = format!("{RUN_DIR}/{REGISTERED}");
    let Some(bytes) = root
        .read_bytes(&rel)
        .map_err(|e| io::Error::other(e.to_string()))?
    else {
        return Ok(false);
    };
    let r: Registration = serde_json::from_slice(&bytes)
        .map_err(|e| io::Error::other(format!("{}: {e}", root.join(&rel).display())))?;
    let Some(socket) = r.socket else {
        return Ok(true);
    };
    let at = UNIX_EPOCH + Duration::new(r.at_secs, r.at_nanos);
    let started =
        std::fs::symlink_metadata(root.join(socket.trim_start_matches('/')))?.modified()?;
    Ok(at >= started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_only_while_held_and_registered_after_the_runtime_started() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("var/run/nri")).unwrap();
        let socket = dir.path().join("var/run/nri/nri.sock");
        std::fs::write(&socket, "").unwrap();
        assert!(!connected(&root), "nothing there");
        let held = hold(&root).unwrap().expect("free");
        assert!(!connected(&root), "held, never registered");
        assert!(
            hold(&root).unwrap().is_none(),
            "a second plugin is kept out"
        );
        held.registered(Some(Path::new("/var/run/nri/nri.sock")), SystemTime::now())
            .unwrap();
        assert!(connected(&root));
        // The runtime restarts: its socket is newer than the registration.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::remove_file(&socket).unwrap();
        std::fs::write(&socket, "").unwrap();
        assert!(!connected(&root), "registered before the runtime's restart");
        held.registered(Some(Path::new("/var/run/nri/nri.sock")), SystemTime::now())
            .unwrap();
        assert!(connected(&root));
        drop(held);
        assert!(!connected(&root), "the lock is gone");
    }

    #[test]
    fn a_pre_registered_plugin_is_up_while_it_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let held = hold(&root).unwrap().unwrap();
        held.registered(None, SystemTime::now()).unwrap();
        assert!(connected(&root));
        drop(held);
        assert!(!connected(&root));
    }
}
