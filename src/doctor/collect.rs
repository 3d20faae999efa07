//! `nfs-gds collect`: a compressed archive of exactly what doctor reads, laid out as a root tree,
//! so `nfs-gds doctor --root <unpacked>` gives the same answer on another machine.
//!
//! Command outputs go under [`RECORDED_DIR`] where the [`RecordedRunner`](super::runner::RecordedRunner)
//! finds them. Nothing secret goes in: `/proc/kallsyms` is cut down to the hook lines, the kernel
//! log to the lines doctor looks for, and every file passes through [`redact`] on its way in
//! (credentials in mount options and the policy, kallsyms addresses). The archive is written
//! to a temporary file of mode 0600 beside `-o FILE` and renamed into place when complete; on
//! any error the partial file is removed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::redact;
use super::relevant_log_lines;
use super::runner::{record_key, Runner, RECORDED_DIR};
use super::stack::{Family, Stack};
use crate::host::facts::RPCRDMA;
use crate::host::gpl_rule::kernel_image;
use crate::host::modules::Resolution;
use crate::host::{HostError, HostFacts};

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What went into the archive.
#[derive(Debug, Default, Serialize)]
pub struct Collected {
    pub files: Vec<String>,
    pub commands: Vec<String>,
}

/// Text files copied as they are, when present (host paths).
const PLAIN_FILES: &[&str] = &[
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/arch",
    "/proc/version",
    "/proc/version_signature",
    "/proc/modules",
    "/proc/fs/nfsd/portlist",
    "/proc/driver/nvidia-fs/version",
    "/proc/driver/nvidia-fs/modules",
    "/proc/driver/nvidia-fs/devcount",
    "/proc/driver/nvidia/version",
    "/etc/os-release",
    "/usr/lib/os-release",
    "/etc/cufile.json",
    "/etc/nfs-gds/nfs-gds.toml",
    "/sys/module/sunrpc/parameters/nfs_bundle_version",
];

/// Files whose mount options are redacted before they go in.
const MOUNT_TABLES: &[&str] = &[
    "/proc/self/mountinfo",
    "/proc/self/mountstats",
    "/proc/self/mounts",
    "/etc/fstab",
];

/// Modules whose `/sys/module/<name>` doctor reads.
const SYS_MODULES: &[&str] = &[RPCRDMA, "nvidia_fs", "nvidia", "sunrpc"];
const SYS_MODULE_FILES: &[&str] = &[
    "version",
    "srcversion",
    "initstate",
    "notes/.note.gnu.build-id",
];

/// Directories whose mere existence doctor looks at.
const MARKER_DIRS: &[&str] = &["/run/nvidia/driver", "/var/lib/kubelet", "/etc/kubernetes"];

struct Archive {
    builder: tar::Builder<flate2::write::GzEncoder<File>>,
    dirs: BTreeSet<String>,
    collected: Collected,
    out: PathBuf,
}

impl Archive {
    fn err(&self, source: std::io::Error) -> CollectError {
        CollectError::Write {
            path: self.out.clone(),
            source,
        }
    }

    fn dir(&mut self, host_path: &str) -> Result<(), CollectError> {
        let rel = host_path.trim_matches('/');
        let mut acc = String::new();
        for part in rel.split('/') {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(part);
            if self.dirs.insert(acc.clone()) {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                h.set_cksum();
                let path = format!("{acc}/");
                self.builder
                    .append_data(&mut h, &path, std::io::empty())
                    .map_err(|e| self.err(e))?;
            }
        }
        Ok(())
    }

