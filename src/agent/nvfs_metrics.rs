//! nvidia-fs's own counters in the textfile, so a dashboard shows GPU-direct traffic next to the
//! mount's RDMA counters (node_exporter's mountstats series): operations and bytes through
//! nvidia-fs (only while `rw_stats_enabled` is 1, said by `nfs_gds_nvfs_io_stats_enabled`),
//! errors, BAR1 mappings, the shadow buffers and processes in use. Counters end in `_total` and
//! may reset (writing to the stats file resets them; Prometheus' `rate` handles that); sizes the
//! driver prints in MiB are published in bytes.

use std::io::{self, Write};

use super::prom::{header, typed_header, write_labels};
use crate::host::platform::nvfs_stats::NvfsStats;

const MIB: u64 = 1 << 20;

/// A section or key of the stats file as a label value (`Bar1-map` → `bar1_map`).
fn label_word(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' => c,
            _ => '_',
        })
        .collect()
}

fn sample(out: &mut impl Write, name: &str, labels: &[(&str, &str)], v: u64) -> io::Result<()> {
    out.write_all(name.as_bytes())?;
    if !labels.is_empty() {
        out.write_all(b"{")?;
        write_labels(out, labels)?;
        out.write_all(b"}")?;
    }
    writeln!(out, " {v}")
}

