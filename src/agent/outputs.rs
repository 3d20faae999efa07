//! Where the agent writes, and how: every default path is below `--root` (a run against a
//! fixture or bundle never touches the host's `/run`), resolved inside it as reads are (a
//! symlinked `<root>/run` cannot lead out of the tree); paths given explicitly are used as given;
//! no output is written through a symbolic link to its directory (the agent runs as root; a link
//! planted in place of `/run/nfs-gds` must not make it write elsewhere); and `/run/nfs-gds` is
//! refused when another user owns it or may write in it. Every write goes through
//! [`OutDir`](crate::host::io::out_dir::OutDir).
//!
//! The readiness file exists, freshly rewritten each pass, exactly while the node is ready: an
//! init container waits for it (and for it to be recent, since a stopped agent leaves it behind).
//! So [`publish`] removes it first when the node is not ready, writes it last when it is, and
//! attempts every output on its own: a full or read-only node_exporter directory (shared with
//! other collectors) costs the textfile, never a stale `ready`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
use crate::host::Root;

/// NFD's features.d, used only if it exists.
pub const NFD_DIR: &str = "etc/kubernetes/node-feature-discovery/features.d";
/// node_exporter's textfile directory (Debian's prometheus-node-exporter), used only if it exists.
pub const TEXTFILE_DIR: &str = "var/lib/prometheus/node-exporter";
pub const STATUS_FILE: &str = "run/nfs-gds/status.json";
pub const READY_FILE: &str = "run/nfs-gds/ready";

#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct OutputError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The outputs of one pass that could not be written (each was attempted).
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct PublishError(pub Vec<OutputError>);

/// One file the agent writes: a name in a directory below a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    root: Root,
    dir: PathBuf,
    name: String,
    trust: Trust,
}

impl Target {
    /// `rel` below `root`; the agent's own directory is held to [`Trust::Own`].
    fn below(root: &Root, rel: &Path) -> Self {
        let dir = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let trust = if dir == Path::new(RUN_DIR) {
            Trust::Own
        } else {
            Trust::Shared
        };
        Target {
            root: root.clone(),
            name: file_name(rel),
            dir,
            trust,
        }
    }

    /// A path given on the command line: on the host, relative to the working directory.
    fn given(path: &Path) -> Self {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Target {
            root: Root::host(),
            dir: path.parent().unwrap_or(Path::new("/")).to_path_buf(),
            name: file_name(&path),
            trust: Trust::Shared,
        }
    }

    /// The file as the host sees it.
    pub fn path(&self) -> PathBuf {
        self.root.join(&self.dir).join(&self.name)
    }

    fn err(&self, source: std::io::Error) -> OutputError {
        OutputError {
            path: self.path(),
            source,
        }
    }

    fn open(&self) -> Result<OutDir, OutputError> {
        OutDir::open(&self.root, &self.dir, self.trust).map_err(|e| self.err(e))
    }

    /// Writes the file atomically from what `fill` writes (streamed, never held whole; `fill`
    /// buffers).
    pub fn write_with(
        &self,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), OutputError> {
        self.open()?
            .write_atomic(&self.name, 0o644, fill)
            .map_err(|e| self.err(e))
    }

    /// Writes the file atomically.
    pub fn write(&self, contents: &[u8]) -> Result<(), OutputError> {
        self.write_with(|w| w.write_all(contents))
    }

