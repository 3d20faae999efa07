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
//! The open, the read and the close are one effect of the `System`
//! ([`Call::ProbeDevice`](crate::system::Call)): on this machine only the character device the
//! kernel itself names `nvidia-fs0` is opened; below `--root` (a fixture, a `collect` bundle)
//! nothing is opened at all: a `dev/nvidia-fs0` entry stands for the device and the recorded
//! `proc/driver/nvidia-fs/modules` for what it listed.

use std::path::Path;

use serde::Serialize;

use crate::host::platform::nvidia_fs::parse_registered_modules;
use crate::system::{Probed, System};

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

/// The device the probe opens, as a host path, and the name the kernel gives it.
const DEVICE: &str = "/dev/nvidia-fs0";
const DEVICE_NAME: &str = "nvidia-fs0";
/// What nvidia-fs lists while its device is open.
const MODULES: &str = "/proc/driver/nvidia-fs/modules";

/// Opens the device through `system`, reads the list of registered drivers while it is open,
/// and closes it.
pub fn probe(system: &dyn System) -> ProbeOutcome {
    match system.probe_device(Path::new(DEVICE), DEVICE_NAME, Path::new(MODULES)) {
        Probed::CannotOpen(why) => ProbeOutcome::CannotOpen(why),
        Probed::Opened {
            list: Ok(text),
            close,
        } => ProbeOutcome::Registered {
            modules: parse_registered_modules(&text),
            close_ms: close.as_millis(),
        },
        Probed::Opened { list: Err(why), .. } => ProbeOutcome::CannotRead(why),
    }
}

/// The kernel log line that names the GPL-only refusal for the rpcrdma hook.
pub const GPL_REFUSAL_LINE: &str =
    "failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::io::root::Root;
    use crate::host::io::tree_system::TreeSystem;
    use crate::system::{Answer, Call, Fake, Live};
    use std::time::Duration;

    /// Runs the probe below `root` on a thread and fails the test if it does not return promptly.
    fn probe_promptly(root: &Path) -> ProbeOutcome {
        let system = TreeSystem::new(Root::new(root), Live::new(true));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(probe(&system));
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
        // No entry: nothing stands for the device.
        std::fs::remove_file(&fifo).unwrap();
        let out = probe_promptly(&root);
        assert!(
            matches!(&out, ProbeOutcome::CannotOpen(why) if why.ends_with("dev/nvidia-fs0 does not exist")),
            "{out:?}"
        );
    }

    #[test]
    fn the_probe_is_one_call_of_the_system() {
        let fake = Fake::new();
        let out = probe(&fake);
        assert_eq!(fake.calls(), ["probe /dev/nvidia-fs0"]);
        assert!(matches!(out, ProbeOutcome::CannotOpen(_)), "{out:?}");
        let opened = |list: Result<String, String>| {
            Fake::new().on(move |call| match call {
                Call::ProbeDevice { name, list: l, .. }
                    if name == "nvidia-fs0" && l == Path::new(MODULES) =>
                {
                    Some(Answer::Probed(Probed::Opened {
                        list: list.clone(),
                        close: Duration::from_millis(1042),
                    }))
                }
                _ => None,
            })
        };
        assert_eq!(
            probe(&opened(Ok("wekafsio: 1\nrpcrdma: (null)\n".into()))),
            ProbeOutcome::Registered {
                modules: vec!["wekafsio".into(), "rpcrdma".into()],
                close_ms: 1042
            }
        );
        assert_eq!(
            probe(&opened(Err("cannot read it".into()))),
            ProbeOutcome::CannotRead("cannot read it".into())
        );
    }
}
