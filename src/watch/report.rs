//! What a watched interval says: the mount's READ/WRITE payload and RDMA chunks against the bytes
//! nvidia-fs moved to and from GPUs. nvidia-fs's counters are the node's (every GDS file system),
//! the mount's are its own; the IO counters exist only while `rw_stats_enabled` is 1, which this
//! never sets.

use serde::Serialize;

use super::Sample;
use crate::host::mounts::counters::{MountCounters, RdmaCounters};
use crate::host::platform::nvfs_stats::{NvfsStats, RW_STATS_PARAMETER};

const MIB: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// nvidia-fs moved (nearly) what the mount served.
    GpuDirect,
    /// nvidia-fs moved some, clearly less than the mount served.
    PartlyGpuDirect,
    /// The mount served payload; nvidia-fs moved nothing.
    ThroughCpuMemory,
    /// nvidia-fs does not count reads and writes (`rw_stats_enabled=0`).
    IoStatsOff,
    /// nvidia-fs publishes no counters: it is not loaded.
    NvidiaFsAbsent,
    /// nvidia-fs's stats file was not understood.
    NvidiaFsUnreadable,
    /// nvidia-fs's counters went back while watched (its stats file was written).
    CountersReset,
    /// No READ or WRITE payload on the mount while watched.
    NoIo,
    /// The mount does not run over RDMA.
    NotRdma,
    /// The mount's record is not in mountstats (at the start or the end).
    MountGone,
}

impl Outcome {
    pub fn is_gpu_direct(self) -> bool {
        self == Outcome::GpuDirect
    }
}

/// How the nvidia-fs counters moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NvfsDelta {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchReport {
    pub seconds: u64,
    pub outcome: Outcome,
    pub summary: String,
    /// What the counters show beside the outcome (inline payloads, CPU copies, node-wide counts).
    pub notes: Vec<String>,
    /// How the mount's counters moved.
    pub mount: MountCounters,
    /// How nvidia-fs's moved, when both samples counted.
    pub nvidia_fs: Option<NvfsDelta>,
}

/// `38.0 GiB`, `512.0 MiB`, `3 bytes`.
pub fn size(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    if bytes >= GIB {
        format!("{:.1} GiB", bytes as f64 / GIB as f64)
    } else if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else if bytes >= 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}

fn mount_delta(a: &MountCounters, b: &MountCounters) -> MountCounters {
    let rdma = match (a.rdma, b.rdma) {
        (Some(x), Some(y)) => Some(RdmaCounters {
            read_chunks: y.read_chunks.saturating_sub(x.read_chunks),
            write_chunks: y.write_chunks.saturating_sub(x.write_chunks),
            reply_chunks: y.reply_chunks.saturating_sub(x.reply_chunks),
            pullup_copies: y.pullup_copies.saturating_sub(x.pullup_copies),
            fixup_copies: y.fixup_copies.saturating_sub(x.fixup_copies),
        }),
        _ => None,
    };
    MountCounters {
        read_ops: b.read_ops.saturating_sub(a.read_ops),
        write_ops: b.write_ops.saturating_sub(a.write_ops),
        read_bytes: b.read_bytes.saturating_sub(a.read_bytes),
        write_bytes: b.write_bytes.saturating_sub(a.write_bytes),
        transports: b.transports.clone(),
        rdma,
    }
}

/// nvidia-fs's counters from `a` to `b`; `None` when one went back (a reset).
fn nvfs_delta(a: &NvfsStats, b: &NvfsStats) -> Option<NvfsDelta> {
    let (ra, rb) = (a.reads().unwrap_or((0, 0)), b.reads().unwrap_or((0, 0)));
    let (wa, wb) = (a.writes().unwrap_or((0, 0)), b.writes().unwrap_or((0, 0)));
    Some(NvfsDelta {
        reads: rb.0.checked_sub(ra.0)?,
        read_bytes: rb.1.checked_sub(ra.1)?.saturating_mul(MIB),
        writes: wb.0.checked_sub(wa.0)?,
        write_bytes: wb.1.checked_sub(wa.1)?.saturating_mul(MIB),
    })
}

/// `served 38.0 GiB of READs and 1.0 GiB of WRITEs over RDMA`.
fn served(m: &MountCounters) -> String {
    let mut parts = Vec::new();
    if m.read_bytes > 0 {
        parts.push(format!("{} of READs", size(m.read_bytes)));
    }
    if m.write_bytes > 0 {
        parts.push(format!("{} of WRITEs", size(m.write_bytes)));
    }
    format!("served {} over RDMA", parts.join(" and "))
}