    fn file(&mut self, host_path: &str, data: &[u8]) -> Result<(), CollectError> {
        let data = redact::redact_file(host_path, data);
        let data = data.as_ref();
        let rel = host_path.trim_start_matches('/');
        if let Some((parent, _)) = rel.rsplit_once('/') {
            self.dir(parent)?;
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_cksum();
        self.builder
            .append_data(&mut h, rel, data)
            .map_err(|e| self.err(e))?;
        self.collected.files.push(format!("/{rel}"));
        Ok(())
    }
}

fn host_path_of(facts: &HostFacts, p: &Path) -> String {
    p.strip_prefix(facts.root.dir())
        .map(|r| format!("/{}", r.display()))
        .unwrap_or_else(|_| p.display().to_string())
}

/// Writes the archive to `out` (gzip-compressed tar).
pub fn collect(
    facts: &HostFacts,
    stack: &Stack,
    runner: &dyn Runner,
    out: &Path,
) -> Result<Collected, CollectError> {
    let root = &facts.root;
    let write_error = |source| CollectError::Write {
        path: out.to_owned(),
        source,
    };
    // The archive replaces `out` by a rename, which must never swap out a device node
    // (`-o /dev/null`), a FIFO or a directory, nor the link itself where `out` is a symlink.
    if let Ok(m) = std::fs::symlink_metadata(out) {
        if !m.file_type().is_file() {
            return Err(write_error(std::io::Error::other(
                "it exists and is not a regular file; collect writes a new file in its place, so give the path of a file",
            )));
        }
    }
    // Created 0600 beside the output and removed when dropped, unless persisted at the end.
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let partial = tempfile::Builder::new()
        .prefix(".nfs-gds-collect.")
        .tempfile_in(dir)
        .map_err(write_error)?;
    let file = partial.as_file().try_clone().map_err(write_error)?;
    let mut a = Archive {
        builder: tar::Builder::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::default(),
        )),
        dirs: BTreeSet::new(),
        collected: Collected::default(),
        out: out.to_owned(),
    };

    for p in PLAIN_FILES {
        if let Some(b) = root.read_bytes(p)? {
            a.file(p, &b)?;
        }
    }
    for p in MOUNT_TABLES {
        if let Some(t) = root.read_text_lossy(p)? {
            a.file(p, t.as_bytes())?;
        }
    }
    for m in SYS_MODULES {
        let dir = format!("/sys/module/{m}");
        if root.exists(&dir) {
            a.dir(&dir)?;
            for f in SYS_MODULE_FILES {
                let p = format!("{dir}/{f}");
                if let Some(b) = root.read_bytes(&p)? {
                    a.file(&p, &b)?;
                }
            }
        }
    }
    for d in MARKER_DIRS {
        if root.exists(d) {
            a.dir(d)?;
        }
    }
    if let Some(names) = root.list_dir("run/nvidia/validations")? {
        a.dir("/run/nvidia/validations")?;
        for n in names {
            let p = format!("/run/nvidia/validations/{n}");
            let b = root.read_bytes(&p).ok().flatten().unwrap_or_default();
            a.file(&p, &b)?;
        }
    }
    for dev in &facts.nvidia_fs.devices {
        a.file(&format!("/dev/{dev}"), b"")?;
    }
    if let Ok(entries) = &facts.rpcrdma.kallsyms {
        let mut text = String::new();
        for e in entries {
            text.push_str(&e.line);
            text.push('\n');
        }
        a.file("/proc/kallsyms", text.as_bytes())?;
    }
    if let Some(release) = &facts.kernel.release {
        for dir in [
            format!("/lib/modules/{release}"),
            format!("/usr/lib/modules/{release}"),
        ] {
            for f in ["modules.dep", "modules.alias", "modules.builtin"] {
                let p = format!("{dir}/{f}");
                if let Some(b) = root.read_bytes(&p)? {
                    a.file(&p, &b)?;
                }
            }
        }
        if facts.gpl_rule.is_some() {
            if let Some(img) = kernel_image(root, release) {
                if let Some(b) = root.read_bytes(&img)? {
                    a.file(&img, &b)?;
                }
            }
        }
    }
    if let Some(Resolution::File {
        path, exists: true, ..
    }) = &facts.rpcrdma.resolution
    {
        if let Some(b) = root.read_bytes(host_path_of(facts, path))? {
            a.file(&host_path_of(facts, path), &b)?;
        }
    }
    if let Some((p, _)) = &stack.ofa_gds_config {
        if let Some(b) = root.read_bytes(p)? {
            a.file(p, &b)?;
        }
    }
    if let Some(lib) = super::cufile::find_libcufile_rdma(root)? {
        a.file(&lib, b"")?;
    }

    // Command outputs, as the RecordedRunner will look them up.
    let mut commands: Vec<(String, Vec<String>)> = vec![
        ("ofed_info".into(), vec!["-s".into()]),
        ("dkms".into(), vec!["status".into()]),
    ];
    if let Some(Resolution::File { path, .. }) = &facts.rpcrdma.resolution {
        let hp = host_path_of(facts, path);
        match stack.family {
            Family::Debian => commands.push(("dpkg".into(), vec!["-S".into(), hp])),
            Family::Rhel | Family::Suse => commands.push(("rpm".into(), vec!["-qf".into(), hp])),
            Family::Other => {}
        }
    }
    for (program, args) in &commands {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Some(stdout) = runner.run(program, &argv).ok_stdout() {
            let key = record_key(program, &argv);
            a.file(&format!("/{RECORDED_DIR}/{key}"), stdout.as_bytes())?;
            a.collected
                .commands
                .push(format!("{program} {}", args.join(" ")));
        }
    }
    if let Some(log) = runner.run("dmesg", &[]).ok_stdout() {
        let mut text = relevant_log_lines(log).join("\n");
        text.push('\n');
        a.file(&format!("/{RECORDED_DIR}/dmesg"), text.as_bytes())?;
        a.collected
            .commands
            .push("dmesg (relevant lines only)".into());
    }

    let encoder = a
        .builder
        .into_inner()
        .map_err(|source| CollectError::Write {
            path: out.to_owned(),
            source,
        })?;
    let mut file = encoder.finish().map_err(|source| CollectError::Write {
        path: out.to_owned(),
        source,
    })?;
    file.flush().map_err(write_error)?;
    file.sync_all().map_err(write_error)?;
    partial.persist(out).map_err(|e| CollectError::Write {
        path: out.to_owned(),
        source: e.error,
    })?;
    Ok(a.collected)
}
