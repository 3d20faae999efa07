//! The live registration probe: does rpcrdma really register its hooks with nvidia-fs? The one
//! host read with a side effect; the `nvfs-registration` check
//! judges its outcome.
//!
//! nvidia-fs looks the hooks up only when `/dev/nvidia-fsN` is opened, and lists a driver in
//! `/proc/driver/nvidia-fs/modules` only while a handle is open and registration worked. So the
//! probe opens `/dev/nvidia-fs0`, reads that list, and closes; when it is the last user, the close
//! waits in rpcrdma's unregister for about a second. Opt-in (`doctor --probe`), because it makes
//! nvidia-fs take a reference on rpcrdma for that moment.
//!
//! Opening a device runs its driver, so the probe opens only a character device the kernel
//! itself names `nvidia-fs0` (`DEVNAME=` in `/sys/dev/char/MAJ:MIN/uevent`), and only on the
//! real host: a symlink or a node in
//! its place (a watchdog, which an open arms) is refused unopened. Below `--root` (a fixture, a
//! `collect` bundle) nothing is opened at all: a `dev/nvidia-fs0` entry stands for the device
//! and the recorded `proc/driver/nvidia-fs/modules` for what it listed.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::Instant;

use rustix::fs::{Mode, OFlags};

use serde::Serialize;

use crate::host::platform::nvidia_fs::parse_registered_modules;
use crate::host::Root;

/// What the probe saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ProbeOutcome {
    /// `/dev/nvidia-fs0` could not be opened.
    CannotOpen(String),
    /// Opened; these drivers were registered while it was open.
    Registered {
        modules: Vec<String>,
        close_ms: u128,
    },
    /// Opened, but the modules list could not be read.
    CannotRead(String),
}

/// The device the probe opens, as a host path.
const DEVICE: &str = "/dev/nvidia-fs0";

/// Opens the real device on the host, reads the list of registered drivers while it is open,
/// and closes it; below a root, reads what the tree recorded and opens nothing.
pub fn probe(root: &Root) -> ProbeOutcome {
    let handle = if root.is_host() {
        match open_device(Path::new(DEVICE)) {
            Ok(f) => Some(f),
            Err(e) => return ProbeOutcome::CannotOpen(e),
        }
    } else if root.exists(DEVICE) {
        None
    } else {
        return ProbeOutcome::CannotOpen(format!("{} does not exist", root.join(DEVICE).display()));
    };
    let list = root.read_text_lossy("proc/driver/nvidia-fs/modules");
    let start = Instant::now();
    drop(handle);
    let close_ms = start.elapsed().as_millis();
    match list {
        Ok(Some(text)) => ProbeOutcome::Registered {
            modules: parse_registered_modules(&text),
            close_ms,
        },
        Ok(None) => ProbeOutcome::CannotRead(format!(
            "{} does not exist",
            root.join("proc/driver/nvidia-fs/modules").display()
        )),
        Err(e) => ProbeOutcome::CannotRead(e.to_string()),
    }
}

/// Opens `dev` when it is the character device the kernel names `nvidia-fs0`, never following a
/// symlink; anything else is refused before it is opened.
fn open_device(dev: &Path) -> Result<File, String> {
    let shown = dev.display();
    let fd = rustix::fs::openat(
        rustix::fs::CWD,
        dev,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("{shown}: {}", std::io::Error::from(e)))?;
    let checked = File::from(fd);
    let meta = checked.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !meta.file_type().is_char_device() {
        return Err(format!("{shown} is not a character device: not opening it"));
    }
    let (major, minor) = (
        rustix::fs::major(meta.rdev()),
        rustix::fs::minor(meta.rdev()),
    );
    let uevent = Root::host()
        .read_text_lossy(format!("sys/dev/char/{major}:{minor}/uevent"))
        .ok()
        .flatten()
        .unwrap_or_default();
    let name = device_name(&uevent);
    if name != Some("nvidia-fs0") {
        return Err(format!(
            "{shown} is character device {major}:{minor}, which the kernel names {}, not nvidia-fs0: not opening it",
            name.unwrap_or("(unknown)")
        ));
    }
    // The magic link opens the very node just checked.
    let reopen = format!("/proc/self/fd/{}", checked.as_raw_fd());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(OFlags::NOCTTY.bits() as i32)
        .open(&reopen)
        .map_err(|e| format!("{shown}: {e}"))?;
    Ok(file)
}

/// The `DEVNAME=` of a `/sys/dev/char/MAJ:MIN/uevent`: the node name the kernel gave the device.
pub fn device_name(uevent: &str) -> Option<&str> {
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(str::trim)
}

/// The kernel log line that names the GPL-only refusal for the rpcrdma hook.
pub const GPL_REFUSAL_LINE: &str =
    "failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops";

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

    /// Runs the probe on a thread and fails the test if it does not return promptly.
    fn probe_promptly(root: &Path) -> ProbeOutcome {
        let root = Root::new(root);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(probe(&root));
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the probe hung opening the device")
    }

    #[test]
    fn a_bundle_device_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("dev")).unwrap();
        std::fs::create_dir_all(root.join("proc/driver/nvidia-fs")).unwrap();
        std::fs::write(
            root.join("proc/driver/nvidia-fs/modules"),
            "wekafsio: 1\nrpcrdma: (null)\n",
        )
        .unwrap();
        // A FIFO in the device's place: opening it would block until a writer came.
        let fifo = root.join("dev/nvidia-fs0");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let out = probe_promptly(&root);
        assert!(
            matches!(&out, ProbeOutcome::Registered { modules, .. } if modules.iter().any(|m| m == "rpcrdma")),
            "{out:?}"
        );
        // A symlink out of the bundle, to a FIFO outside it.
        std::fs::remove_file(&fifo).unwrap();
        let outside = dir.path().join("outside-fifo");
        nix::unistd::mkfifo(&outside, nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink(&outside, &fifo).unwrap();
        let out = probe_promptly(&root);
        assert!(matches!(out, ProbeOutcome::Registered { .. }), "{out:?}");
    }

    #[test]
    fn on_the_host_only_the_nvidia_fs_node_is_opened() {
        let e = open_device(Path::new("/dev/null")).unwrap_err();
        assert!(
            e.contains("which the kernel names null, not nvidia-fs0: not opening it"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("nvidia-fs0");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = open_device(&fifo).unwrap_err();
        assert!(e.contains("is not a character device"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let e = open_device(&link).unwrap_err();
        assert!(
            e.contains("is not a character device"),
            "a symlink is not followed: {e}"
        );
    }

    #[test]
    fn device_names_come_from_uevent() {
        assert_eq!(
            device_name("MAJOR=10\nMINOR=130\nDEVNAME=watchdog\n"),
            Some("watchdog")
        );
        assert_eq!(
            device_name("MAJOR=510\nMINOR=0\nDEVNAME=nvidia-fs0\nDEVMODE=0666\n"),
            Some("nvidia-fs0")
        );
        assert_eq!(device_name("MAJOR=1\n"), None);
    }
}
