//! `nfs-gds oci-hook --install` and `--uninstall`: put the gate where CRI-O and podman look, or
//! take it away, from a container that sees the node below `--root` (the DaemonSet's init
//! container of `deploy/kustomize/oci-hook`, as the NVIDIA Container Toolkit's installer does).
//! Installing copies this binary to `opt/nfs-gds/bin/nfs-gds` and writes the hooks.d file naming
//! it to `usr/share/containers/oci/hooks.d/nfs-gds-hook.json` (the directory CRI-O's `hooks_dir`
//! and podman's `hooks_dir` name by default; `--hooks-dir` names another, such as
//! `/etc/containers/oci/hooks.d`, the one OpenShift's CRI-O reads), both below the root and each
//! replaced atomically. Uninstalling removes every hooks.d file that names the installed binary
//! in both standard directories and in `--hooks-dir`, whatever the directory it was installed
//! in, then the binary. The hooks.d file is the packaged one (`contrib/oci/nfs-gds-hook.json`)
//! with the binary's path changed, nothing else.

use std::io;
use std::path::PathBuf;

use crate::host::io::out_dir::{OutDir, Trust};
use crate::host::{FileKind, Root};

/// Where the binary goes, below the root.
pub const BIN_DIR: &str = "opt/nfs-gds/bin";
/// Where CRI-O and podman read hooks unless configured otherwise (their `hooks_dir` default).
pub const HOOKS_DIR: &str = "usr/share/containers/oci/hooks.d";
/// The hooks directories runtimes read by default: CRI-O's and podman's, and the one
/// OpenShift's CRI-O configuration keeps (its packages dropped the first).
pub const STANDARD_HOOKS_DIRS: [&str; 2] = [HOOKS_DIR, "etc/containers/oci/hooks.d"];
/// The hooks.d file's name.
pub const HOOKS_FILE: &str = "nfs-gds-hook.json";

/// The packaged hooks.d file, which runs `/usr/sbin/nfs-gds`.
const PACKAGED: &str = include_str!("../../../contrib/oci/nfs-gds-hook.json");
const PACKAGED_PATH: &str = "\"/usr/sbin/nfs-gds\"";

/// The hooks.d file for a binary at `path`.
pub fn hooks_file(path: &str) -> String {
    let quoted = serde_json::Value::from(path).to_string();
    PACKAGED.replacen(PACKAGED_PATH, &quoted, 1)
}

fn at(root: &Root, rel: &str, trust: Trust) -> io::Result<OutDir> {
    OutDir::open(root, rel, trust)
        .map_err(|e| io::Error::other(format!("{}: {e}", root.join(rel).display())))
}

/// Installs the binary running now and its hooks.d file below `root`, in `hooks_dir`; returns
/// what it wrote.
pub fn install(root: &Root, hooks_dir: &str) -> io::Result<Vec<PathBuf>> {
    let exe = std::fs::read("/proc/self/exe")
        .map_err(|e| io::Error::other(format!("/proc/self/exe: {e}")))?;
    let bin = at(root, BIN_DIR, Trust::Own)?;
    bin.write_atomic("nfs-gds", 0o755, |w| w.write_all(&exe))?;
    let hooks = at(root, hooks_dir, Trust::Shared)?;
    let text = hooks_file(&format!("/{BIN_DIR}/nfs-gds"));
    hooks.write_atomic(HOOKS_FILE, 0o644, |w| w.write_all(text.as_bytes()))?;
    Ok(vec![
        bin.path().join("nfs-gds"),
        hooks.path().join(HOOKS_FILE),
    ])
}

/// Whether a hooks.d file's text runs the binary [`install`] puts below the root.
fn names_installed_binary(text: &[u8]) -> bool {
    let installed = format!("/{BIN_DIR}/nfs-gds");
    serde_json::from_slice::<serde_json::Value>(text)
        .is_ok_and(|v| v["hook"]["path"].as_str() == Some(installed.as_str()))
}

