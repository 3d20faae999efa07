//! nvidia-fs's own counters: `/proc/driver/nvidia-fs/stats`.
//!
//! Each counter line is `Name<tabs>: key=value key=value …` (`Reads : err=0 io_state_err=0`);
//! the header lines are `Name: value` (`Active Process: 0`, `IO stats: Enabled, peer IO stats:
//! Disabled`); each GPU has a `GPU <bdf> uuid:<uuid> : Registered_MiB=…` line. The read and write
//! operation counts (`Reads n=`, `readMiB=`, `Writes n=`, `writeMiB=`, `Batches`) are printed and
//! counted only while the module parameter `rw_stats_enabled` is 1 (off by default); without them
//! the `Reads`/`Writes` lines carry only their error counts. A section may print twice (`Reads`:
//! counts, then bandwidth and latency); keys are kept per section. Writing to the file resets the
//! counters, so nothing here ever writes.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

pub const STATS: &str = "proc/driver/nvidia-fs/stats";

/// The module parameter that turns the IO counters on.
pub const RW_STATS_PARAMETER: &str = "/sys/module/nvidia_fs/parameters/rw_stats_enabled";

/// One `key=value` of a section (`Reads`, `n`, 38912).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NvfsCounter {
    pub section: String,
    pub key: String,
    pub value: u64,
}

/// One `GPU <bdf> uuid:<uuid> : …` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NvfsGpuStats {
    pub address: String,
    pub uuid: String,
    pub counters: Vec<(String, u64)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NvfsStats {
    /// `NVFS Driver(version: 2.28.4)`.
    pub driver_version: Option<String>,
    /// `IO stats: Enabled` — the read and write counts are being kept.
    pub io_stats_enabled: bool,
    /// `peer IO stats: Enabled` (`peer_stats_enabled`).
    pub peer_io_stats_enabled: bool,
    /// `Active Shadow-Buffer (MiB)`.
    pub active_shadow_buffer_mib: u64,
    /// `Active Process`.
    pub active_processes: u64,
    pub counters: Vec<NvfsCounter>,
    pub gpus: Vec<NvfsGpuStats>,
}

impl NvfsStats {
    /// A counter by section and key (`("Reads", "n")`); the first when a section prints twice.
    pub fn get(&self, section: &str, key: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|c| c.section == section && c.key == key)
            .map(|c| c.value)
    }

    /// Reads through nvidia-fs and MiB they moved, when IO statistics are on.
    pub fn reads(&self) -> Option<(u64, u64)> {
        Some((self.get("Reads", "n")?, self.get("Reads", "readMiB")?))
    }

    /// Writes through nvidia-fs and MiB they moved, when IO statistics are on.
    pub fn writes(&self) -> Option<(u64, u64)> {
        Some((self.get("Writes", "n")?, self.get("Writes", "writeMiB")?))
    }

    /// The error counters: every key of the `Error` section, and every key naming an error
    /// (`err`, `io_state_err`, `pg-cache-fail`, `pg-cache-eio`) of the others.
    pub fn errors(&self) -> impl Iterator<Item = &NvfsCounter> {
        self.counters.iter().filter(|c| {
            c.section == "Error"
                || c.key.contains("err")
                || c.key.ends_with("-fail")
                || c.key.ends_with("-eio")
        })
    }
}

/// Why a stats file was not understood: names the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct StatsLineError {
    pub line: usize,
    pub reason: String,
}