/// The nvidia-fs series; `stats` is `None` when the file is there but was not understood.
pub(super) fn write_nvfs_series(stats: Option<&NvfsStats>, out: &mut impl Write) -> io::Result<()> {
    header(
        out,
        "nfs_gds_nvfs_stats_readable",
        "1 when /proc/driver/nvidia-fs/stats was read and understood; 0 when it was not (the other nfs_gds_nvfs_ series are then absent).",
    )?;
    writeln!(
        out,
        "nfs_gds_nvfs_stats_readable {}",
        u8::from(stats.is_some())
    )?;
    let Some(s) = stats else {
        return Ok(());
    };
    header(
        out,
        "nfs_gds_nvfs_io_stats_enabled",
        "1 when nvidia-fs counts read and write operations (module parameter rw_stats_enabled=1); without it there are no operation or byte counters.",
    )?;
    writeln!(
        out,
        "nfs_gds_nvfs_io_stats_enabled {}",
        u8::from(s.io_stats_enabled)
    )?;
    let ops: Vec<(&str, u64)> = [("read", "Reads"), ("write", "Writes"), ("batch", "Batches")]
        .into_iter()
        .filter_map(|(op, section)| Some((op, s.get(section, "n")?)))
        .collect();
    if !ops.is_empty() {
        typed_header(
            out,
            "nfs_gds_nvfs_operations_total",
            "Read, write and batch operations through nvidia-fs (GPU-direct I/O).",
            "counter",
        )?;
        for (op, n) in ops {
            sample(out, "nfs_gds_nvfs_operations_total", &[("op", op)], n)?;
        }
    }
    let bytes: Vec<(&str, u64)> = [("read", s.reads()), ("write", s.writes())]
        .into_iter()
        .filter_map(|(op, v)| Some((op, v?.1)))
        .collect();
    if !bytes.is_empty() {
        typed_header(
            out,
            "nfs_gds_nvfs_bytes_total",
            "Bytes nvidia-fs moved between storage and GPU memory (counted by the driver in MiB).",
            "counter",
        )?;
        for (op, mib) in bytes {
            sample(
                out,
                "nfs_gds_nvfs_bytes_total",
                &[("op", op)],
                mib.saturating_mul(MIB),
            )?;
        }
    }
    typed_header(
        out,
        "nfs_gds_nvfs_errors_total",
        "Errors nvidia-fs counted, by the section and key of its stats file.",
        "counter",
    )?;
    for c in s.errors() {
        let (section, kind) = (label_word(&c.section), label_word(&c.key));
        sample(
            out,
            "nfs_gds_nvfs_errors_total",
            &[("section", &section), ("kind", &kind)],
            c.value,
        )?;
    }
    let counters = [
        (
            "nfs_gds_nvfs_bar1_mappings_total",
            "GPU memory BAR1 mappings nvidia-fs made (buffer registration: not proof of storage I/O).",
            s.get("Bar1-map", "n"),
        ),
        (
            "nfs_gds_nvfs_mmaps_total",
            "mmap calls on nvidia-fs devices.",
            s.get("Mmap", "n"),
        ),
    ];
    for (name, help, v) in counters {
        if let Some(v) = v {
            typed_header(out, name, help, "counter")?;
            sample(out, name, &[], v)?;
        }
    }
    let gauges = [
        (
            "nfs_gds_nvfs_bar1_mappings_active",
            "GPU memory BAR1 mappings active now.",
            s.get("Bar1-map", "active"),
        ),
        (
            "nfs_gds_nvfs_shadow_buffer_active_bytes",
            "Shadow buffers nvidia-fs holds now.",
            Some(s.active_shadow_buffer_mib.saturating_mul(MIB)),
        ),
        (
            "nfs_gds_nvfs_active_processes",
            "Processes with an nvidia-fs device open.",
            Some(s.active_processes),
        ),
    ];
    for (name, help, v) in gauges {
        if let Some(v) = v {
            header(out, name, help)?;
            sample(out, name, &[], v)?;
        }
    }
    let in_flight: Vec<(&str, u64)> = [("read", "Read"), ("write", "Write"), ("batch", "BatchIO")]
        .into_iter()
        .filter_map(|(op, key)| Some((op, s.get("Ops", key)?)))
        .collect();
    if !in_flight.is_empty() {
        header(
            out,
            "nfs_gds_nvfs_operations_in_flight",
            "Operations in nvidia-fs now (counted only while rw_stats_enabled=1).",
        )?;
        for (op, n) in in_flight {
            sample(out, "nfs_gds_nvfs_operations_in_flight", &[("op", op)], n)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::platform::nvfs_stats::parse_nvfs_stats;

    fn render(text: &str) -> String {
        let stats = parse_nvfs_stats(text).unwrap();
        let mut out = Vec::new();
        write_nvfs_series(Some(&stats), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The textfile collector's rules, as `promtool check metrics` applies them: every sample's
    /// metric has HELP and TYPE first, counters end in `_total` and gauges do not, names are
    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names `[a-zA-Z_][a-zA-Z0-9_]*`, no sample repeats.
    fn assert_promtool_clean(text: &str) {
        let mut types = std::collections::HashMap::new();
        let mut samples = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(
                    types.insert(name.to_string(), kind.to_string()).is_none(),
                    "{name} typed twice"
                );
                assert_eq!(
                    kind == "counter",
                    name.ends_with("_total"),
                    "{name}: {kind}"
                );
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(types.contains_key(name), "{name} has no TYPE before it");
            assert!(name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'));
            if let Some(labels) = line
                .split_once('{')
                .map(|(_, l)| l.split_once('}').unwrap().0)
            {
                for pair in labels.split("\",") {
                    let key = pair.split_once('=').unwrap().0;
                    assert!(
                        key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                        "{key}"
                    );
                }
            }
            let series = line.rsplit_once(' ').unwrap().0;
            assert!(samples.insert(series.to_string()), "{series} twice");
        }
    }

    #[test]
    fn io_counters_off_publish_errors_and_mappings_but_no_operations() {
        let text = render(include_str!(
            "../../tests/fixtures/nvidia-fs/stats-2.28.4-disabled.txt"
        ));
        assert_promtool_clean(&text);
        assert!(text.contains("nfs_gds_nvfs_stats_readable 1\n"));
        assert!(text.contains("nfs_gds_nvfs_io_stats_enabled 0\n"));
        assert!(!text.contains("nfs_gds_nvfs_operations_total"), "{text}");
        assert!(!text.contains("nfs_gds_nvfs_bytes_total"));
        assert!(text.contains("nfs_gds_nvfs_errors_total{section=\"error\",kind=\"dma_map\"} 0\n"));
        assert!(text
            .contains("nfs_gds_nvfs_errors_total{section=\"writes\",kind=\"pg_cache_eio\"} 0\n"));
        assert!(text.contains("nfs_gds_nvfs_bar1_mappings_total 0\n"));
    }

    #[test]
    fn io_counters_on_publish_operations_and_bytes() {
        let text = render(include_str!(
            "../../tests/fixtures/nvidia-fs/stats-enabled.txt"
        ));
        assert_promtool_clean(&text);
        assert!(text.contains("nfs_gds_nvfs_io_stats_enabled 1\n"));
        assert!(text.contains("# TYPE nfs_gds_nvfs_operations_total counter\n"));
        assert!(text.contains("nfs_gds_nvfs_operations_total{op=\"read\"} 38912\n"));
        assert!(text.contains("nfs_gds_nvfs_operations_total{op=\"batch\"} 0\n"));
        assert!(text.contains(&format!(
            "nfs_gds_nvfs_bytes_total{{op=\"read\"}} {}\n",
            38912u64 << 20
        )));
        assert!(text.contains("nfs_gds_nvfs_errors_total{section=\"reads\",kind=\"err\"} 2\n"));
        assert!(text.contains("nfs_gds_nvfs_bar1_mappings_active 1\n"));
        assert!(text.contains(&format!(
            "nfs_gds_nvfs_shadow_buffer_active_bytes {}\n",
            16u64 << 20
        )));
        assert!(text.contains("nfs_gds_nvfs_operations_in_flight{op=\"read\"} 3\n"));
    }

    #[test]
    fn an_unreadable_file_says_so_and_nothing_else() {
        let mut out = Vec::new();
        write_nvfs_series(None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_promtool_clean(&text);
        assert!(text.ends_with("nfs_gds_nvfs_stats_readable 0\n"));
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 1);
    }
}
