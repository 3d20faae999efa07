//! What NVIDIA's `gdscheck -p` says about NFS: the `NFS : …` line of its `DRIVER CONFIGURATION`
//! section, in every format since GDS 1.0.
//!
//! Before 1.16 the value is `Supported` or `Unsupported`. GDS 1.16 (CUDA 13.1) "Update[d]
//! gdscheck output to specify the modes (p2pdma, nvfs, compat) supported by libcufile"; the API
//! knows five P2P modes (`CUfileP2PFlags`: p2pdma, nvfs, dmabuf, c2c, nvidia_peermem), so the line
//! may name several, comma-separated (`NFS : nvfs, compat`), and still says `Unsupported` when
//! there is none. Only `nvfs` is GPU-direct for NFS: libcufile has no P2PDMA route for NFS
//! (non-NVMe mounts go through nvidia-fs's callbacks), yet gdscheck can print `p2pdma` on a
//! filesystem line when `properties.use_pci_p2pdma` is set globally (NVIDIA's gds-diag notes it
//! for Spectrum Scale). A `Platform verification error` line says gdscheck itself failed.
//!
//! gdscheck is run by doctor only (bounded, through its system), or its saved output is read
//! from a bundle; never by the mount helper.

use serde::Serialize;

/// The mode words libcufile knows (gdscheck 1.16+), plus `compat`.
pub const MODE_WORDS: [&str; 6] = [
    "p2pdma",
    "nvfs",
    "dmabuf",
    "c2c",
    "nvidia_peermem",
    "compat",
];

/// What the `NFS` line says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum NfsLine {
    /// `Supported` (before 1.16): libcufile would use nvidia-fs for NFS.
    Supported,
    /// `Unsupported`.
    Unsupported,
    /// 1.16+: the modes libcufile would use, in gdscheck's order.
    Modes { modes: Vec<String> },
    /// A value nfs-gds does not know.
    Unrecognised { value: String },
}

impl NfsLine {
    /// GPU-direct for NFS: `Supported` before 1.16, `nvfs` among the modes from 1.16.
    pub fn is_direct(&self) -> bool {
        match self {
            NfsLine::Supported => true,
            NfsLine::Modes { modes } => modes.iter().any(|m| m == "nvfs"),
            _ => false,
        }
    }

    /// `p2pdma` is on the line, which is no route for NFS.
    pub fn names_p2pdma(&self) -> bool {
        matches!(self, NfsLine::Modes { modes } if modes.iter().any(|m| m == "p2pdma"))
    }
}

/// The parts of `gdscheck -p` nfs-gds reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gdscheck {
    /// `GDS release version: 1.16.1.26`.
    pub release: Option<String>,
    /// The `NFS : …` line as printed (trimmed), and what it says; `None` without one.
    pub nfs: Option<(String, NfsLine)>,
    /// `properties.use_pci_p2pdma : true|false`, when printed (1.13+).
    pub use_pci_p2pdma: Option<bool>,
    /// A `Platform verification error` line: gdscheck could not check the platform.
    pub platform_error: Option<String>,
}

/// doctor's run of `gdscheck -p` (or a bundle's saved output): the program, and what it said or
/// why it said nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdscheckRun {
    pub program: String,
    pub answer: Result<Gdscheck, String>,
}

/// How long doctor lets `gdscheck -p` run: it opens every GPU and can hang on a wedged one.
pub const GDSCHECK_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `program -p` through `system` (bounded by [`GDSCHECK_LIMIT`]) and reads its answer.
pub fn run_gdscheck(system: &dyn crate::system::System, program: &str) -> GdscheckRun {
    use crate::system::Output;
    let answer = match system.run_bounded(program, &["-p"], GDSCHECK_LIMIT) {
        Output::Missing => Err(format!(
            "{program} -p gave no output (not run, or not saved in this bundle)"
        )),
        Output::Ran {
            code: None, stderr, ..
        } => Err(format!("{program} -p: {}", stderr.trim())),
        // gdscheck exits non-zero when something is unsupported; its report is still the answer.
        Output::Ran { stdout, stderr, .. } => {
            let g = parse_gdscheck(&stdout);
            if g.nfs.is_none() && g.platform_error.is_none() {
                Err(format!(
                    "{program} -p printed no `NFS :` line{}",
                    if stderr.trim().is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", stderr.trim())
                    }
                ))
            } else {
                Ok(g)
            }
        }
    };
    GdscheckRun {
        program: program.to_string(),
        answer,
    }
}

/// The value of `name : value` on a line of gdscheck's output (names are padded with spaces).
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let (key, value) = line.split_once(':')?;
    (key.trim() == name).then(|| value.trim())
}

