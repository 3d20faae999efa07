//! Which storage stack this node runs: distribution, DOCA-OFED / MLNX_OFED, DKMS, VAST's NFS
//! bundle, NVIDIA's own kernels, the GPU Operator. The remediation plan is chosen from this.
//!
//! Pure `parse_*` functions for each command's output sit beside [`Stack::detect`], which reads
//! files below the root and asks the [`Runner`] for command outputs.

use serde::Serialize;

use super::runner::Runner;
use crate::host::facts::HostFacts;
use crate::host::modules::{ModuleOrigin, Resolution};
use crate::host::platform::nvidia_fs::GpuDriver;
use crate::host::{read_first_line, HostError, Root};

/// `/etc/os-release`, the fields that matter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OsRelease {
    pub id: Option<String>,
    pub id_like: Vec<String>,
    pub version_id: Option<String>,
    pub pretty_name: Option<String>,
}

pub fn parse_os_release(text: &str) -> OsRelease {
    let mut os = OsRelease::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"').trim_matches('\'').to_string();
        match k.trim() {
            "ID" => os.id = Some(v),
            "ID_LIKE" => os.id_like = v.split_whitespace().map(str::to_string).collect(),
            "VERSION_ID" => os.version_id = Some(v),
            "PRETTY_NAME" => os.pretty_name = Some(v),
            _ => {}
        }
    }
    os
}

/// Package family, which decides the commands in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Debian,
    Rhel,
    Suse,
    Other,
}

impl OsRelease {
    pub fn family(&self) -> Family {
        let ids = self.id.iter().chain(self.id_like.iter());
        for id in ids {
            match id.as_str() {
                "debian" | "ubuntu" => return Family::Debian,
                "rhel" | "centos" | "fedora" | "rocky" | "almalinux" | "ol" => return Family::Rhel,
                "sles" | "suse" | "opensuse" | "opensuse-leap" => return Family::Suse,
                _ => {}
            }
        }
        Family::Other
    }
}

/// The installed OFED distribution, from `ofed_info -s`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Ofed {
    /// `MLNX_OFED_LINUX-24.07-0.6.1.0:` — the standalone installer (last release 24.10).
    MlnxOfed { version: String },
    /// `OFED-internal-24.10-1.1.4.0.200:` — DOCA-OFED (DOCA-Host).
    Doca { version: String },
    /// `ofed_info` answered something else.
    Other { line: String },
    /// No `ofed_info`: the distribution's inbox RDMA stack.
    None,
}

pub fn parse_ofed_info(stdout: &str) -> Ofed {
    let Some(line) = stdout.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return Ofed::None;
    };
    let line = line.trim_end_matches(':');
    if let Some(v) = line.strip_prefix("MLNX_OFED_LINUX-") {
        Ofed::MlnxOfed {
            version: v.split_whitespace().next().unwrap_or(v).to_string(),
        }
    } else if let Some(v) = line.strip_prefix("OFED-internal-") {
        Ofed::Doca {
            version: v.to_string(),
        }
    } else {
        Ofed::Other {
            line: line.to_string(),
        }
    }
}

impl Ofed {
    /// `major.minor` of the release (`24.07`), when known.
    pub fn release(&self) -> Option<(u32, u32)> {
        let v = match self {
            Ofed::MlnxOfed { version } | Ofed::Doca { version } => version,
            _ => return None,
        };
        let mut it = v.split(['.', '-']);
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    }
}

pub use crate::host::boot::dkms::{parse_dkms_status, DkmsEntry};

/// Who provides the rpcrdma that modprobe loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// The distribution kernel's own module: never has the hooks.
    Inbox,
    /// An NVIDIA `linux-nvidia` kernel, whose inbox rpcrdma has the hooks compiled in.
    NvidiaKernel,
    /// VAST's NFS client bundle (vastnfs), hooks compiled in, exported plain in 4.0.
    Vastnfs,
    /// mlnx-nfsrdma built by DKMS (DOCA-OFED or MLNX_OFED).
    MofedDkms,
    /// mlnx-nfsrdma from a prebuilt package (`extra/mlnx-nfsrdma`, `updates/`).
    MofedPackage,
    /// Some other out-of-tree build.
    OtherOutOfTree,
    BuiltIn,
    Missing,
}