/// Removes what [`install`] wrote below `root`: every hooks.d file naming the installed binary
/// in the standard directories and in `hooks_dir` (first: no runtime is left pointing at a
/// missing binary), then the binary; returns what it removed. A hooks.d file naming another
/// binary (the package's `/usr/sbin/nfs-gds`) is left alone.
pub fn uninstall(root: &Root, hooks_dir: Option<&str>) -> io::Result<Vec<PathBuf>> {
    let mut dirs: Vec<&str> = STANDARD_HOOKS_DIRS.to_vec();
    dirs.extend(hooks_dir);
    let mut seen = Vec::new();
    let mut removed = Vec::new();
    for dir in dirs {
        let rel = dir.trim_start_matches('/').trim_end_matches('/');
        if seen.contains(&rel) || !root.exists(rel) {
            continue;
        }
        seen.push(rel);
        let hooks = at(root, rel, Trust::Shared)?;
        for name in hooks.names()? {
            if !name.ends_with(".json") {
                continue;
            }
            // Anything that is not a readable regular file is not a hooks file of ours.
            let Ok(Some(read)) = hooks.read_file(&name, FileKind::Config) else {
                continue;
            };
            if names_installed_binary(&read.bytes) && hooks.remove(&name)? {
                removed.push(hooks.path().join(&name));
            }
        }
    }
    if root.exists(BIN_DIR) {
        let bin = at(root, BIN_DIR, Trust::Own)?;
        bin.remove("nfs-gds")?;
        removed.push(bin.path().join("nfs-gds"));
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installed_hooks_file_is_the_packaged_one_with_the_binarys_path() {
        let text = hooks_file("/opt/nfs-gds/bin/nfs-gds");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["hook"]["path"], "/opt/nfs-gds/bin/nfs-gds");
        let packaged: serde_json::Value = serde_json::from_str(PACKAGED).unwrap();
        let mut same = v;
        same["hook"]["path"] = packaged["hook"]["path"].clone();
        assert_eq!(same, packaged);
        assert_eq!(hooks_file("/usr/sbin/nfs-gds"), PACKAGED);
    }

    #[test]
    fn install_then_uninstall_leaves_nothing_of_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let wrote = install(&root, HOOKS_DIR).unwrap();
        assert_eq!(wrote.len(), 2);
        let hooks = dir.path().join(HOOKS_DIR).join(HOOKS_FILE);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&hooks).unwrap()).unwrap();
        assert_eq!(v["hook"]["path"], "/opt/nfs-gds/bin/nfs-gds");
        let bin = dir.path().join(BIN_DIR).join("nfs-gds");
        assert_eq!(
            std::fs::read(&bin).unwrap(),
            std::fs::read("/proc/self/exe").unwrap()
        );
        assert_eq!(uninstall(&root, None).unwrap().len(), 2);
        assert!(!hooks.exists() && !bin.exists());
        // Again: nothing left to remove is not an error.
        uninstall(&root, None).unwrap();
    }

    #[test]
    fn uninstall_finds_the_hooks_file_in_any_hooks_directory_and_only_ours() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let custom = "srv/crio/hooks.d";
        install(&root, custom).unwrap();
        install(&root, STANDARD_HOOKS_DIRS[1]).unwrap();
        // Another name, the same binary: still ours.
        std::fs::rename(
            dir.path().join(STANDARD_HOOKS_DIRS[1]).join(HOOKS_FILE),
            dir.path().join(STANDARD_HOOKS_DIRS[1]).join("99-gds.json"),
        )
        .unwrap();
        let packaged = dir.path().join(HOOKS_DIR).join(HOOKS_FILE);
        std::fs::create_dir_all(packaged.parent().unwrap()).unwrap();
        std::fs::write(&packaged, PACKAGED).unwrap();
        let removed = uninstall(&root, Some(&format!("/{custom}/"))).unwrap();
        assert_eq!(
            removed,
            [
                dir.path().join(STANDARD_HOOKS_DIRS[1]).join("99-gds.json"),
                dir.path().join(custom).join(HOOKS_FILE),
                dir.path().join(BIN_DIR).join("nfs-gds"),
            ]
        );
        assert!(
            packaged.exists(),
            "the package's hooks file is not ours to remove"
        );
    }
}
