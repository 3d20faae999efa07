//! `nfs-gds collect`: a compressed archive of exactly what doctor reads, laid out as a root tree,
//! so `nfs-gds doctor --root <unpacked>` gives the same answer on another machine.
//!
//! There is no list of files here: doctor runs against a recording [`Root`] and a recording
//! [`System`], and the archive holds what they saw — so a reader added to doctor is collected by
//! construction. A symlink read as a link goes in as that link. Command outputs go under [`RECORDED_DIR`], where the tree's system finds them
//! (`host::io::tree_system`). Nothing secret goes in:
//! `/proc/kallsyms` is cut down to the hook lines, the kernel log to the lines doctor looks
//! for, and every file passes through [`redact`] on its way in (credentials in mount options
//! and the policy, kallsyms addresses). The archive is written to a temporary file of mode 0600
//! beside `-o FILE` and renamed into place when complete; on any error the partial file is
//! removed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::kernel_log::relevant_log_lines;
use super::redact;
use crate::host::io::inputs::Seen;
use crate::host::io::recorded::{record_key, RECORDED_DIR};
use crate::host::{HostError, HostFacts, Root};
use crate::kmod::RPCRDMA_HOOKS;
use crate::policy::intent::Declared;
use crate::policy::Policy;
use crate::system::{Answer, Call, Recording, System};

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

struct Archive {
    builder: tar::Builder<flate2::write::GzEncoder<File>>,
    dirs: BTreeSet<String>,
    files: BTreeSet<String>,
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

    /// A path that was there: a directory as a directory, anything else (a device node, a
    /// file nobody read) as an empty file, unless it is in the archive already.
    fn present(&mut self, root: &Root, rel: &Path) -> Result<(), CollectError> {
        let hp = host_path(rel);
        if self.files.contains(hp.trim_start_matches('/')) {
            return Ok(());
        }
        match std::fs::symlink_metadata(root.join(rel)) {
            Ok(m) if m.is_dir() => self.dir(&hp),
            Ok(_) => self.file(&hp, b""),
            Err(_) => Ok(()),
        }
    }