#[derive(Debug, Clone, Serialize)]
pub struct Stack {
    pub os: OsRelease,
    pub family: Family,
    pub kernel_release: Option<String>,
    pub arch: Option<String>,
    pub ofed: Ofed,
    pub dkms: Vec<DkmsEntry>,
    /// The package owning the rpcrdma file, per `dpkg -S` / `rpm -qf`.
    pub rpcrdma_package: Option<String>,
    pub provenance: Provenance,
    /// `/sys/module/sunrpc/parameters/nfs_bundle_version`.
    pub vastnfs_version: Option<String>,
    /// `CONFIG_GPU_DIRECT_STORAGE` in mlnx-ofa_kernel's `configure.mk.kernel`, and where.
    pub ofa_gds_config: Option<(String, bool)>,
    pub gpu_driver: GpuDriver,
    /// `/run/nvidia/validations` or `/run/nvidia/driver` exist.
    pub gpu_operator: bool,
    /// `nvidia-fs-ready`, `mofed-ready`, … present in `/run/nvidia/validations`.
    pub operator_validations: Vec<String>,
    pub kubernetes: bool,
}

fn dkms_origin(origin: &ModuleOrigin) -> bool {
    matches!(origin, ModuleOrigin::UpdatesDkms) || matches!(origin, ModuleOrigin::Extra)
}

impl Stack {
    pub fn detect(facts: &HostFacts, runner: &dyn Runner) -> Result<Stack, HostError> {
        let root = &facts.root;
        let os = root
            .read_text_lossy("etc/os-release")?
            .or(root.read_text_lossy("usr/lib/os-release")?)
            .map(|t| parse_os_release(&t))
            .unwrap_or_default();
        let family = os.family();
        let kernel_release = facts.kernel.release.clone();
        let arch = read_first_line(root, "proc/sys/kernel/arch")?;
        let ofed = match runner.run("ofed_info", &["-s"]).ok_stdout() {
            Some(out) => parse_ofed_info(out),
            None => Ofed::None,
        };
        let dkms = runner
            .run("dkms", &["status"])
            .ok_stdout()
            .map(parse_dkms_status)
            .unwrap_or_default();
        let vastnfs_version =
            read_first_line(root, "sys/module/sunrpc/parameters/nfs_bundle_version")?;
        let (rpcrdma_package, provenance) =
            rpcrdma_provenance(facts, runner, family, &dkms, vastnfs_version.is_some());
        let ofa_gds_config = read_ofa_gds_config(root, kernel_release.as_deref())?;
        let gpu_driver = GpuDriver::read(root)?;
        let operator_validations = root.list_dir("run/nvidia/validations")?.unwrap_or_default();
        let gpu_operator =
            root.exists("run/nvidia/validations") || root.exists("run/nvidia/driver");
        let kubernetes = root.exists("var/lib/kubelet") || root.exists("etc/kubernetes");
        Ok(Stack {
            os,
            family,
            kernel_release,
            arch,
            ofed,
            dkms,
            rpcrdma_package,
            provenance,
            vastnfs_version,
            ofa_gds_config,
            gpu_driver,
            gpu_operator,
            operator_validations,
            kubernetes,
        })
    }

    /// The DKMS entry for a module name, for this kernel if there is one.
    pub fn dkms_entry(&self, module: &str) -> Option<&DkmsEntry> {
        let mine = self
            .dkms
            .iter()
            .filter(|e| e.module == module)
            .collect::<Vec<_>>();
        mine.iter()
            .find(|e| e.kernel.is_some() && e.kernel == self.kernel_release)
            .or(mine.first())
            .copied()
    }
}

fn rpcrdma_provenance(
    facts: &HostFacts,
    runner: &dyn Runner,
    family: Family,
    dkms: &[DkmsEntry],
    vastnfs: bool,
) -> (Option<String>, Provenance) {
    let release = facts.kernel.release.as_deref().unwrap_or("");
    match &facts.rpcrdma.resolution {
        Some(Resolution::BuiltIn { .. }) => (None, Provenance::BuiltIn),
        None | Some(Resolution::NotFound { .. }) | Some(Resolution::NoModuleTree { .. }) => {
            (None, Provenance::Missing)
        }
        Some(Resolution::File {
            path,
            rel_path,
            origin,
            ..
        }) => {
            let host_path = path
                .strip_prefix(facts.root.dir())
                .map(|p| format!("/{}", p.display()))
                .unwrap_or_else(|_| path.display().to_string());
            let package = owner_package(runner, family, &host_path);
            let provenance =
                if vastnfs || rel_path.contains("vastnfs") || rel_path.contains("bundle") {
                    Provenance::Vastnfs
                } else if *origin == ModuleOrigin::Inbox {
                    if release.contains("nvidia") {
                        Provenance::NvidiaKernel
                    } else {
                        Provenance::Inbox
                    }
                } else if dkms_origin(origin) && dkms.iter().any(|e| e.module == "mlnx-nfsrdma") {
                    Provenance::MofedDkms
                } else if rel_path.contains("mlnx-nfsrdma")
                    || package
                        .as_deref()
                        .is_some_and(|p| p.contains("mlnx-nfsrdma"))
                {
                    Provenance::MofedPackage
                } else if *origin == ModuleOrigin::UpdatesDkms {
                    Provenance::MofedDkms
                } else {
                    Provenance::OtherOutOfTree
                };
            (package, provenance)
        }
    }
}

