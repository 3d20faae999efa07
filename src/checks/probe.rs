//! The live registration probe: does rpcrdma really register its hooks with nvidia-fs?
//!
//! nvidia-fs looks the hooks up only when `/dev/nvidia-fsN` is opened, and lists a driver in
//! `/proc/driver/nvidia-fs/modules` only while a handle is open and registration worked. So the
//! probe opens `/dev/nvidia-fs0`, reads that list, and closes; when it is the last user, the close
//! waits in rpcrdma's unregister for about a second. Opt-in (`doctor --probe`), because it makes
//! nvidia-fs take a reference on rpcrdma for that moment.

use std::fs::File;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::checks::{CheckId, CheckResult};
use crate::host::nvidia_fs::parse_registered_modules;
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

pub trait Prober {
    fn probe(&self, root: &Root) -> ProbeOutcome;
}

/// Opens the real device (below the root, so fixture trees work the same way).
#[derive(Debug, Default)]
pub struct DeviceProber;

impl Prober for DeviceProber {
    fn probe(&self, root: &Root) -> ProbeOutcome {
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
}

/// The kernel log line that names the GPL-only refusal for the rpcrdma hook.
pub const GPL_REFUSAL_LINE: &str =
    "failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops";

/// Judges the probe, using kernel log lines (if readable) to explain a failure.
pub fn judge(outcome: &ProbeOutcome, kernel_log: Option<&str>) -> CheckResult {
    let id = CheckId::NvfsRegistration;
    let refusal = kernel_log.and_then(|log| {
        log.lines()
            .rev()
            .find(|l| l.contains(GPL_REFUSAL_LINE))
            .map(|l| l.trim().to_string())
    });
    let with_log = |r: CheckResult| match &refusal {
        Some(l) => r.with("kernel log", l.clone()),
        None => r,
    };
    match outcome {
        ProbeOutcome::CannotOpen(e) => with_log(
            CheckResult::fail(id, format!("cannot open the nvidia-fs device: {e}")).remedy(
                "load nvidia_fs and make sure /dev/nvidia-fs0 exists (see nvidia-fs-loaded)",
            ),
        ),
        ProbeOutcome::CannotRead(e) => with_log(CheckResult::unknown(
            id,
            format!("opened the nvidia-fs device but could not read the registered drivers: {e}"),
        )),
        ProbeOutcome::Registered { modules, close_ms } => {
            let seen = if modules.is_empty() {
                "(none)".to_string()
            } else {
                modules.join(", ")
            };
            if modules.iter().any(|m| m == "rpcrdma") {
                CheckResult::pass(id, "rpcrdma registered its nvfs hooks with nvidia-fs")
                    .with("/proc/driver/nvidia-fs/modules", seen)
                    .with("close took", format!("{close_ms} ms"))
            } else if refusal.is_some() {
                with_log(
                    CheckResult::fail(id, "rpcrdma did not register: the kernel refused nvidia-fs's __symbol_get of its plain-exported hook")
                        .with("/proc/driver/nvidia-fs/modules", seen)
                        .remedy("install an rpcrdma that exports the hooks with EXPORT_SYMBOL_GPL (MLNX_OFED / DOCA-OFED 24.04 or later)"),
                )
            } else {
                CheckResult::fail(id, "rpcrdma did not register with nvidia-fs while the device was open: GDS over NFS falls back to bounce buffers")
                    .with("/proc/driver/nvidia-fs/modules", seen)
                    .remedy("see the rpcrdma-* checks: the loaded rpcrdma lacks usable hooks, or it is not loaded")
            }
        }
    }
}

/// How long the last close may legitimately block (rpcrdma's unregister sleeps 1 s per loop).
pub const EXPECTED_CLOSE: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;

    #[test]
    fn registration_is_seen_in_the_modules_list() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/driver/nvidia-fs")).unwrap();
        std::fs::write(dir.path().join("dev/nvidia-fs0"), "").unwrap();
        std::fs::write(
            dir.path().join("proc/driver/nvidia-fs/modules"),
            "wekafsio: 1\nrpcrdma: (null)\n",
        )
        .unwrap();
        let out = DeviceProber.probe(&Root::new(dir.path()));
        let r = judge(&out, None);
        assert_eq!(r.status, Status::Pass, "{r:?}");
    }

    #[test]
    fn gpl_refusal_is_explained() {
        let out = ProbeOutcome::Registered {
            modules: vec!["wekafsio".into()],
            close_ms: 0,
        };
        let log = "[  12.3] nvidia_fs: loaded\n[  99.1] failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops.\n";
        let r = judge(&out, Some(log));
        assert_eq!(r.status, Status::Fail);
        assert!(r.summary.contains("plain-exported"), "{}", r.summary);
        assert!(r.evidence.iter().any(|e| e.what == "kernel log"));
    }

    #[test]
    fn missing_device_fails() {
        let dir = tempfile::tempdir().unwrap();
        let r = judge(&DeviceProber.probe(&Root::new(dir.path())), None);
        assert_eq!(r.status, Status::Fail);
    }
}
