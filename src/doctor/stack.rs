//! Which storage stack this node runs: distribution, DOCA-OFED / MLNX_OFED, DKMS, VAST's NFS
//! bundle, NVIDIA's own kernels, the GPU Operator. The remediation plan is chosen from this.
//!
//! Composed from what the host readers found, by [`stacks::identify`](super::stacks::identify):
//! which stack provides rpcrdma is the first entry of the catalogue that recognises it, named
//! here by its id. Nothing here reads the host.

use serde::Serialize;

use crate::host::modules::module_owners::{ModuleCopy, ModuleOwners};

use crate::host::platform::nvidia_fs::GpuDriver;

pub use crate::host::boot::dkms::DkmsEntry;
pub use crate::host::platform::ofed::Ofed;
pub use crate::host::platform::os_release::{Family, OsRelease};

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
    /// The id of the catalogue entry that provides rpcrdma.
    pub provenance: &'static str,
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
    /// Which package family owns rpcrdma, sunrpc and ib_core (shown by `stack-ownership`).
    #[serde(skip)]
    pub owners: ModuleOwners,
    /// The rpcrdma file modprobe resolves defines both nvfs hooks.
    #[serde(skip)]
    pub file_hooked: bool,
    /// NVIDIA's OFED metapackages installed (`mlnx-ofed-all 24.10-…`, `doca-ofed 3.1.0-…`).
    #[serde(skip)]
    pub ofed_packages: Vec<String>,
}

impl Stack {
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

    /// The rpcrdma file the next load takes, with its family and where a link points.
    pub fn rpcrdma_next(&self) -> Option<&ModuleCopy> {
        self.owners.get("rpcrdma")?.next.as_ref()
    }

    /// The kernel the plan's commands name: the running one, or `$(uname -r)` when unknown.
    pub fn kernel(&self) -> &str {
        self.kernel_release.as_deref().unwrap_or("$(uname -r)")
    }

    /// Where rpcrdma comes from (`source`, the provenance's own words), the OFED, the owning
    /// package and the DKMS builds, in words.
    pub fn describe(&self, source: &str) -> String {
        let ofed = match &self.ofed {
            Ofed::MlnxOfed { version } => format!("MLNX_OFED {version}"),
            Ofed::Doca { version } => format!("DOCA-OFED {version}"),
            Ofed::Other { line } => format!("OFED ({line})"),
            Ofed::None => "no MLNX_OFED/DOCA-OFED (ofed_info absent)".into(),
        };
        let mut text = format!("{source}; {ofed}");
        if let Some(p) = &self.rpcrdma_package {
            text.push_str(&format!("; file owned by package {p}"));
        }
        if let Some(v) = &self.vastnfs_version {
            text.push_str(&format!("; vastnfs bundle {v}"));
        }
        let dkms: Vec<String> = self
            .dkms
            .iter()
            .filter(|e| {
                e.module.starts_with("mlnx") || e.module == "nvidia-fs" || e.module == "vastnfs"
            })
            .map(|e| {
                format!(
                    "{}/{} {}: {}",
                    e.module,
                    e.version,
                    e.kernel.as_deref().unwrap_or(""),
                    e.state
                )
            })
            .collect();
        if !dkms.is_empty() {
            text.push_str(&format!("; dkms: {}", dkms.join(", ")));
        }
        text
    }
}
