//! The live registration probe on this machine ([`Call::ProbeDevice`](super::Call)): open a
//! device, read a list while it is open, close it and time the close.
//!
//! Opening a device runs its driver, so only a character device the kernel itself names as
//! asked (`DEVNAME=` in `/sys/dev/char/MAJ:MIN/uevent`) is opened: a symlink, or another node in
//! its place (a watchdog, which an open arms), is refused unopened. The close is timed because,
//! when nfs-gds is the device's last user, nvidia-fs waits in rpcrdma's unregister then.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::Instant;

use rustix::fs::{Mode, OFlags};

use super::call::Probed;

/// The most read of the list (nvidia-fs lists a handful of drivers).
const LIST_CAP: u64 = 1 << 20;

/// Opens `device` when it is the node the kernel names `name`, reads `list` while it is open,
/// and closes it.
pub fn probe(device: &Path, name: &str, list: &Path) -> Probed {
    let handle = match open_device(device, name) {
        Ok(f) => f,
        Err(e) => return Probed::CannotOpen(e),
    };
    let list = read_list(list);
    let start = Instant::now();
    drop(handle);
    Probed::Opened {
        list,
        close: start.elapsed(),
    }
}

/// The text of `list`, at most [`LIST_CAP`] bytes of it.
fn read_list(list: &Path) -> Result<String, String> {
    let shown = list.display();
    let mut bytes = Vec::new();
    File::open(list)
        .and_then(|f| f.take(LIST_CAP).read_to_end(&mut bytes))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("{shown} does not exist"),
            _ => format!("cannot read {shown}: {e}"),
        })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Opens `dev` when it is the character device the kernel names `name`, never following a
/// symlink; anything else is refused before it is opened.
fn open_device(dev: &Path, name: &str) -> Result<File, String> {
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
    let mut uevent = String::new();
    let _ = File::open(format!("/sys/dev/char/{major}:{minor}/uevent"))
        .and_then(|f| f.take(LIST_CAP).read_to_string(&mut uevent));
    let named = device_name(&uevent);
    if named != Some(name) {
        return Err(format!(
            "{shown} is character device {major}:{minor}, which the kernel names {}, not {name}: not opening it",
            named.unwrap_or("(unknown)")
        ));
    }
    // The magic link opens the very node just checked.
    let reopen = format!("/proc/self/fd/{}", checked.as_raw_fd());
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(OFlags::NOCTTY.bits() as i32)
        .open(&reopen)
        .map_err(|e| format!("{shown}: {e}"))
}

/// The `DEVNAME=` of a `/sys/dev/char/MAJ:MIN/uevent`: the node name the kernel gave the device.
pub fn device_name(uevent: &str) -> Option<&str> {
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_node_the_kernel_names_is_opened() {
        let e = open_device(Path::new("/dev/null"), "nvidia-fs0").unwrap_err();
        assert!(
            e.contains("which the kernel names null, not nvidia-fs0: not opening it"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("nvidia-fs0");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = open_device(&fifo, "nvidia-fs0").unwrap_err();
        assert!(e.contains("is not a character device"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let e = open_device(&link, "null").unwrap_err();
        assert!(
            e.contains("is not a character device"),
            "a symlink is not followed: {e}"
        );
        assert!(matches!(
            probe(&fifo, "nvidia-fs0", Path::new("/nonexistent")),
            Probed::CannotOpen(_)
        ));
    }

    #[test]
    fn the_named_node_is_opened_and_the_list_read_while_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("modules");
        std::fs::write(&list, "rpcrdma: (null)\n").unwrap();
        match probe(Path::new("/dev/null"), "null", &list) {
            Probed::Opened { list, .. } => assert_eq!(list.as_deref(), Ok("rpcrdma: (null)\n")),
            other => panic!("{other:?}"),
        }
        match probe(Path::new("/dev/null"), "null", &dir.path().join("missing")) {
            Probed::Opened { list: Err(e), .. } => assert!(e.ends_with("does not exist"), "{e}"),
            other => panic!("{other:?}"),
        }
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