/// Parses the stats file. A line of an unknown section is kept as it is; a counter whose value is
/// not a number is an error that names its line (the format changed, and guessing would publish
/// wrong numbers).
pub fn parse_nvfs_stats(text: &str) -> Result<NvfsStats, StatsLineError> {
    let mut s = NvfsStats::default();
    let mut seen_header = false;
    for (i, line) in text.lines().enumerate() {
        let err = |reason: String| StatsLineError {
            line: i + 1,
            reason,
        };
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("GPU ") {
            s.gpus.push(parse_gpu_line(rest).map_err(err)?);
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        let value = value.trim();
        match name {
            "NVFS statistics(ver" | "GDS Version" | "Logging level" => seen_header = true,
            "NVFS Driver(version" => {
                s.driver_version = Some(value.trim_end_matches(')').trim().to_string())
            }
            "Mellanox PeerDirect Supported" => {}
            "IO stats" => {
                // `Enabled, peer IO stats: Disabled`
                s.io_stats_enabled = value.starts_with("Enabled");
                s.peer_io_stats_enabled = value
                    .split_once("peer IO stats:")
                    .is_some_and(|(_, p)| p.trim().starts_with("Enabled"));
            }
            "Active Shadow-Buffer (MiB)" => {
                s.active_shadow_buffer_mib = number(value).map_err(err)?
            }
            "Active Process" => s.active_processes = number(value).map_err(err)?,
            section => {
                for pair in value.split_whitespace() {
                    let Some((key, v)) = pair.split_once('=') else {
                        continue;
                    };
                    s.counters.push(NvfsCounter {
                        section: section.to_string(),
                        key: key.to_string(),
                        value: number(v).map_err(|e| err(format!("{section} {key}: {e}")))?,
                    });
                }
            }
        }
    }
    if !seen_header && s.counters.is_empty() {
        return Err(StatsLineError {
            line: 1,
            reason: "not an nvidia-fs stats file (no `NVFS statistics` header, no counter)".into(),
        });
    }
    Ok(s)
}

fn number(v: &str) -> Result<u64, String> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| format!("`{v}` is not a count"))
}

/// `0000:3b:00.0 uuid:… : Registered_MiB=1024 …` (after `GPU `).
fn parse_gpu_line(rest: &str) -> Result<NvfsGpuStats, String> {
    let (head, counters) = rest
        .split_once(" : ")
        .ok_or_else(|| format!("GPU line without ` : `: {rest}"))?;
    let mut words = head.split_whitespace();
    let address = words.next().unwrap_or_default().to_string();
    let uuid = words
        .find_map(|w| w.strip_prefix("uuid:"))
        .unwrap_or_default()
        .to_string();
    let counters = counters
        .split_whitespace()
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| Ok((k.to_string(), number(v)?)))
        .collect::<Result<_, String>>()?;
    Ok(NvfsGpuStats {
        address,
        uuid,
        counters,
    })
}