    /// A symlink that was read as one (DKMS's `kernel-<k>-<a>`), with the target it names.
    fn link(&mut self, host_path: &str, target: &str) -> Result<(), CollectError> {
        let rel = host_path.trim_start_matches('/');
        if !self.files.insert(rel.to_string()) {
            return Ok(());
        }
        if let Some((parent, _)) = rel.rsplit_once('/') {
            self.dir(parent)?;
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_mode(0o777);
        h.set_size(0);
        self.builder
            .append_link(&mut h, rel, target)
            .map_err(|e| self.err(e))?;
        self.collected.files.push(format!("/{rel}"));
        Ok(())
    }

    /// Completes the archive and renames it over `out`.
    fn finish(self, partial: tempfile::NamedTempFile) -> Result<Collected, CollectError> {
        let out = self.out;
        let err = |source| CollectError::Write {
            path: out.clone(),
            source,
        };
        let encoder = self.builder.into_inner().map_err(err)?;
        let mut file = encoder.finish().map_err(err)?;
        file.flush().map_err(err)?;
        file.sync_all().map_err(err)?;
        partial.persist(&out).map_err(|e| err(e.error))?;
        Ok(self.collected)
    }

    fn file(&mut self, host_path: &str, data: &[u8]) -> Result<(), CollectError> {
        let rel = host_path.trim_start_matches('/');
        if !self.files.insert(rel.to_string()) {
            return Ok(());
        }
        let data = redact::redact_file(host_path, data);
        let data = data.as_ref();
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

/// The file at the top of a bundle that says what made it, when and where (written by the
/// `collect` command); doctor never reads it.
pub const MANIFEST: &str = "nfs-gds-manifest.json";

/// Writes the archive of `doctor` on this node to `out` (gzip-compressed tar): what it read,
/// and the policy it judged under. `read_declared` reads what the node declares about its
/// mounts (the helper's records, fstab), which doctor is handed.
///
/// `manifest` goes at the top of the archive as [`MANIFEST`].
pub fn collect(
    root: &Root,
    policy_path: &Path,
    policy: &Policy,
    system: &dyn System,
    read_declared: &dyn Fn(&Root) -> Result<Declared, HostError>,
    out: &Path,
    manifest: &[u8],
) -> Result<Collected, CollectError> {
    let mut collected = archive_reads(root, system, out, Some(manifest), |root, system| {
        let facts = HostFacts::read(root)?;
        // The hook lines of kallsyms go in even where the checks did not need them (the loaded
        // rpcrdma identified by its build-id): whoever reads the bundle may want them.
        if facts.rpcrdma.kallsyms.is_none() {
            let _ = crate::host::modules::kallsyms::read_symbols(root, &RPCRDMA_HOOKS);
        }
        // Read through the recording root: the helper's records and fstab go in the bundle.
        let declared = read_declared(root)?;
        super::diagnose::diagnose(
            &facts,
            super::diagnose::Inputs {
                system,
                policy,
                probe: false,
                declared: &declared,
            },
        )?;
        // The policy is loaded by the command, not through the root; it decides the verdict.
        if let Ok(rel) = policy_path.strip_prefix(root.dir()) {
            let _ = root.read_bytes(rel)?;
        }
        Ok(())
    })?;
    collected.files.sort();
    Ok(collected)
}

/// Runs `read` against a recording root and a recording system, then archives exactly what it
/// read (files, the directories it listed, the paths whose existence it looked at) and the
/// command outputs it used, laid out so that `read` against the unpacked archive, with a
/// tree's system, sees the same host.
pub fn archive_reads(
    root: &Root,
    system: &dyn System,
    out: &Path,
    manifest: Option<&[u8]>,
    read: impl FnOnce(&Root, &dyn System) -> Result<(), CollectError>,
) -> Result<Collected, CollectError> {
    let recording = root.recording();
    let recorded = Recording::new(system);
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
    read(&recording, &recorded)?;
    let record = recording.record();
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
        files: BTreeSet::new(),
        collected: Collected::default(),
        out: out.to_owned(),
    };
    if let Some(manifest) = manifest {
        a.file(&format!("/{MANIFEST}"), manifest)?;
    }
    for rel in &record.files {
        // Command outputs of a bundle being collected again are rewritten below.
        if rel.starts_with(RECORDED_DIR) {
            continue;
        }
        if let Some(bytes) = for_archive(root, rel)? {
            a.file(&host_path(rel), &bytes)?;
        }
    }
    // Links whose target was read go in as links, before a listing takes them for files.
    for (rel, seen) in record.inputs.iter() {
        if let Seen::Link(Some(target)) = seen {
            a.link(&host_path(rel), target)?;
        }
    }
    for (dir, names) in &record.listed {
        a.dir(&host_path(dir))?;
        for n in names {
            a.present(root, &dir.join(n))?;
        }
    }
    for rel in &record.present {
        a.present(root, rel)?;
    }
    // The programs run for their output, and what each printed when it succeeded.
    let outputs = recorded
        .transcript()
        .0
        .into_iter()
        .filter_map(|e| match (e.call, e.answer) {
            (Call::Output { program, args, .. }, Answer::Output(out)) => {
                let stdout = out.ok_stdout()?.to_string();
                Some((program, args, stdout))
            }
            _ => None,
        });
    for (program, args, stdout) in outputs {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let key = record_key(&program, &argv);
        if program == "dmesg" {
            let mut text = relevant_log_lines(&stdout).join("\n");
            text.push('\n');
            a.file(&format!("/{RECORDED_DIR}/{key}"), text.as_bytes())?;
            a.collected
                .commands
                .push("dmesg (relevant lines only)".into());
        } else {
            a.file(&format!("/{RECORDED_DIR}/{key}"), stdout.as_bytes())?;
            a.collected
                .commands
                .push(format!("{program} {}", args.join(" ")));
        }
    }
    a.finish(partial)
}

fn host_path(rel: &Path) -> String {
    format!("/{}", rel.display())
}

/// What goes into the archive for a file before redaction: kallsyms cut to the hook lines
/// (the rest is kernel layout doctor never looks at), streamed rather than read whole (it is
/// 5–20 MB), everything else as it is.
fn for_archive(root: &Root, rel: &Path) -> Result<Option<Vec<u8>>, HostError> {
    if rel.file_name().and_then(|n| n.to_str()) != Some("kallsyms") {
        return root.read_bytes(rel);
    }
    let mut kept = Vec::new();
    let found = crate::host::modules::kallsyms::lines_naming(root, rel, &RPCRDMA_HOOKS, |line| {
        kept.extend_from_slice(String::from_utf8_lossy(line).as_bytes());
        kept.push(b'\n');
        true
    })?;
    Ok(found.then_some(kept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::io::tree_system::TreeSystem;
    use crate::system::{Fake, Live};

    /// A reader doctor does not have: a file, a directory listing, a device node's existence
    /// and a command, as a new check would add them.
    fn new_reader(root: &Root, system: &dyn System) -> Vec<String> {
        let mut seen = vec![
            format!("{:?}", root.read_text("etc/new-reader.conf").unwrap()),
            format!("{:?}", root.list_dir("sys/bus/pci/devices").unwrap()),
            format!("{}", root.exists("dev/nvidia0")),
            format!("{:?}", system.run("lspci", &["-n"]).ok_stdout()),
        ];
        if let Some(names) = root.list_dir("sys/bus/pci/devices").unwrap() {
            for n in names {
                seen.push(format!(
                    "{n}: {:?}",
                    root.read_text(format!("sys/bus/pci/devices/{n}/vendor"))
                        .unwrap()
                ));
            }
        }
        seen
    }

    #[test]
    fn whatever_a_new_reader_reads_is_archived_and_replays_the_same() {
        let host = tempfile::tempdir().unwrap();
        let w = |rel: &str, text: &str| {
            let p = host.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w("etc/new-reader.conf", "answer = 42\n");
        w("sys/bus/pci/devices/0000:3b:00.0/vendor", "0x10de\n");
        w("sys/bus/pci/devices/0000:3b:00.0/class", "0x030200\n");
        std::fs::create_dir_all(host.path().join("sys/bus/pci/devices/0000:5e:00.0")).unwrap();
        w("dev/nvidia0", "");
        w("etc/unread", "not read, so not archived\n");
        let root = Root::new(host.path());
        let system = Fake::new().answer("lspci -n", "3b:00.0 0302: 10de:20b5\n");
        let mut original = Vec::new();
        let out = host.path().join("bundle.tgz");
        archive_reads(&root, &system, &out, None, |r, run| {
            original = new_reader(r, run);
            Ok(())
        })
        .unwrap();
        let bundle = tempfile::tempdir().unwrap();
        let gz = flate2::read::GzDecoder::new(File::open(&out).unwrap());
        tar::Archive::new(gz).unpack(bundle.path()).unwrap();
        let replay_root = Root::new(bundle.path());
        let tree = TreeSystem::new(replay_root.clone(), Live::new(true));
        let replayed = new_reader(&replay_root, &tree);
        assert_eq!(replayed, original);
        assert!(original[0].contains("answer = 42"), "{original:?}");
        assert!(!bundle.path().join("etc/unread").exists());
        // What nobody read is not in the bundle, even inside a listed directory.
        assert!(!bundle
            .path()
            .join("sys/bus/pci/devices/0000:3b:00.0/class")
            .exists());
    }
}
