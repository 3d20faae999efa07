//! Which storage stack this node runs: distribution, DOCA-OFED / MLNX_OFED, DKMS, VAST's NFS
//! bundle, NVIDIA's own kernels, the GPU Operator. The remediation plan is chosen from this.
//!
//! Composed from what the host readers found ([`HostFacts`], [`StackFacts`]); which stack
//! provides rpcrdma is the first entry of the [stack catalogue](super::stacks) that recognises it.
//! Nothing here reads the host.

use serde::Serialize;

use crate::host::modules::module_owners::{ModuleCopy, ModuleOwners};

use super::stacks::{self, Detection, RpcrdmaStack};
use crate::host::facts::HostFacts;
use crate::host::platform::nvidia_fs::GpuDriver;
use crate::host::stack_facts::StackFacts;

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
    /// The catalogue entry that provides rpcrdma; its id in JSON.
    #[serde(serialize_with = "stacks::serialize_id")]
    pub provenance: &'static dyn RpcrdmaStack,
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
}

impl Stack {
    /// The stack the host facts describe.
    pub fn of(facts: &HostFacts, found: &StackFacts) -> Stack {
        let provenance = stacks::detect(&Detection {
            resolution: facts.rpcrdma.resolution.as_ref(),
            release: facts.kernel.release.as_deref().unwrap_or(""),
            package: found.rpcrdma_package.as_deref(),
            dkms: &found.dkms,
            vastnfs: found.vastnfs_version.is_some(),
        });
        let owners = facts.owners.clone().unwrap_or_default();
        Stack {
            os: found.os.clone(),
            family: found.os.family(),
            kernel_release: facts.kernel.release.clone(),
            arch: found.arch.clone(),
            ofed: found.ofed.clone(),
            dkms: found.dkms.clone(),
            rpcrdma_package: found.rpcrdma_package.clone(),
            provenance,
            vastnfs_version: found.vastnfs_version.clone(),
            ofa_gds_config: found.ofa_gds_config.clone(),
            gpu_driver: facts.gpu_driver.clone(),
            gpu_operator: found.gpu_operator,
            operator_validations: found.operator_validations.clone(),
            kubernetes: found.kubernetes,
            owners,
        }
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

    /// The rpcrdma file the next load takes, with its family and where a link points.
    pub fn rpcrdma_next(&self) -> Option<&ModuleCopy> {
        self.owners.get("rpcrdma")?.next.as_ref()
    }

    /// The kernel the plan's commands name: the running one, or `$(uname -r)` when unknown.
    pub fn kernel(&self) -> &str {
        self.kernel_release.as_deref().unwrap_or("$(uname -r)")
    }

    /// Where rpcrdma comes from, the OFED, the owning package and the DKMS builds, in words.
    pub fn describe(&self) -> String {
        let ofed = match &self.ofed {
            Ofed::MlnxOfed { version } => format!("MLNX_OFED {version}"),
            Ofed::Doca { version } => format!("DOCA-OFED {version}"),
            Ofed::Other { line } => format!("OFED ({line})"),
            Ofed::None => "no MLNX_OFED/DOCA-OFED (ofed_info absent)".into(),
        };
        let mut text = format!("{}; {ofed}", self.provenance.describe(self));
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
