//! DKMS: which module versions are built and installed for which kernel.
//!
//! Two sources say the same thing. `dkms status` prints `m/v, k, a: installed` (DKMS 3.x) or
//! `m, v, k, a: installed` (2.x); [`parse_dkms_status`] reads both. The tree behind it,
//! `/var/lib/dkms`, is what a `--root` can show: `<m>/<v>/source` once added,
//! `<m>/<v>/<k>/<a>/module/` once built for kernel `k`, and the link `<m>/kernel-<k>-<a>` →
//! `<v>/<k>/<a>` once installed (dell/dkms `is_module_built`, `_is_module_installed`).
//! [`read_dkms_tree`] reads that into the same entries. [`dkms_state`] answers, for one module
//! and one kernel, whether it is installed, built, or only added, and [`install_command`] gives
//! the `dkms install` that fixes it.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// The DKMS tree.
pub const DKMS_TREE: &str = "/var/lib/dkms";

/// The DKMS package that builds rpcrdma (DOCA-OFED, MLNX_OFED).
pub const MLNX_NFSRDMA: &str = "mlnx-nfsrdma";
/// The DKMS package that builds nvidia_fs.
pub const NVIDIA_FS: &str = "nvidia-fs";

/// One line of `dkms status` (or one directory of the DKMS tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DkmsEntry {
    pub module: String,
    pub version: String,
    pub kernel: Option<String>,
    pub arch: Option<String>,
    pub state: String,
}

/// Parses `dkms status` in the 3.x (`m/v, k, a: installed`) and 2.x (`m, v, k, a: installed`)
/// forms; lines of neither form are skipped.
pub fn parse_dkms_status(stdout: &str) -> Vec<DkmsEntry> {
    stdout
        .lines()
        .filter_map(|line| {
            let (head, state) = line.rsplit_once(": ")?;
            let mut fields: Vec<String> = head.split(',').map(|f| f.trim().to_string()).collect();
            if fields.is_empty() || fields[0].contains(' ') {
                return None;
            }
            let (module, version) = match fields[0].split_once('/') {
                Some((m, v)) => (m.to_string(), v.to_string()),
                None if fields.len() >= 2 => {
                    let v = fields.remove(1);
                    (fields[0].clone(), v)
                }
                None => return None,
            };
            Some(DkmsEntry {
                module,
                version,
                kernel: fields.get(1).cloned(),
                arch: fields.get(2).cloned(),
                state: state.trim().to_string(),
            })
        })
        .collect()
}

/// Reads `/var/lib/dkms` into entries like `dkms status` prints: `added` for a version with no
/// build, `built` or `installed` per kernel and architecture. `Ok(vec![])` without a tree.
pub fn read_dkms_tree(root: &Root) -> Result<Vec<DkmsEntry>, HostError> {
    let mut out = Vec::new();
    for module in root.list_dir(DKMS_TREE)?.unwrap_or_default() {
        let mdir = format!("{DKMS_TREE}/{module}");
        if !root.is_dir(&mdir) {
            continue;
        }
        let names = root.list_dir(&mdir)?.unwrap_or_default();
        for version in names
            .iter()
            .filter(|n| !n.starts_with("kernel-") && *n != "original_module")
        {
            let vdir = format!("{mdir}/{version}");
            if !root.is_dir(&vdir) {
                continue;
            }
            let mut any = false;
            for kernel in root.list_dir(&vdir)?.unwrap_or_default() {
                if kernel == "source" || kernel == "build" || kernel == "log" {
                    continue;
                }
                let kdir = format!("{vdir}/{kernel}");
                for arch in root.list_dir(&kdir)?.unwrap_or_default() {
                    if !root.is_dir(format!("{kdir}/{arch}/module")) {
                        continue;
                    }
                    any = true;
                    let installed = installed_link_target(root, &mdir, &kernel, &arch)
                        .is_some_and(|t| t == format!("{version}/{kernel}/{arch}"));
                    out.push(DkmsEntry {
                        module: module.clone(),
                        version: version.clone(),
                        kernel: Some(kernel.clone()),
                        arch: Some(arch),
                        state: if installed { "installed" } else { "built" }.into(),
                    });
                }
            }
            if !any {
                out.push(DkmsEntry {
                    module: module.clone(),
                    version: version.clone(),
                    kernel: None,
                    arch: None,
                    state: "added".into(),
                });
            }
        }
    }
    Ok(out)
}

