//! Everything the node-level checks need, read from the host once.
//!
//! Reading is separate from judging: [`HostFacts::read`] gathers, the checks of the registry (a
//! layer above) judge.
//! Per-source failures (an unreadable `/proc/kallsyms`, a corrupt module file) are kept as
//! messages beside the facts, so one bad source makes one check "unknown" instead of stopping all.

use serde::Serialize;

use super::boot::boot_kernels::{self, BootKernels};
use super::io::error::HostError;
use super::io::root::Root;
use super::kernel::KernelInfo;
use super::modules::gpl_rule::{self, GplRule};
use super::modules::kallsyms::{self, KallsymsEntry};
use super::modules::loaded_build::{self, LoadedBuild};
use super::modules::loaded_hooks::{self, LoadedHook, SameBuild};
use super::modules::localio::Localio;
use super::modules::module_load::{self, ModuleLoad};
use super::modules::module_owners::ModuleOwners;
use super::modules::rpcrdma_requests::{read_rpcrdma_requests, RpcrdmaRequests};
use super::modules::sysmodule::SysModule;
use super::modules::{self, LoadedModule, ModuleTree, Resolution};
use super::mount_localio::read_localio;
use super::platform::container::ContainerFacts;
use super::platform::cufile_json::{self, CufileLint};
use super::platform::gdscheck::GdscheckRun;
use super::platform::inventory::Inventory;
use super::platform::io_path::IoPaths;
use super::platform::module_keys::ModuleKeys;
use super::platform::nvfs_probe::{self, ProbeOutcome};
use super::platform::nvfs_topology::NvfsTopology;
use super::platform::nvidia_fs::{GpuDriver, NvidiaFs};
use super::platform::pci::PciFacts;
use crate::kmod::load_facts::LoadFacts;
use crate::kmod::{self, ModuleFile, RPCRDMA, RPCRDMA_HOOKS};

/// rpcrdma as modprobe, the kernel and kallsyms see it.
#[derive(Debug, Clone, Serialize)]
pub struct RpcrdmaFacts {
    /// What `modprobe rpcrdma` would load; `None` when the kernel release is unknown.
    pub resolution: Option<Resolution>,
    /// The inspected module file, or why it could not be inspected.
    pub file: Option<Result<ModuleFile, String>>,
    /// Listed in `/proc/modules`.
    pub loaded: bool,
    pub sys: SysModule,
    /// The hook lines of `/proc/kallsyms`, or why it could not be read; `None` when it was not
    /// read because nothing needed it: rpcrdma not loaded, or loaded from the resolved file
    /// ([`RpcrdmaFacts::same_build`]).
    pub kallsyms: Option<Result<Vec<KallsymsEntry>, String>>,
    /// When loaded as a module: whether the loaded build is the resolved file, another file of
    /// the tree, or from outside it.
    pub loaded_build: Option<LoadedBuild>,
    /// What modprobe's configuration does to the requests that load rpcrdma, or why it could
    /// not be read; `None` when the kernel release is unknown.
    pub requests: Option<Result<RpcrdmaRequests, String>>,
}

impl RpcrdmaFacts {
    pub fn is_builtin(&self) -> bool {
        matches!(self.resolution, Some(Resolution::BuiltIn { .. }))
    }

    /// rpcrdma is loaded as a module that is not known to be the resolved file: the loaded
    /// module carries the next mount, and the file is only what a reload or reboot loads.
    pub fn loaded_elsewhere(&self) -> bool {
        self.loaded
            && !self.is_builtin()
            && !matches!(self.loaded_build, Some(LoadedBuild::ResolvedFile))
    }

    pub fn inspected(&self) -> Option<&ModuleFile> {
        self.file.as_ref().and_then(|f| f.as_ref().ok())
    }

