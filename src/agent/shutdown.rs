//! How the agent's loop ends: on SIGTERM (kubelet stopping the pod, systemd stopping the unit)
//! or SIGINT, the wait between passes ends at once, the loop removes the readiness file (a
//! stopped agent vouches for nothing) and the process exits 0, as a clean stop should.
//!
//! The signals are taken by `signal-hook` (its handler only writes to a pipe; no work is done in
//! signal context) and delivered to a thread that wakes the waiting loop through a channel, so
//! the wait is a plain `recv_timeout` with no polling.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Receives the stop request.
#[derive(Debug)]
pub struct Shutdown {
    stop: Receiver<i32>,
}

/// What ended a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The interval passed: run the next pass.
    Due,
    /// A stop was asked for, by this signal.
    Stop(i32),
}

impl Shutdown {
    /// Starts listening for SIGTERM and SIGINT (from here on they no longer kill the process).
    pub fn listen() -> std::io::Result<Self> {
        let mut signals = Signals::new([SIGTERM, SIGINT])?;
        let (tx, stop) = mpsc::channel();
        std::thread::Builder::new()
            .name("nfs-gds-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let _ = tx.send(sig);
                }
            })?;
        Ok(Shutdown { stop })
    }

    /// Waits up to `interval`, less if a stop is asked for.
    pub fn wait(&self, interval: Duration) -> Wake {
        match self.stop.recv_timeout(interval) {
            Ok(sig) => Wake::Stop(sig),
            Err(RecvTimeoutError::Timeout) => Wake::Due,
            // The listening thread is gone: nothing will ask for a stop; keep the schedule.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(interval);
                Wake::Due
            }
        }
    }

    /// Whether a stop has been asked for already (checked after a pass, which may be long).
    pub fn stopping(&self) -> Option<i32> {
        self.stop.try_recv().ok()
    }
}