/// Where `<m>/kernel-<k>-<a>` points, relative to `<m>/` (absolute targets into the DKMS tree
/// are made relative).
fn installed_link_target(root: &Root, mdir: &str, kernel: &str, arch: &str) -> Option<String> {
    let target = root
        .read_link(format!("{mdir}/kernel-{kernel}-{arch}"))
        .ok()??;
    let target = target.trim_end_matches('/');
    Some(match target.strip_prefix(&format!("{mdir}/")) {
        Some(rel) => rel.to_string(),
        None => target.trim_start_matches("./").to_string(),
    })
}

/// One DKMS package's state for one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum DkmsState {
    /// Built and installed into that kernel's module tree.
    Installed { version: String },
    /// Built for that kernel but not installed (`dkms install` still needed).
    Built { version: String },
    /// Registered with DKMS, not built for that kernel (other kernels may have it).
    NotBuilt {
        versions: Vec<String>,
        built_for: Vec<String>,
    },
    /// DKMS does not know the package at all.
    Unknown,
}

/// What DKMS says about `package` (e.g. [`MLNX_NFSRDMA`]) for `kernel`. When several versions
/// are installed or built, the highest in version order is reported.
pub fn dkms_state(entries: &[DkmsEntry], package: &str, kernel: &str) -> DkmsState {
    let mine: Vec<&DkmsEntry> = entries.iter().filter(|e| e.module == package).collect();
    if mine.is_empty() {
        return DkmsState::Unknown;
    }
    let for_kernel = |state: &str| {
        mine.iter()
            .filter(|e| e.kernel.as_deref() == Some(kernel) && e.state.starts_with(state))
            .map(|e| e.version.clone())
            .max_by(|a, b| crate::host::boot::version_order::compare(a, b))
    };
    if let Some(version) = for_kernel("installed") {
        return DkmsState::Installed { version };
    }
    if let Some(version) = for_kernel("built") {
        return DkmsState::Built { version };
    }
    let mut versions: Vec<String> = mine.iter().map(|e| e.version.clone()).collect();
    versions.sort_by(|a, b| crate::host::boot::version_order::compare(a, b));
    versions.dedup();
    let mut built_for: Vec<String> = mine.iter().filter_map(|e| e.kernel.clone()).collect();
    built_for.sort();
    built_for.dedup();
    DkmsState::NotBuilt {
        versions,
        built_for,
    }
}

/// The command that builds and installs `package` `version` for `kernel`.
pub fn install_command(package: &str, version: &str, kernel: &str) -> String {
    format!("dkms install -m {package} -v {version} -k {kernel}")
}