    /// The loaded rpcrdma is the resolved file by GNU build-id, and the file's facts say what
    /// kallsyms would about its hooks.
    pub fn same_build(&self) -> Option<SameBuild<'_>> {
        if !self.loaded || self.is_builtin() {
            return None;
        }
        loaded_hooks::same_build(&self.sys, self.inspected())
    }

    /// Whether `/proc/kallsyms` has to be read to know the hooks the kernel runs: for a built-in
    /// rpcrdma, and for a loaded one the build-id does not tie to the resolved file. When
    /// `/proc/modules` could not be read (`modules_known` false), whether rpcrdma is loaded is
    /// unknown and kallsyms is read as well.
    pub fn needs_kallsyms(&self, modules_known: bool) -> bool {
        self.is_builtin() || !modules_known || (self.loaded && self.same_build().is_none())
    }

    /// The hooks of the loaded rpcrdma (or of the kernel image when rpcrdma is built in): from
    /// kallsyms when it was read, else from the file the loaded build is.
    pub fn loaded_hooks(&self) -> Vec<LoadedHook> {
        match (&self.kallsyms, self.same_build()) {
            (Some(Ok(entries)), _) => loaded_hooks::from_kallsyms(entries, self.is_builtin()),
            (None, Some(same)) => loaded_hooks::from_file(same),
            _ => Vec::new(),
        }
    }

    /// Why the loaded hooks cannot be known: kallsyms was needed and could not be read.
    pub fn loaded_hooks_unknown(&self) -> Option<String> {
        match (&self.kallsyms, self.same_build()) {
            (Some(Err(e)), _) => Some(format!("kallsyms cannot be read: {e}")),
            (None, None) => Some(format!("/{} was not read", kallsyms::PATH)),
            _ => None,
        }
    }

    /// Where [`RpcrdmaFacts::loaded_hooks`] were seen, as the evidence names it: `/proc/kallsyms`,
    /// or the file the loaded build is.
    pub fn loaded_hooks_seen_in(&self) -> String {
        match (&self.kallsyms, self.same_build()) {
            (None, Some(same)) => same.file.path.display().to_string(),
            _ => format!("/{}", kallsyms::PATH),
        }
    }

    /// When kallsyms was not read because the build-id tied the loaded module to its file: the
    /// evidence of that match, which the checks show in its place.
    pub fn kallsyms_skipped(&self) -> Option<String> {
        match (&self.kallsyms, self.same_build()) {
            (None, Some(same)) => Some(same.evidence()),
            _ => None,
        }
    }

    /// Whether the kallsyms type letter of a module symbol tells its license: true unless the
    /// module file shows the `__kflagstab` layout, where `T` marks GPL exports too.
    pub fn kallsyms_shows_license(&self) -> bool {
        self.inspected()
            .is_none_or(|f| f.export_layout != kmod::ExportLayout::FlagsTable)
    }

    /// Whether any evidence shows a plain (non-GPL) export of a hook.
    pub fn any_plain_export(&self) -> bool {
        let in_file = self.inspected().is_some_and(|f| {
            f.symbols
                .iter()
                .any(|s| s.defined && s.export == kmod::Export::Plain)
        });
        let loaded = !self.is_builtin()
            && self.kallsyms_shows_license()
            && self.loaded_hooks().iter().any(|e| e.plain_export());
        in_file || loaded
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    #[serde(skip)]
    pub root: Root,
    pub kernel: KernelInfo,
    /// `/proc/modules`, when readable.
    pub loaded_modules: Option<Vec<LoadedModule>>,
    pub nvidia_fs: NvidiaFs,
    pub rpcrdma: RpcrdmaFacts,
    /// Only judged when a hook is exported plain: scanning the kernel image costs a
    /// decompression of tens of MB, and the answer matters only then.
    pub gpl_rule: Option<GplRule>,
    /// Whether the kernel will load the rpcrdma file modprobe resolves: symbol versions against
    /// its providers, signature against the kernel's enforcement.
    pub rpcrdma_load: ModuleLoad,
    /// Every installed kernel, the one the next boot starts, and their rpcrdma.
    pub boot: BootKernels,
    /// The kernel log, when the caller read it (doctor, through its runner's `dmesg`): the
    /// kernel's own verdict on earlier loads, shown as evidence.
    #[serde(skip)]
    pub kernel_log: Option<String>,
    /// NVIDIA GPUs and RDMA NICs on the PCI bus.
    pub pci: PciFacts,
    /// The path from each NFS server to the NIC that carries it and the GPUs.
    pub io_paths: IoPaths,
    /// Whether NFS LOCALIO can bypass RPC here: the kernel's build, its switch, a local nfsd.
    pub localio: Localio,
    /// The NVIDIA GPU kernel driver (nvidia.ko) and its flavour.
    pub gpu_driver: GpuDriver,
    /// `/proc/cmdline`, when readable.
    pub cmdline: Option<String>,
    /// nvidia-fs's view of the PCIe path (ACS bridges, GPU-to-peer distances).
    pub nvfs_topology: NvfsTopology,
    /// The cufile.json cuFile would read, linted; `None` when there is none.
    pub cufile: Option<CufileLint>,
    /// Evidence of running in a container.
    pub container: ContainerFacts,
    /// The keys the kernel trusts for module signatures (MOK list, pending enrolments, keyrings).
    pub module_keys: ModuleKeys,
    /// Installed packages, product name and NFS bundle release, for the known-bad list.
    pub inventory: Inventory,
    /// Which package family owns rpcrdma, sunrpc and ib_core: loaded, next and installed.
    pub owners: Result<ModuleOwners, String>,
    /// The live registration probe, when it was asked for ([`HostFacts::run_probe`]).
    #[serde(skip)]
    pub probe: Option<ProbeRun>,
    /// `gdscheck -p`'s answer, when doctor ran it or read it from a bundle (never the helper).
    #[serde(skip)]
    pub gdscheck: Option<GdscheckRun>,
}

