//! `watch`: while a workload runs, sample one mount's mountstats counters and nvidia-fs's
//! counters at the start and the end, and say what happened ([`report`]). Sampling is behind
//! [`Sampler`], so the judgement is tested on snapshots; [`RootSampler`] reads the files below
//! the root. Nothing here writes: not the stats file (a write resets it), not a module
//! parameter.

pub mod report;

use std::path::PathBuf;
use std::time::Duration;

use crate::host::mounts::counters::{parse_mount_counters, MountCounters};
use crate::host::mounts::MOUNTSTATS;
use crate::host::platform::nvfs_stats::{read_nvfs_stats, NvfsStats};
use crate::host::{HostError, Root};
use crate::system::System;
use report::WatchReport;

/// Both counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// The mount's record; `None` when mountstats no longer has it (unmounted meanwhile).
    pub mount: Option<MountCounters>,
    /// nvidia-fs's counters; `None` when it publishes none (not loaded), `Err` when not
    /// understood.
    pub nvfs: Option<Result<NvfsStats, String>>,
}

pub trait Sampler {
    fn sample(&mut self) -> Result<Sample, HostError>;
}

/// Reads the mount's record of `proc/self/mountstats` and `proc/driver/nvidia-fs/stats` below
/// the root.
#[derive(Debug, Clone)]
pub struct RootSampler {
    pub root: Root,
    pub mount_point: PathBuf,
    pub device: String,
    /// Which record of that mount point and device (stacked mounts of one export).
    pub nth: usize,
}

impl Sampler for RootSampler {
    fn sample(&mut self) -> Result<Sample, HostError> {
        let mount = self
            .root
            .read_bytes(MOUNTSTATS)?
            .and_then(|t| parse_mount_counters(&t, &self.mount_point, &self.device, self.nth));
        Ok(Sample {
            mount,
            nvfs: read_nvfs_stats(&self.root)?,
        })
    }
}

/// Samples, waits `seconds` (the system's sleep, so tests need not sleep), samples again,
/// judges. `started` is told once the first sample is taken.
pub fn watch(
    sampler: &mut dyn Sampler,
    seconds: u64,
    system: &dyn System,
    started: &mut dyn FnMut(),
) -> Result<WatchReport, HostError> {
    let start = sampler.sample()?;
    started();
    system.sleep(Duration::from_secs(seconds));
    let end = sampler.sample()?;
    Ok(WatchReport::judge(&start, &end, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::Outcome;

    struct Snapshots(Vec<Sample>);

    impl Sampler for Snapshots {
        fn sample(&mut self) -> Result<Sample, HostError> {
            Ok(self.0.remove(0))
        }
    }

    #[test]
    fn the_wait_is_between_the_two_samples() {
        let read = |bytes| Sample {
            mount: Some(MountCounters {
                read_ops: bytes / 4096,
                read_bytes: bytes,
                transports: vec!["rdma".into()],
                ..Default::default()
            }),
            nvfs: None,
        };
        let mut s = Snapshots(vec![read(0), read(1 << 30)]);
        let system = crate::system::Fake::new();
        let mut told = 0;
        let r = watch(&mut s, 7, &system, &mut || told += 1).unwrap();
        assert_eq!(system.sleeps(), [Duration::from_secs(7)]);
        assert_eq!(told, 1);
        assert_eq!(r.mount.read_bytes, 1 << 30);
        assert_eq!(r.outcome, Outcome::NvidiaFsAbsent);
    }
}