impl DkmsState {
    /// The `dkms install` that makes the package present for `kernel`, when DKMS knows a
    /// version to install; `None` when already installed or unknown to DKMS.
    pub fn fix(&self, package: &str, kernel: &str) -> Option<String> {
        match self {
            DkmsState::Built { version } => Some(install_command(package, version, kernel)),
            DkmsState::NotBuilt { versions, .. } => {
                versions.last().map(|v| install_command(package, v, kernel))
            }
            DkmsState::Installed { .. } | DkmsState::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dkms_both_generations() {
        let out = "Deprecated feature: REMAKE_INITRD (/var/lib/dkms/x/dkms.conf)\n\
                   mlnx-nfsrdma/24.10.OFED.24.10.1.1.4.0, 6.8.0-45-generic, x86_64: installed\n\
                   mlnx-ofed-kernel, 5.8, 5.15.0-70-generic, x86_64: installed (original_module exists)\n\
                   nvidia-fs/2.28.4: added\n";
        let e = parse_dkms_status(out);
        assert_eq!(e.len(), 3, "{e:?}");
        assert_eq!(e[0].module, "mlnx-nfsrdma");
        assert_eq!(e[0].kernel.as_deref(), Some("6.8.0-45-generic"));
        assert_eq!(e[0].state, "installed");
        assert_eq!(e[1].module, "mlnx-ofed-kernel");
        assert_eq!(e[1].version, "5.8");
        assert_eq!(e[1].state, "installed (original_module exists)");
        assert_eq!(e[2].state, "added");
        assert_eq!(e[2].kernel, None);
    }

    #[test]
    fn state_per_kernel_and_the_fix() {
        let e = parse_dkms_status(
            "mlnx-nfsrdma/24.10.OFED.24.10.1.1.4.0, 6.1.0-50-amd64, x86_64: installed\n\
             mlnx-nfsrdma/24.10.OFED.24.10.1.1.4.0, 6.1.0-52-amd64, x86_64: built\n\
             nvidia-fs/2.28.4: added\n",
        );
        assert_eq!(
            dkms_state(&e, MLNX_NFSRDMA, "6.1.0-50-amd64"),
            DkmsState::Installed {
                version: "24.10.OFED.24.10.1.1.4.0".into()
            }
        );
        let built = dkms_state(&e, MLNX_NFSRDMA, "6.1.0-52-amd64");
        assert_eq!(
            built.fix(MLNX_NFSRDMA, "6.1.0-52-amd64").as_deref(),
            Some("dkms install -m mlnx-nfsrdma -v 24.10.OFED.24.10.1.1.4.0 -k 6.1.0-52-amd64")
        );
        let missing = dkms_state(&e, MLNX_NFSRDMA, "6.12.117+deb13-amd64");
        match &missing {
            DkmsState::NotBuilt { built_for, .. } => {
                assert_eq!(
                    built_for,
                    &vec!["6.1.0-50-amd64".to_string(), "6.1.0-52-amd64".into()]
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            missing.fix(MLNX_NFSRDMA, "6.12.117+deb13-amd64").as_deref(),
            Some(
                "dkms install -m mlnx-nfsrdma -v 24.10.OFED.24.10.1.1.4.0 -k 6.12.117+deb13-amd64"
            )
        );
        assert_eq!(
            dkms_state(&e, NVIDIA_FS, "6.1.0-50-amd64")
                .fix(NVIDIA_FS, "6.1.0-50-amd64")
                .as_deref(),
            Some("dkms install -m nvidia-fs -v 2.28.4 -k 6.1.0-50-amd64")
        );
        assert_eq!(
            dkms_state(&e, "vastnfs", "6.1.0-50-amd64"),
            DkmsState::Unknown
        );
    }

    #[test]
    fn the_tree_tells_built_installed_and_added() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("var/lib/dkms/mlnx-nfsrdma");
        for k in ["6.1.0-50-amd64", "6.1.0-52-amd64"] {
            std::fs::create_dir_all(base.join(format!("24.10/{k}/x86_64/module"))).unwrap();
        }
        std::os::unix::fs::symlink(
            "24.10/6.1.0-50-amd64/x86_64",
            base.join("kernel-6.1.0-50-amd64-x86_64"),
        )
        .unwrap();
        std::fs::create_dir_all(base.join("24.10/source")).unwrap();
        std::fs::create_dir_all(dir.path().join("var/lib/dkms/nvidia-fs/2.28.4/source")).unwrap();
        let e = read_dkms_tree(&Root::new(dir.path())).unwrap();
        let states: Vec<(&str, Option<&str>, &str)> = e
            .iter()
            .map(|e| (e.module.as_str(), e.kernel.as_deref(), e.state.as_str()))
            .collect();
        assert_eq!(
            states,
            vec![
                ("mlnx-nfsrdma", Some("6.1.0-50-amd64"), "installed"),
                ("mlnx-nfsrdma", Some("6.1.0-52-amd64"), "built"),
                ("nvidia-fs", None, "added"),
            ]
        );
        assert!(read_dkms_tree(&Root::new("/nonexistent-root"))
            .unwrap()
            .is_empty());
    }
}