/// What the live probe saw, with the kernel log lines that can explain a refusal.
#[derive(Debug, Clone)]
pub struct ProbeRun {
    pub outcome: ProbeOutcome,
    pub kernel_log: Option<String>,
}

impl HostFacts {
    pub fn read(given: &Root) -> Result<Self, HostError> {
        // One pass asks about the same module files many times: the answers are kept for it.
        let root = &given.remembering();
        let kernel = KernelInfo::read(root)?;
        let loaded_modules = modules::read_proc_modules(root)?;
        let nvidia_fs = NvidiaFs::read(root)?;
        // The running kernel's module tree, read once: its indexes are built on first use and
        // every reader below asks the same tree.
        let tree = match &kernel.release {
            Some(release) => Some(ModuleTree::read(root, release)?),
            None => None,
        };
        let (rpcrdma, rpcrdma_load_facts) =
            read_rpcrdma(root, &kernel, tree.as_ref(), loaded_modules.as_deref())?;
        let gpl_rule = rpcrdma
            .any_plain_export()
            .then(|| gpl_rule::read(root, &kernel));
        // The running kernel's configuration, read once for every reader that judges it.
        let config = module_load::read_running_config(root, &kernel);
        let rpcrdma_load = module_load::read_module_load(
            root,
            kernel.release.as_deref(),
            &config,
            tree.as_ref(),
            rpcrdma_load_facts,
        )?;
        let boot = boot_kernels::read_boot_kernels(root, &kernel)?;
        let pci = PciFacts::read(root)?;
        let gpus: Vec<String> = pci.gpus.iter().map(|g| g.address.clone()).collect();
        // Ownership is its own fact: an unreadable tree fails it alone.
        let owners = tree
            .as_ref()
            .map_or(Ok(ModuleOwners::default()), |t| ModuleOwners::read(root, t))
            .map_err(|e| e.to_string());
        let localio = read_localio(root, config?.as_ref())?;
        Ok(HostFacts {
            root: given.clone(),
            kernel,
            loaded_modules,
            nvidia_fs,
            rpcrdma,
            gpl_rule,
            rpcrdma_load,
            boot,
            kernel_log: None,
            io_paths: IoPaths::read(root, &gpus)?,
            localio,
            pci,
            gpu_driver: GpuDriver::read(root)?,
            cmdline: root.read_text_lossy("proc/cmdline")?,
            nvfs_topology: NvfsTopology::read(root)?,
            cufile: cufile_json::read_cufile_lint(root)?,
            container: ContainerFacts::read(root)?,
            module_keys: ModuleKeys::read(root)?,
            inventory: Inventory::read(root)?,
            owners,
            probe: None,
            gdscheck: None,
        })
    }

    /// Whether this kernel can load modules at all: it has `/proc/modules` and was not booted
    /// with `nomodule` (a kernel parameter, so before any `--`).
    pub fn modules_loadable(&self) -> bool {
        self.loaded_modules.is_some()
            && !self
                .cmdline
                .as_deref()
                .is_some_and(|c| super::kernel_cmdline::has_kernel_flag(c, "nomodule"))
    }

