//! The live registration probe: does rpcrdma really register its hooks with nvidia-fs? The one
//! host read with a side effect; [`nvfs-registration`](crate::checks::catalogue::nvfs_registration)
//! judges its outcome.
//!
//! nvidia-fs looks the hooks up only when `/dev/nvidia-fsN` is opened, and lists a driver in
//! `/proc/driver/nvidia-fs/modules` only while a handle is open and registration worked. So the
//! probe opens `/dev/nvidia-fs0`, reads that list, and closes; when it is the last user, the close
//! waits in rpcrdma's unregister for about a second. Opt-in (`doctor --probe`), because it makes
//! nvidia-fs take a reference on rpcrdma for that moment.

use std::fs::File;
use std::time::Instant;

use serde::Serialize;

use super::nvidia_fs::parse_registered_modules;
use super::Root;

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

/// Opens the device (below the root, so fixture trees work the same way), reads the list of
/// registered drivers while it is open, and closes it.
pub fn probe(root: &Root) -> ProbeOutcome {
    let dev = root.join("dev/nvidia-fs0");
    let handle = match File::open(&dev) {
        Ok(f) => f,
        Err(e) => return ProbeOutcome::CannotOpen(format!("{}: {e}", dev.display())),
    };
    let list = root.read_text("proc/driver/nvidia-fs/modules");
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

/// The kernel log line that names the GPL-only refusal for the rpcrdma hook.
pub const GPL_REFUSAL_LINE: &str =
    "failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops";