fn chunk_notes(m: &MountCounters) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(r) = m.rdma else {
        return notes;
    };
    if m.read_ops > 0 && r.write_chunks == 0 {
        notes.push(format!("{} READs and no RDMA write chunk: their payload came inline in the RPC replies, which is never GPU-direct (nvidia-fs's hooks map chunks only)", m.read_ops));
    }
    if r.pullup_copies + r.fixup_copies > 0 {
        notes.push(format!(
            "the RDMA transport copied payload with the CPU ({} pull-up and {} fix-up copies)",
            r.pullup_copies, r.fixup_copies
        ));
    }
    notes
}

impl WatchReport {
    pub fn judge(start: &Sample, end: &Sample, seconds: u64) -> WatchReport {
        let report = |outcome, summary: String, mount, nvidia_fs, notes| WatchReport {
            seconds,
            outcome,
            summary,
            notes,
            mount,
            nvidia_fs,
        };
        let (Some(a), Some(b)) = (&start.mount, &end.mount) else {
            return report(
                Outcome::MountGone,
                "the mount's record is not in mountstats at both samples: was it unmounted while watched?".into(),
                MountCounters::default(),
                None,
                Vec::new(),
            );
        };
        let m = mount_delta(a, b);
        let notes = chunk_notes(&m);
        if !b
            .transports
            .iter()
            .any(|t| crate::host::mounts::is_rdma_netid(t))
        {
            let over = if b.transports.is_empty() {
                "no transport mountstats shows".to_string()
            } else {
                b.transports.join("+")
            };
            return report(
                Outcome::NotRdma,
                format!("the mount runs over {over}, not RDMA: nothing on it can be GPU-direct"),
                m,
                None,
                notes,
            );
        }
        if m.read_bytes == 0 && m.write_bytes == 0 {
            return report(Outcome::NoIo, format!("the mount served no READ or WRITE payload in {seconds} s: nothing to judge (does the workload read this mount?)"), m, None, notes);
        }
        let served = served(&m);
        let (sa, sb) = match (&start.nvfs, &end.nvfs) {
            (Some(Ok(sa)), Some(Ok(sb))) => (sa, sb),
            (None, _) | (_, None) => {
                return report(Outcome::NvidiaFsAbsent, format!("the mount {served}, and nvidia-fs is not loaded: the workload reads through CPU memory"), m, None, notes)
            }
            (Some(Err(e)), _) | (_, Some(Err(e))) => {
                return report(Outcome::NvidiaFsUnreadable, format!("the mount {served}; nvidia-fs's counters were not understood ({e})"), m, None, notes)
            }
        };
        if !sa.io_stats_enabled || !sb.io_stats_enabled {
            return report(Outcome::IoStatsOff, format!("the mount {served}; IO statistics are off: `echo 1 > {RW_STATS_PARAMETER}` to count (as root; nfs-gds never changes a module parameter), then watch again"), m, None, notes);
        }
        let Some(n) = nvfs_delta(sa, sb) else {
            return report(Outcome::CountersReset, format!("the mount {served}; nvidia-fs's counters went back while watched (its stats file was written): watch again"), m, None, notes);
        };
        let mut notes = notes;
        let moved = n.read_bytes + n.write_bytes;
        let mount_bytes = m.read_bytes + m.write_bytes;
        if moved > mount_bytes.saturating_add(MIB) {
            notes.push("nvidia-fs moved more than this mount served: it counts every GDS file system of the node".into());
        }
        let (outcome, what) = if moved == 0 {
            (Outcome::ThroughCpuMemory, "nvidia-fs moved nothing: the workload reads through CPU memory (compat mode or a non-GDS reader)".to_string())
        } else if moved.saturating_mul(10) >= mount_bytes.saturating_mul(9) {
            (
                Outcome::GpuDirect,
                format!("nvidia-fs moved {} to GPUs: GPU-direct", size(moved)),
            )
        } else {
            (
                Outcome::PartlyGpuDirect,
                format!(
                    "nvidia-fs moved only {}: the rest went through CPU memory",
                    size(moved)
                ),
            )
        };
        report(
            outcome,
            format!("the mount {served} and {what}"),
            m,
            Some(n),
            notes,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::platform::nvfs_stats::parse_nvfs_stats;

    const GIB: u64 = 1 << 30;

    fn mount(read_bytes: u64, chunks: u64) -> Option<MountCounters> {
        Some(MountCounters {
            read_ops: read_bytes / MIB,
            read_bytes,
            transports: vec!["rdma".into(), "rdma".into()],
            rdma: Some(RdmaCounters {
                write_chunks: chunks,
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn nvfs(enabled: bool, reads: u64, read_mib: u64) -> Option<Result<NvfsStats, String>> {
        let text = if enabled {
            format!("NVFS statistics(ver: 4.0)\nIO stats: Enabled, peer IO stats: Disabled\nReads\t\t\t\t: n={reads} ok={reads} err=0 readMiB={read_mib} io_state_err=0\nWrites\t\t\t\t: n=0 ok=0 err=0 writeMiB=0 io_state_err=0 pg-cache=0 pg-cache-fail=0 pg-cache-eio=0\n")
        } else {
            include_str!("../../tests/fixtures/nvidia-fs/stats-2.28.4-disabled.txt").to_string()
        };
        Some(Ok(parse_nvfs_stats(&text).unwrap()))
    }

    fn sample(m: Option<MountCounters>, n: Option<Result<NvfsStats, String>>) -> Sample {
        Sample { mount: m, nvfs: n }
    }

    #[test]
    fn nvidia_fs_moving_what_the_mount_served_is_gpu_direct() {
        let r = WatchReport::judge(
            &sample(mount(0, 0), nvfs(true, 10, 100)),
            &sample(
                mount(38 * GIB, 38 * 1024),
                nvfs(true, 38_810, 100 + 38 * 1024 - 100),
            ),
            30,
        );
        assert_eq!(r.outcome, Outcome::GpuDirect, "{r:?}");
        assert_eq!(r.summary, "the mount served 38.0 GiB of READs over RDMA and nvidia-fs moved 37.9 GiB to GPUs: GPU-direct");
        assert_eq!(r.nvidia_fs.unwrap().reads, 38_800);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn nothing_through_nvidia_fs_is_the_cpu_path() {
        let r = WatchReport::judge(
            &sample(mount(0, 0), nvfs(true, 5, 5)),
            &sample(mount(2 * GIB, 0), nvfs(true, 5, 5)),
            10,
        );
        assert_eq!(r.outcome, Outcome::ThroughCpuMemory);
        assert!(r.summary.ends_with("nvidia-fs moved nothing: the workload reads through CPU memory (compat mode or a non-GDS reader)"), "{}", r.summary);
        assert!(r.notes[0].contains("inline"), "{:?}", r.notes);
        let r = WatchReport::judge(
            &sample(mount(0, 0), nvfs(true, 0, 0)),
            &sample(mount(10 * GIB, 9), nvfs(true, 5, 1024)),
            10,
        );
        assert_eq!(r.outcome, Outcome::PartlyGpuDirect, "{r:?}");
    }

    #[test]
    fn io_statistics_off_says_how_to_count_and_changes_nothing() {
        let r = WatchReport::judge(
            &sample(mount(0, 0), nvfs(false, 0, 0)),
            &sample(mount(GIB, 1), nvfs(false, 0, 0)),
            10,
        );
        assert_eq!(r.outcome, Outcome::IoStatsOff);
        assert!(r.summary.contains("IO statistics are off: `echo 1 > /sys/module/nvidia_fs/parameters/rw_stats_enabled` to count"), "{}", r.summary);
    }

    #[test]
    fn the_other_answers() {
        let judge = |a, b| WatchReport::judge(&a, &b, 5).outcome;
        assert_eq!(
            judge(sample(mount(0, 0), None), sample(mount(GIB, 1), None)),
            Outcome::NvidiaFsAbsent
        );
        assert_eq!(
            judge(
                sample(mount(0, 0), nvfs(true, 0, 0)),
                sample(mount(0, 0), nvfs(true, 0, 0))
            ),
            Outcome::NoIo
        );
        assert_eq!(
            judge(
                sample(mount(0, 0), nvfs(true, 9, 9)),
                sample(mount(GIB, 1), nvfs(true, 0, 0))
            ),
            Outcome::CountersReset
        );
        assert_eq!(
            judge(sample(mount(0, 0), None), sample(None, None)),
            Outcome::MountGone
        );
        let tcp = Some(MountCounters {
            read_bytes: GIB,
            transports: vec!["tcp".into()],
            ..Default::default()
        });
        assert_eq!(
            judge(sample(mount(0, 0), None), sample(tcp, None)),
            Outcome::NotRdma
        );
        let bad = Some(Err("line 2: changed".to_string()));
        assert_eq!(
            judge(sample(mount(0, 0), bad.clone()), sample(mount(GIB, 1), bad)),
            Outcome::NvidiaFsUnreadable
        );
    }
}