    /// Runs the live registration probe through `system` (it opens `/dev/nvidia-fs0`) and
    /// keeps its outcome.
    pub fn run_probe(&mut self, system: &dyn crate::system::System, kernel_log: Option<String>) {
        self.probe = Some(ProbeRun {
            outcome: nvfs_probe::probe(system),
            kernel_log,
        });
    }
}

fn read_rpcrdma(
    root: &Root,
    kernel: &KernelInfo,
    tree: Option<&ModuleTree>,
    loaded: Option<&[LoadedModule]>,
) -> Result<(RpcrdmaFacts, Option<Result<LoadFacts, String>>), HostError> {
    let requests = tree.map(|t| read_rpcrdma_requests(root, t, kernel).map_err(|e| e.to_string()));
    // A configuration `alias` that redirects `modprobe rpcrdma` decides what it loads.
    let wanted = requests
        .as_ref()
        .and_then(|r| r.as_ref().ok())
        .and_then(RpcrdmaRequests::redirected_to)
        .unwrap_or(RPCRDMA)
        .to_string();
    let resolution = match tree {
        Some(t) => Some(t.resolve(root, &wanted)?),
        None => None,
    };
    let mut load_facts = None;
    let file = match &resolution {
        Some(Resolution::File {
            path, exists: true, ..
        }) => {
            let cache = crate::host::io::facts_cache::FactsCache::of(root);
            Some(
                super::modules::module_files::inspect_with_load_facts(
                    root,
                    path,
                    &RPCRDMA_HOOKS,
                    cache.as_ref(),
                )
                .map(|(file, load)| {
                    load_facts = Some(load);
                    file
                })
                .map_err(|e| e.to_string()),
            )
        }
        _ => None,
    };
    let modules_known = loaded.is_some();
    let loaded = loaded.is_some_and(|m| m.iter().any(|m| m.name == RPCRDMA));
    let sys = SysModule::read(root, RPCRDMA)?;
    let loaded_build = if loaded && !matches!(resolution, Some(Resolution::BuiltIn { .. })) {
        Some(read_loaded_build(root, tree, &resolution, &file, &sys)?)
    } else {
        None
    };
    let mut facts = RpcrdmaFacts {
        resolution,
        file,
        loaded,
        sys,
        kallsyms: None,
        loaded_build,
        requests,
    };
    if facts.needs_kallsyms(modules_known) {
        facts.kallsyms = Some(read_kallsyms(root));
    }
    Ok((facts, load_facts))
}

/// The hook lines of `/proc/kallsyms`, streamed, or why it could not be read.
fn read_kallsyms(root: &Root) -> Result<Vec<KallsymsEntry>, String> {
    match kallsyms::read_symbols(root, &RPCRDMA_HOOKS) {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(format!(
            "{} does not exist",
            root.join(kallsyms::PATH).display()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Compares the loaded build with the resolved file, and looks for it in the tree only when
/// they differ.
fn read_loaded_build(
    root: &Root,
    tree: Option<&ModuleTree>,
    resolution: &Option<Resolution>,
    file: &Option<Result<ModuleFile, String>>,
    sys: &SysModule,
) -> Result<LoadedBuild, HostError> {
    let inspected = file.as_ref().and_then(|f| f.as_ref().ok());
    let resolved_path = match resolution {
        Some(Resolution::File { path, .. }) => Some(path),
        _ => None,
    };
    if let Some(loaded_id) = &sys.build_id {
        if inspected.and_then(|f| f.build_id.as_ref()) == Some(loaded_id) {
            return Ok(LoadedBuild::ResolvedFile);
        }
        return match tree {
            Some(t) => loaded_build::locate(root, &t.dir_rel, resolved_path, loaded_id),
            None => Ok(LoadedBuild::Unknown),
        };
    }
    match (
        &sys.srcversion,
        inspected.and_then(|f| f.modinfo.srcversion.as_ref()),
    ) {
        (Some(l), Some(d)) if l == d => Ok(LoadedBuild::ResolvedFile),
        (Some(_), Some(_)) => Ok(LoadedBuild::OtherBuild),
        _ => Ok(LoadedBuild::Unknown),
    }
}
