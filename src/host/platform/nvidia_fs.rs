//! The GPUDirect Storage kernel driver (`nvidia_fs`) and the NVIDIA GPU driver it links to.
//!
//! `/sys/module/nvidia_fs/version` is the full driver version (`2.28.4`); `/proc/driver/nvidia-fs/`
//! has `version` (`version: 2.28`), `devcount` and `modules`. `modules` lists a filesystem driver
//! (e.g. `rpcrdma: …`) only while some process holds `/dev/nvidia-fs*` open and that driver's
//! hooks registered; it always lists the placeholder `wekafsio: 1`.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::{read_first_line, Root};

#[derive(Debug, Clone, Default, Serialize)]
pub struct NvidiaFs {
    /// `/sys/module/nvidia_fs` exists.
    pub loaded: bool,
    pub version: Option<String>,
    /// `/dev/nvidia-fsN` names, in numeric order.
    pub devices: Vec<String>,
    /// `/proc/driver/nvidia-fs/version` (`version: 2.28`), if present.
    pub proc_version: Option<String>,
    /// The `name` of each line of `/proc/driver/nvidia-fs/modules`.
    pub registered_modules: Option<Vec<String>>,
    /// Versions of the nvidia-fs source trees DKMS builds from (`/usr/src/nvidia-fs-2.28.4`).
    pub source_versions: Vec<String>,
}

impl NvidiaFs {
    pub fn read(root: &Root) -> Result<Self, HostError> {
        let loaded = root.exists("sys/module/nvidia_fs");
        let version = read_first_line(root, "sys/module/nvidia_fs/version")?;
        let mut devices: Vec<String> = root
            .list_dir_where("dev", is_nvfs_device)?
            .unwrap_or_default();
        devices.sort_by_key(|n| n["nvidia-fs".len()..].parse::<u32>().unwrap_or(u32::MAX));
        let proc_version = read_first_line(root, "proc/driver/nvidia-fs/version")?
            .map(|l| l.trim_start_matches("version:").trim().to_string());
        let registered_modules = root
            .read_text_lossy("proc/driver/nvidia-fs/modules")?
            .map(|t| parse_registered_modules(&t));
        let source_versions = root
            .list_dir_where("usr/src", |n| n.starts_with("nvidia-fs-"))?
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.strip_prefix("nvidia-fs-"))
            .map(str::to_string)
            .collect();
        Ok(NvidiaFs {
            loaded,
            version,
            devices,
            proc_version,
            registered_modules,
            source_versions,
        })
    }

    /// The release that will take the hooks: the loaded module's, else the one source tree
    /// DKMS builds from (several: none, the next build is not known).
    pub fn binding_version(&self) -> Option<&str> {
        match (&self.version, self.source_versions.as_slice()) {
            (Some(v), _) => Some(v),
            (None, [only]) => Some(only),
            _ => None,
        }
    }
}

/// The newest nvidia-fs release whose public source was read: it asks rpcrdma for the
/// unversioned `rpcrdma_register_nvfs_dma_ops` / `rpcrdma_unregister_nvfs_dma_ops` (v1 ops,
/// through `__symbol_get`), while its NVMe side picks `nvme_v1_*` or `nvme_v2_*`.
pub const NEWEST_READ: (u32, u32) = (2, 28);

/// Series NVIDIA ships whose source is not public (NVIDIA/gds-nvidia-fs ends at 2.28.4):
/// 2.29 (2.29.4 is GPU Operator 26.7's default) and 2.30 (listed as latest, 2026-09).
pub const PUBLISHED_WITHOUT_SOURCE: &[(u32, u32)] = &[(2, 29), (2, 30)];

/// Which rpcrdma hook interface an nvidia-fs release asks for, as far as its source tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookInterface {
    /// The unversioned names (every release up to [`NEWEST_READ`]).
    Unversioned,
    /// A series NVIDIA ships without public source ([`PUBLISHED_WITHOUT_SOURCE`]): the interface
    /// is not public and never assumed to be 2.28.4's.
    NotPublic,
    /// A release newer than any known.
    Unknown,
}

/// The hook interface of nvidia-fs `version`; `None` when the version does not read as
/// `major.minor[...]`.
pub fn rpcrdma_hook_interface(version: &str) -> Option<HookInterface> {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    Some(if (major, minor) <= NEWEST_READ {
        HookInterface::Unversioned
    } else if PUBLISHED_WITHOUT_SOURCE.contains(&(major, minor)) {
        HookInterface::NotPublic
    } else {
        HookInterface::Unknown
    })
}

/// Whether nvidia-fs `version` is known to ask rpcrdma for the unversioned hook names: `Some(true)`
/// up to [`NEWEST_READ`], `None` for a newer or unreadable release.
pub fn asks_unversioned_rpcrdma_hooks(version: &str) -> Option<bool> {
    (rpcrdma_hook_interface(version)? == HookInterface::Unversioned).then_some(true)
}

fn is_nvfs_device(name: &str) -> bool {
    name.strip_prefix("nvidia-fs")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Names from `/proc/driver/nvidia-fs/modules` (`name: version` lines).
pub fn parse_registered_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .filter(|n| !n.is_empty())
        .collect()
}