/// `dpkg -S` answers `pkg: /path`; `rpm -qf` answers the package name or "… not owned …".
pub fn parse_owner(family: Family, stdout: &str) -> Option<String> {
    let line = stdout.lines().next()?.trim();
    if line.is_empty() || line.contains("not owned") || line.contains("no path found") {
        return None;
    }
    match family {
        Family::Debian => line.split_once(": ").map(|(p, _)| p.to_string()),
        _ => Some(line.to_string()),
    }
}

fn owner_package(runner: &dyn Runner, family: Family, path: &str) -> Option<String> {
    let out = match family {
        Family::Debian => runner.run("dpkg", &["-S", path]),
        Family::Rhel | Family::Suse => runner.run("rpm", &["-qf", path]),
        Family::Other => return None,
    };
    out.ok_stdout().and_then(|s| parse_owner(family, s))
}

/// Finds mlnx-ofa_kernel's `configure.mk.kernel` for this release and reads
/// `CONFIG_GPU_DIRECT_STORAGE`.
fn read_ofa_gds_config(
    root: &Root,
    release: Option<&str>,
) -> Result<Option<(String, bool)>, HostError> {
    let Some(release) = release else {
        return Ok(None);
    };
    let mut candidates = Vec::new();
    for arch in root.list_dir("usr/src/ofa_kernel")?.unwrap_or_default() {
        candidates.push(format!(
            "/usr/src/ofa_kernel/{arch}/{release}/configure.mk.kernel"
        ));
    }
    for ver in root
        .list_dir("var/lib/dkms/mlnx-ofed-kernel")?
        .unwrap_or_default()
    {
        candidates.push(format!(
            "/var/lib/dkms/mlnx-ofed-kernel/{ver}/build/configure.mk.kernel"
        ));
    }
    for c in candidates {
        if let Some(text) = root.read_text_lossy(&c)? {
            return Ok(Some((c, parse_gds_config(&text))));
        }
    }
    Ok(None)
}

/// Whether `configure.mk.kernel` sets `CONFIG_GPU_DIRECT_STORAGE=y`.
pub fn parse_gds_config(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.replace(' ', "");
        l == "CONFIG_GPU_DIRECT_STORAGE=y" || l == "CONFIG_GPU_DIRECT_STORAGE:=y"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_families() {
        let u =
            parse_os_release("NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"22.04\"\n");
        assert_eq!(u.family(), Family::Debian);
        assert_eq!(u.version_id.as_deref(), Some("22.04"));
        let r = parse_os_release("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n");
        assert_eq!(r.family(), Family::Rhel);
        assert_eq!(parse_os_release("ID=arch\n").family(), Family::Other);
    }

    #[test]
    fn ofed_flavours() {
        assert_eq!(
            parse_ofed_info("MLNX_OFED_LINUX-24.07-0.6.1.0:\n"),
            Ofed::MlnxOfed {
                version: "24.07-0.6.1.0".into()
            }
        );
        let d = parse_ofed_info("OFED-internal-24.10-1.1.4.0.200:\n");
        assert_eq!(
            d,
            Ofed::Doca {
                version: "24.10-1.1.4.0.200".into()
            }
        );
        assert_eq!(d.release(), Some((24, 10)));
        assert_eq!(parse_ofed_info(""), Ofed::None);
    }

    #[test]
    fn owners() {
        assert_eq!(
            parse_owner(
                Family::Debian,
                "linux-image-6.1.0-50-amd64: /lib/modules/x/rpcrdma.ko\n"
            )
            .as_deref(),
            Some("linux-image-6.1.0-50-amd64")
        );
        assert_eq!(
            parse_owner(
                Family::Debian,
                "dpkg-query: no path found matching pattern /x\n"
            ),
            None
        );
        assert_eq!(
            parse_owner(
                Family::Rhel,
                "kmod-mlnx-nfsrdma-24.10-OFED.24.10.1.1.4.1.rhel9u4.x86_64\n"
            )
            .as_deref(),
            Some("kmod-mlnx-nfsrdma-24.10-OFED.24.10.1.1.4.1.rhel9u4.x86_64")
        );
        assert_eq!(
            parse_owner(Family::Rhel, "file /x is not owned by any package\n"),
            None
        );
    }

    #[test]
    fn gds_config_flag() {
        assert!(parse_gds_config(
            "CONFIG_MLX5_CORE=y\nCONFIG_GPU_DIRECT_STORAGE=y\n"
        ));
        assert!(!parse_gds_config("CONFIG_GPU_DIRECT_STORAGE=\n"));
        assert!(!parse_gds_config(
            "# CONFIG_GPU_DIRECT_STORAGE is not set\n"
        ));
    }
}