/// Reads an `NFS` value.
pub fn parse_nfs_value(value: &str) -> NfsLine {
    match value {
        "Supported" => return NfsLine::Supported,
        "Unsupported" => return NfsLine::Unsupported,
        _ => {}
    }
    let words: Vec<String> = value
        .split(',')
        .map(|w| w.trim().to_ascii_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    if !words.is_empty() && words.iter().all(|w| MODE_WORDS.contains(&w.as_str())) {
        NfsLine::Modes { modes: words }
    } else {
        NfsLine::Unrecognised {
            value: value.to_string(),
        }
    }
}

/// Parses `gdscheck -p`'s output; nothing in it is required.
pub fn parse_gdscheck(text: &str) -> Gdscheck {
    let mut g = Gdscheck {
        release: None,
        nfs: None,
        use_pci_p2pdma: None,
        platform_error: None,
    };
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = field(t, "GDS release version") {
            g.release = Some(v.to_string());
        } else if let Some(v) = field(t, "NFS") {
            g.nfs
                .get_or_insert_with(|| (t.to_string(), parse_nfs_value(v)));
        } else if let Some(v) = field(t, "properties.use_pci_p2pdma") {
            g.use_pci_p2pdma = Some(v == "true");
        } else if t.starts_with("Platform verification error") {
            g.platform_error = Some(t.to_string());
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_every_format() {
        assert_eq!(parse_nfs_value("Supported"), NfsLine::Supported);
        assert_eq!(parse_nfs_value("Unsupported"), NfsLine::Unsupported);
        let m = parse_nfs_value("nvfs, compat");
        assert_eq!(
            m,
            NfsLine::Modes {
                modes: vec!["nvfs".into(), "compat".into()]
            }
        );
        assert!(m.is_direct());
        let p = parse_nfs_value("p2pdma");
        assert!(!p.is_direct() && p.names_p2pdma());
        assert!(!parse_nfs_value("compat").is_direct());
        assert!(parse_nfs_value("P2PDMA, NVFS").is_direct());
        assert_eq!(
            parse_nfs_value("Enabled (maybe)"),
            NfsLine::Unrecognised {
                value: "Enabled (maybe)".into()
            }
        );
    }

    #[test]
    fn the_nfs_line_is_found_among_padded_fields_and_no_other_line_counts() {
        let out = " GDS release version: 1.16.1.26\n nvidia_fs version:  2.27 nvidia_fs minimum version: 2.12\n =====================\n DRIVER CONFIGURATION:\n =====================\n NVMe               : Unsupported\n NFS                : Unsupported\n --rdma library        : Not Loaded (libcufile_rdma.so)\n properties.use_pci_p2pdma : false\n";
        let g = parse_gdscheck(out);
        assert_eq!(g.release.as_deref(), Some("1.16.1.26"));
        let (line, nfs) = g.nfs.unwrap();
        assert_eq!(line, "NFS                : Unsupported");
        assert_eq!(nfs, NfsLine::Unsupported);
        assert_eq!(g.use_pci_p2pdma, Some(false));
        assert!(g.platform_error.is_none());
        assert!(parse_gdscheck("").nfs.is_none());
        assert!(
            parse_gdscheck(" Platform verification error : Invalid argument\n")
                .platform_error
                .is_some()
        );
    }

    /// A fake gdscheck at `dir/gdscheck` with `body` as its script.
    fn fake_gdscheck(dir: &std::path::Path, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("gdscheck");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.to_str().unwrap().to_string()
    }

    /// This process's peak resident memory, in KiB (`VmHWM`).
    fn peak_rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Run alone in a process of its own by the test below, so that its peak memory is its own.
    #[test]
    #[ignore = "run in a process of its own by a_hostile_gdscheck_neither_hangs_doctor_nor_grows_it; by hand: `cargo test --lib -- --ignored host::platform::gdscheck`"]
    fn hostile_gdscheck_alone() {
        let dir = tempfile::tempdir().unwrap();
        let live = crate::system::Live::new(true);
        for (body, expect) in [
            ("echo ' NFS : nvfs'\nsleep 300 &", Ok(())),
            ("exec yes ' NFS : Unsupported'", Err("truncated")),
        ] {
            let program = fake_gdscheck(dir.path(), body);
            let started = std::time::Instant::now();
            let run = run_gdscheck(&live, &program);
            let took = started.elapsed();
            assert!(
                took < GDSCHECK_LIMIT + std::time::Duration::from_secs(2),
                "{body}: {took:?}"
            );
            assert!(took < std::time::Duration::from_secs(5), "{body}: {took:?}");
            match (run.answer, expect) {
                (Ok(g), Ok(())) => assert!(g.nfs.unwrap().1.is_direct()),
                (Err(e), Err(word)) => assert!(e.contains(word), "{e}"),
                (answer, _) => panic!("{body}: {answer:?}"),
            }
        }
        let peak = peak_rss_kib();
        assert!(peak < 64 * 1024, "peak RSS {peak} KiB");
    }

    #[test]
    fn a_hostile_gdscheck_neither_hangs_doctor_nor_grows_it() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "--ignored", "--nocapture"])
            .arg("host::platform::gdscheck::tests::hostile_gdscheck_alone")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("1 passed"), "{said}");
    }
}