/// Which NVIDIA GPU kernel driver is loaded: nvidia-fs ≥ 2.17.5 links `nvidia_p2p_*` directly and
/// so needs the open kernel modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuDriverFlavour {
    Open,
    Proprietary,
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
pub struct GpuDriver {
    pub loaded: bool,
    pub version: Option<String>,
    pub flavour: GpuDriverFlavour,
    /// The `NVRM version:` line it was judged from, else the module's taint flags.
    pub evidence: Option<String>,
}

impl GpuDriver {
    pub fn read(root: &Root) -> Result<Self, HostError> {
        let loaded = root.exists("sys/module/nvidia");
        let version = read_first_line(root, "sys/module/nvidia/version")?;
        let nvrm = root
            .read_text_lossy("proc/driver/nvidia/version")?
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("NVRM"))
                    .map(str::to_string)
            });
        // The kernel taints itself `P` for a module whose license is not GPL-compatible: the
        // proprietary nvidia.ko; the open modules are "Dual MIT/GPL".
        let taint = read_first_line(root, "sys/module/nvidia/taint")?;
        let flavour = match (&nvrm, &taint) {
            (Some(l), _) if l.contains("Open Kernel Module") => GpuDriverFlavour::Open,
            (Some(l), _) if l.contains("Kernel Module") => GpuDriverFlavour::Proprietary,
            (None, Some(t)) if t.contains('P') => GpuDriverFlavour::Proprietary,
            (None, Some(_)) => GpuDriverFlavour::Open,
            _ => GpuDriverFlavour::Unknown,
        };
        let evidence = nvrm.or(taint.map(|t| format!("/sys/module/nvidia/taint: {t}")));
        Ok(GpuDriver {
            loaded,
            version,
            flavour,
            evidence,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_up_to_2_28_ask_for_the_unversioned_rpcrdma_hooks() {
        assert_eq!(asks_unversioned_rpcrdma_hooks("2.28.4"), Some(true));
        assert_eq!(asks_unversioned_rpcrdma_hooks("2.17.5"), Some(true));
        assert_eq!(asks_unversioned_rpcrdma_hooks("2.30.1"), None);
        assert_eq!(asks_unversioned_rpcrdma_hooks("3.0"), None);
        assert_eq!(asks_unversioned_rpcrdma_hooks("unknown"), None);
    }

    #[test]
    fn device_names_are_exact() {
        assert!(is_nvfs_device("nvidia-fs0"));
        assert!(is_nvfs_device("nvidia-fs15"));
        assert!(!is_nvfs_device("nvidia-fs"));
        assert!(!is_nvfs_device("nvidia-fsx"));
        assert!(!is_nvfs_device("nvidia0"));
    }

    /// The files NVIDIA's nvidia-fs 2.13.5 (Debian 12's nvidia-fs-dkms) wrote in the test guest,
    /// with /dev/nvidia-fs0 open and rpcrdma's hooks registered.
    #[test]
    fn what_nvidias_2_13_5_writes_is_read_as_written() {
        let d = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("sys/module/nvidia_fs/version", "2.13.5\n");
        put("proc/driver/nvidia-fs/version", "version: 2.13\n");
        put("proc/driver/nvidia-fs/devcount", "16\n");
        put(
            "proc/driver/nvidia-fs/modules",
            "wekafsio: 1\nrpcrdma: (null)\n",
        );
        for n in 0..16 {
            put(&format!("dev/nvidia-fs{n}"), "");
        }
        let nv = NvidiaFs::read(&Root::new(d.path())).unwrap();
        assert!(nv.loaded);
        assert_eq!(nv.version.as_deref(), Some("2.13.5"));
        assert_eq!(nv.proc_version.as_deref(), Some("2.13"));
        assert_eq!(nv.devices.len(), 16);
        assert_eq!(nv.devices[0], "nvidia-fs0");
        assert_eq!(nv.devices[15], "nvidia-fs15");
        assert_eq!(
            nv.registered_modules.as_deref(),
            Some(&["wekafsio".to_string(), "rpcrdma".to_string()][..])
        );
    }

    #[test]
    fn registered_modules_lines() {
        assert_eq!(
            parse_registered_modules("wekafsio: 1\nrpcrdma: (null)\n"),
            vec!["wekafsio", "rpcrdma"]
        );
    }
}

#[cfg(test)]
mod interface_tests {
    use super::*;

    #[test]
    fn releases_after_the_public_source_are_never_taken_for_2_28_4() {
        assert_eq!(
            rpcrdma_hook_interface("2.28.4"),
            Some(HookInterface::Unversioned)
        );
        for v in ["2.29.4", "2.30", "2.30.2"] {
            assert_eq!(
                rpcrdma_hook_interface(v),
                Some(HookInterface::NotPublic),
                "{v}"
            );
            assert_eq!(asks_unversioned_rpcrdma_hooks(v), None, "{v}");
        }
        assert_eq!(
            rpcrdma_hook_interface("2.31.0"),
            Some(HookInterface::Unknown)
        );
        assert_eq!(rpcrdma_hook_interface("latest"), None);
    }
}