/// The stats file; `None` when nvidia-fs publishes none (not loaded).
pub fn read_nvfs_stats(root: &Root) -> Result<Option<Result<NvfsStats, String>>, HostError> {
    Ok(root.read_text_lossy(STATS)?.map(|text| {
        parse_nvfs_stats(&text).map_err(|e| format!("{}: {e}", root.join(STATS).display()))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISABLED: &str =
        include_str!("../../../tests/fixtures/nvidia-fs/stats-2.28.4-disabled.txt");
    const ENABLED: &str = include_str!("../../../tests/fixtures/nvidia-fs/stats-enabled.txt");
    /// Written by NVIDIA's nvidia-fs from Debian's nvidia-fs-dkms, loaded on the Debian 12 and 13
    /// test guests' kernels (tests/vm, `nvfs-proc-formats-nvidia`), IO counters off.
    const DEBIAN_RELEASES: [(&str, &str, &str); 2] = [
        (
            include_str!("../../../tests/fixtures/nvidia-fs/stats-2.13.5-disabled.txt"),
            "2.13.5",
            "1.4.0.29",
        ),
        (
            include_str!("../../../tests/fixtures/nvidia-fs/stats-2.19.7-disabled.txt"),
            "2.19.7",
            "1.9.1.3",
        ),
    ];

    #[test]
    fn the_real_2_28_4_layout_with_io_counters_off() {
        let s = parse_nvfs_stats(DISABLED).unwrap();
        assert_eq!(s.driver_version.as_deref(), Some("2.28.4"));
        assert!(!s.io_stats_enabled);
        assert!(!s.peer_io_stats_enabled);
        assert_eq!(s.reads(), None, "no n=/readMiB= while rw_stats_enabled=0");
        assert_eq!(s.get("Reads", "err"), Some(0));
        assert_eq!(s.get("Sparse Reads", "holes"), Some(0));
        assert_eq!(s.get("Bar1-map", "delay-frees"), Some(0));
        assert_eq!(s.get("Ops", "BatchIO"), Some(0));
        assert_eq!(s.get("Writes", "pg-cache-eio"), Some(0));
        assert!(s.gpus.is_empty());
        let errors: Vec<_> = s.errors().map(|c| (&*c.section, &*c.key)).collect();
        assert!(errors.contains(&("Error", "dma-map")));
        assert!(errors.contains(&("Writes", "pg-cache-fail")));
        assert!(!errors.contains(&("Mmap", "munmap")));
    }

    #[test]
    fn debian_releases_2_13_5_and_2_19_7_as_their_drivers_write_them() {
        for (text, version, gds) in DEBIAN_RELEASES {
            // The same layout as 2.28.4 with IO counters off; only the two version lines differ.
            assert!(
                text.starts_with(&format!("GDS Version: {gds} \n")),
                "{version}"
            );
            let s = parse_nvfs_stats(text).unwrap_or_else(|e| panic!("{version}: {e}"));
            assert_eq!(s.driver_version.as_deref(), Some(version));
            assert!(!s.io_stats_enabled, "{version}");
            assert!(!s.peer_io_stats_enabled, "{version}");
            assert_eq!(s.reads(), None, "{version}");
            assert_eq!(s.writes(), None, "{version}");
            assert_eq!((s.active_shadow_buffer_mib, s.active_processes), (0, 0));
            assert_eq!(s.get("Reads", "io_state_err"), Some(0), "{version}");
            assert_eq!(s.get("Sparse Reads", "pages"), Some(0), "{version}");
            assert_eq!(s.get("Bar1-map", "active"), Some(0), "{version}");
            assert_eq!(s.get("Ops", "Read"), Some(0), "{version}");
            assert!(s.gpus.is_empty(), "{version}: no GPU in the guests");
            let mut sections: Vec<_> = s.counters.iter().map(|c| c.section.as_str()).collect();
            sections.dedup();
            assert_eq!(
                sections,
                [
                    "Reads",
                    "Sparse Reads",
                    "Writes",
                    "Mmap",
                    "Bar1-map",
                    "Error",
                    "Ops"
                ],
                "{version}"
            );
            assert_eq!(
                s.errors().count(),
                parse_nvfs_stats(DISABLED).unwrap().errors().count(),
                "{version}: the same error counters as 2.28.4"
            );
        }
    }

    #[test]
    fn the_enabled_layout_counts_reads_and_writes() {
        let s = parse_nvfs_stats(ENABLED).unwrap();
        assert!(s.io_stats_enabled);
        assert_eq!(s.reads(), Some((38912, 38912)));
        assert_eq!(s.writes(), Some((12, 12)));
        assert_eq!(s.get("Reads", "err"), Some(2));
        assert_eq!(s.get("Reads", "Bandwidth(MiB/s)"), Some(20480));
        assert_eq!(s.active_shadow_buffer_mib, 16);
        assert_eq!(s.active_processes, 1);
        assert_eq!(s.gpus.len(), 1);
        assert_eq!(s.gpus[0].address, "0000:3b:00.0");
        assert!(s.gpus[0].uuid.starts_with("4a1c7e2b"));
        assert_eq!(s.gpus[0].counters[0], ("Registered_MiB".to_string(), 1024));
    }

    #[test]
    fn a_changed_format_names_its_line() {
        let e = parse_nvfs_stats("NVFS statistics(ver: 4.0)\nReads : n=lots\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("Reads n"), "{e}");
        let e = parse_nvfs_stats("hello\nworld\n").unwrap_err();
        assert!(e.reason.contains("not an nvidia-fs stats file"));
    }
}
