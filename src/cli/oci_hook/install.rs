//! `nfs-gds oci-hook --install` and `--uninstall`: put the gate where CRI-O and podman look, or
//! take it away, from a container that sees the node below `--root` (the DaemonSet's init
//! container of `deploy/kustomize/oci-hook`, as the NVIDIA Container Toolkit's installer does).
//! Installing copies this binary to `opt/nfs-gds/bin/nfs-gds` and writes the hooks.d file naming
//! it to `usr/share/containers/oci/hooks.d/nfs-gds-hook.json` (the directory CRI-O's `hooks_dir`
//! and podman's `hooks_dir` name by default; `--hooks-dir` names another), both below the root
//! and each replaced atomically; uninstalling removes both. The hooks.d file is the packaged one
//! (`contrib/oci/nfs-gds-hook.json`) with the binary's path changed, nothing else.

use std::io;
use std::path::PathBuf;

use crate::host::io::out_dir::{OutDir, Trust};
use crate::host::Root;

/// Where the binary goes, below the root.
pub const BIN_DIR: &str = "opt/nfs-gds/bin";
/// Where CRI-O and podman read hooks unless configured otherwise (their `hooks_dir` default).
pub const HOOKS_DIR: &str = "usr/share/containers/oci/hooks.d";
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

/// Removes what [`install`] wrote below `root` (the hooks.d file first: no runtime is left
/// pointing at a missing binary); returns what it removed.
pub fn uninstall(root: &Root, hooks_dir: &str) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    if root.exists(hooks_dir) {
        let hooks = at(root, hooks_dir, Trust::Shared)?;
        hooks.remove(HOOKS_FILE)?;
        removed.push(hooks.path().join(HOOKS_FILE));
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
        assert_eq!(uninstall(&root, HOOKS_DIR).unwrap().len(), 2);
        assert!(!hooks.exists() && !bin.exists());
        // Again: nothing left to remove is not an error.
        uninstall(&root, HOOKS_DIR).unwrap();
    }
}
