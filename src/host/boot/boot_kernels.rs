//! Every kernel installed beside the running one, and the one the next boot starts, each with
//! the rpcrdma its own modprobe would load: "GDS broke after the reboot" is a new kernel for
//! which DKMS built no mlnx-nfsrdma, so that boot loads the inbox module.
//!
//! For each kernel that is not running, its module tree resolves rpcrdma and the file is
//! inspected for the hooks (answered from the module facts cache while it is unchanged); that
//! kernel's GPL-only `__symbol_get` rule is judged from its own image only when a hook is
//! exported plain (the image scan decompresses tens of MB). The running kernel is left to the
//! other checks, which judge it from what is loaded.

use serde::Serialize;

use crate::host::boot::dkms::{self, DkmsEntry, DkmsState, MLNX_NFSRDMA};
use crate::host::boot::installed_kernels::{self, read_installed_kernels, InstalledKernel};
use crate::host::boot::next_boot::{read_next_boot, NextBoot};
use crate::host::io::error::HostError;
use crate::host::io::root::Root;
use crate::host::kernel::KernelInfo;
use crate::host::modules::gpl_rule::GplRule;
use crate::host::modules::{ModuleTree, Resolution};
use crate::kmod::btf::FrwrGeneration;
use crate::kmod::RPCRDMA;
use crate::kmod::{Export, ModuleFile, RPCRDMA_HOOKS};

/// One installed kernel that is not running, and its rpcrdma.
#[derive(Debug, Clone, Serialize)]
pub struct KernelRpcrdma {
    pub kernel: InstalledKernel,
    /// What that kernel's `modprobe rpcrdma` resolves to, or why its tree could not be read.
    pub resolution: Result<Resolution, String>,
    /// The inspected file, or why it could not be inspected.
    pub file: Option<Result<ModuleFile, String>>,
    /// That kernel's GPL-only rule, judged only when a hook is exported plain.
    pub gpl_rule: Option<GplRule>,
    /// What DKMS says about mlnx-nfsrdma for that kernel.
    pub dkms: DkmsState,
    /// The `frwr_map()` generation the file was built from, where its BTF or symbols tell: a
    /// hook patch made for the other generation does not apply to it.
    pub frwr_map: Option<FrwrGeneration>,
}

impl KernelRpcrdma {
    pub fn inspected(&self) -> Option<&ModuleFile> {
        self.file.as_ref().and_then(|f| f.as_ref().ok())
    }

    /// The `dkms install` that builds mlnx-nfsrdma for this kernel, when DKMS knows a version.
    pub fn dkms_fix(&self) -> Option<String> {
        self.dkms.fix(MLNX_NFSRDMA, &self.kernel.release)
    }
}

/// The installed kernels and the next boot.
#[derive(Debug, Clone, Serialize)]
pub struct BootKernels {
    /// The running kernel's release, as the installed list marks it.
    pub running: Option<String>,
    /// Every installed kernel (image and module tree), oldest to newest.
    pub installed: Vec<InstalledKernel>,
    /// The kernels that are not running, with their rpcrdma.
    pub others: Vec<KernelRpcrdma>,
    /// Which kernel the bootloader starts next, or why that could not be read.
    pub next_boot: Result<NextBoot, String>,
    /// The DKMS tree (`/var/lib/dkms`) as `dkms status` would print it.
    pub dkms: Vec<DkmsEntry>,
}

impl BootKernels {
    /// The rpcrdma of `release`, when it is an installed kernel other than the running one.
    pub fn other(&self, release: &str) -> Option<&KernelRpcrdma> {
        self.others.iter().find(|k| k.kernel.release == release)
    }
}

/// Reads the installed kernels, the next boot and each other kernel's rpcrdma.
pub fn read_boot_kernels(root: &Root, running: &KernelInfo) -> Result<BootKernels, HostError> {
    let installed = read_installed_kernels(root, running.release.as_deref())?;
    let next_boot = read_next_boot(root, &installed).map_err(|e| e.to_string());
    let dkms = dkms::read_dkms_tree(root)?;
    let cache = crate::host::io::facts_cache::FactsCache::of(root);
    let mut others = Vec::new();
    for k in installed.iter().filter(|k| !k.running) {
        let resolution = ModuleTree::read(root, &k.release)
            .and_then(|t| t.resolve(root, RPCRDMA))
            .map_err(|e| e.to_string());
        let read = match &resolution {
            Ok(Resolution::File {
                path, exists: true, ..
            }) => Some(
                crate::host::modules::module_files::inspect_with_load_facts(
                    root,
                    path,
                    &RPCRDMA_HOOKS,
                    cache.as_ref(),
                )
                .map_err(|e| e.to_string()),
            ),
            _ => None,
        };
        let frwr_map = match &read {
            Some(Ok((_, Ok(load)))) => load.frwr_map.map(|(g, _)| g),
            _ => None,
        };
        let file = read.map(|r| r.map(|(f, _)| f));
        let plain = file.as_ref().is_some_and(|f| {
            f.as_ref().is_ok_and(|f| {
                f.symbols
                    .iter()
                    .any(|s| s.defined && s.export == Export::Plain)
            })
        });
        let gpl_rule = plain.then(|| {
            installed_kernels::gpl_rule(root, k, &installed_kernels::kernel_info(k, running))
        });
        others.push(KernelRpcrdma {
            dkms: dkms::dkms_state(&dkms, MLNX_NFSRDMA, &k.release),
            kernel: k.clone(),
            resolution,
            file,
            gpl_rule,
            frwr_map,
        });
    }
    Ok(BootKernels {
        running: running.release.clone(),
        installed,
        others,
        next_boot,
        dkms,
    })
}