    /// Removes the file: `true` when it was there, `false` (not an error) when not.
    pub fn remove(&self) -> Result<bool, OutputError> {
        self.open()?.remove(&self.name).map_err(|e| self.err(e))
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The files one pass writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// `<dir>/nfs-gds`, when there is a features.d.
    pub features: Option<Target>,
    /// `<dir>/nfs-gds.prom`, when there is a textfile directory.
    pub textfile: Option<Target>,
    pub status: Target,
    pub ready: Target,
}

impl Outputs {
    /// Explicit paths as given; defaults below the root, the two directories only if they exist.
    pub fn resolve(
        root: &Root,
        nfd_dir: Option<&Path>,
        textfile_dir: Option<&Path>,
        status_file: Option<&Path>,
        ready_file: Option<&Path>,
    ) -> Self {
        let in_dir = |given: Option<&Path>, default: &str, name: &str| match given {
            Some(d) => Some(Target::given(&d.join(name))),
            // Whether it exists is asked inside the root too (a host-path `stat` would follow
            // a symlinked ancestor out of it).
            None => matches!(root.list_dir(default), Ok(Some(_)))
                .then(|| Target::below(root, &Path::new(default).join(name))),
        };
        let file = |given: Option<&Path>, default: &str| match given {
            Some(p) => Target::given(p),
            None => Target::below(root, Path::new(default)),
        };
        Outputs {
            features: in_dir(nfd_dir, NFD_DIR, "nfs-gds"),
            textfile: in_dir(textfile_dir, TEXTFILE_DIR, "nfs-gds.prom"),
            status: file(status_file, STATUS_FILE),
            ready: file(ready_file, READY_FILE),
        }
    }
}

/// What fills one output.
pub type Fill<'a> = Box<dyn FnOnce(&mut dyn Write) -> std::io::Result<()> + 'a>;

/// Writes one pass's outputs: first the readiness file's removal when the node is not ready,
/// then each of `files` on its own, then the readiness file (`line`) when it is. Every failure
/// is returned; none stops the others.
pub fn publish(
    ready_file: &Target,
    ready: bool,
    line: &str,
    files: Vec<(&Target, Fill)>,
) -> Result<(), PublishError> {
    let mut failed = Vec::new();
    if !ready {
        failed.extend(ready_file.remove().err());
    }
    for (target, fill) in files {
        failed.extend(target.write_with(fill).err());
    }
    if ready {
        failed.extend(ready_file.write(format!("{line}\n").as_bytes()).err());
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(PublishError(failed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_root_and_missing_directories_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        std::fs::create_dir_all(root.join(TEXTFILE_DIR)).unwrap();
        let o = Outputs::resolve(&root, None, None, None, None);
        assert_eq!(o.features, None);
        assert_eq!(
            o.textfile.map(|t| t.path()),
            Some(
                d.path()
                    .join("var/lib/prometheus/node-exporter/nfs-gds.prom")
            )
        );
        assert_eq!(o.status.path(), d.path().join("run/nfs-gds/status.json"));
        assert_eq!(o.ready.path(), d.path().join("run/nfs-gds/ready"));
        let o = Outputs::resolve(
            &root,
            Some(Path::new("/x")),
            None,
            Some(Path::new("s.json")),
            None,
        );
        assert_eq!(
            o.features.map(|t| t.path()),
            Some(PathBuf::from("/x/nfs-gds"))
        );
        assert_eq!(
            o.status.path(),
            std::env::current_dir().unwrap().join("s.json")
        );
    }

    #[test]
    fn a_default_directory_is_looked_for_inside_the_root() {
        let d = tempfile::tempdir().unwrap();
        let (tree, outside) = (d.path().join("root"), d.path().join("outside"));
        std::fs::create_dir_all(outside.join("lib/prometheus/node-exporter")).unwrap();
        std::fs::create_dir_all(&tree).unwrap();
        // `<root>/var` leads out of the tree, where a node_exporter directory exists.
        std::os::unix::fs::symlink(&outside, tree.join("var")).unwrap();
        let o = Outputs::resolve(&Root::new(&tree), None, None, None, None);
        assert_eq!(o.textfile, None);
    }

    #[test]
    fn a_symlinked_directory_is_refused_and_nothing_lands_behind_it() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, d.path().join("run")).unwrap();
        let status = Target::given(&d.path().join("run/status.json"));
        let e = status.write(b"{}").unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert!(Target::given(&d.path().join("run/ready")).remove().is_err());
    }

    #[test]
    fn the_readiness_file_exists_exactly_while_ready() {
        let d = tempfile::tempdir().unwrap();
        let ready = Target::below(&Root::new(d.path()), Path::new(READY_FILE));
        publish(&ready, true, "ready", Vec::new()).unwrap();
        assert_eq!(std::fs::read_to_string(ready.path()).unwrap(), "ready\n");
        publish(&ready, false, "", Vec::new()).unwrap();
        assert!(!ready.path().exists());
        publish(&ready, false, "", Vec::new()).unwrap();
    }

    #[test]
    fn a_failed_output_neither_stops_the_others_nor_leaves_a_stale_ready() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        let ready = Target::below(&root, Path::new(READY_FILE));
        let status = Target::below(&root, Path::new(STATUS_FILE));
        // node_exporter's directory is full: its write fails.
        let textfile = Target::below(&root, &Path::new(TEXTFILE_DIR).join("nfs-gds.prom"));
        publish(&ready, true, "ready", Vec::new()).unwrap();
        let full: Fill = Box::new(|_| Err(std::io::Error::other("No space left on device")));
        let files = vec![
            (&textfile, full),
            (
                &status,
                Box::new(|w: &mut dyn Write| w.write_all(b"{\"ready\":false}")) as Fill,
            ),
        ];
        let e = publish(&ready, false, "", files).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        assert!(e.to_string().contains("nfs-gds.prom: No space left"), "{e}");
        assert!(
            !ready.path().exists(),
            "a node that is not ready kept `ready`"
        );
        assert_eq!(
            std::fs::read(status.path()).unwrap(),
            b"{\"ready\":false}",
            "the status after the failed textfile was still written"
        );
    }
}
