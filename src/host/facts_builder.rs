//! [`HostFacts`] without a tree, for the unit tests of the checks: [`HostFacts::builder`] starts
//! from an ordinary node without GDS, and each field is set by a method of the same name (or by
//! [`HostFactsBuilder::with`] for a change inside one). The pieces a test most often sets — an
//! rpcrdma module file with or without the hooks, its resolution, the kallsyms lines of a loaded
//! build — have constructors here, so the tests say what differs from that node and no more.
//!
//! The ordinary node: kernel `6.8.0-45-generic`, modules loadable, no NVIDIA GPU, no nvidia_fs,
//! the distribution's own rpcrdma (`kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst`, without the
//! hooks) resolved but not loaded, modprobe's configuration leaving it alone, signatures not
//! enforced, the next boot starting the running kernel, no cufile.json, not in a container.

use std::path::PathBuf;

use super::boot::boot_kernels::BootKernels;
use super::boot::next_boot::{Bootloader, NextBoot};
use super::facts::{HostFacts, ProbeRun, RpcrdmaFacts};
use super::io::root::Root;
use super::kernel::KernelInfo;
use super::modules::gpl_rule::{Enforcement, GplRule};
use super::modules::kallsyms::KallsymsEntry;
use super::modules::loaded_build::LoadedBuild;
use super::modules::modprobe_effect::{Lookup, ModuleOutcome, ModuleStep, RequestExplanation};
use super::modules::module_load::ModuleLoad;
use super::modules::module_owners::ModuleOwners;
use super::modules::rpcrdma_requests::RpcrdmaRequests;
use super::modules::sig_enforcement::SignatureEnforcement;
use super::modules::sysmodule::SysModule;
use super::modules::{LoadedModule, ModuleOrigin, Resolution};
use super::platform::container::ContainerFacts;
use super::platform::cufile_json::CufileLint;
use super::platform::io_path::IoPaths;
use super::platform::nvfs_topology::NvfsTopology;
use super::platform::nvidia_fs::{GpuDriver, GpuDriverFlavour, NvidiaFs};
use super::platform::pci::{PciDevice, PciFacts, MELLANOX_VENDOR, NVIDIA_VENDOR};
use crate::host::platform::inventory::Inventory;
use crate::host::platform::module_keys::ModuleKeys;
use crate::kmod::abi::KernelModversions;
use crate::kmod::load_facts::{LoadFacts, SignatureFacts};
use crate::kmod::modversions::{ExportCrcSource, ExportCrcs, ImportVersions};
use crate::kmod::{Compression, Export, ExportLayout, ModuleFile, RPCRDMA, RPCRDMA_HOOKS};

/// The running kernel of the ordinary node.
pub const RELEASE: &str = "6.8.0-45-generic";

/// Where the ordinary node's rpcrdma lives, relative to its module tree.
pub const INBOX_RPCRDMA: &str = "kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst";

/// Builds [`HostFacts`] field by field, from [`HostFacts::builder`]'s ordinary node.
#[derive(Debug, Clone)]
pub struct HostFactsBuilder(HostFacts);

macro_rules! setters {
    ($($field:ident: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets `", stringify!($field), "`.")]
            pub fn $field(mut self, value: $ty) -> Self {
                self.0.$field = value;
                self
            }
        )*
    };
}

impl HostFactsBuilder {
    setters! {
        root: Root,
        kernel: KernelInfo,
        loaded_modules: Option<Vec<LoadedModule>>,
        nvidia_fs: NvidiaFs,
        rpcrdma: RpcrdmaFacts,
        gpl_rule: Option<GplRule>,
        rpcrdma_load: ModuleLoad,
        boot: BootKernels,
        kernel_log: Option<String>,
        pci: PciFacts,
        gpu_driver: GpuDriver,
        cmdline: Option<String>,
        nvfs_topology: NvfsTopology,
        cufile: Option<CufileLint>,
        container: ContainerFacts,
        io_paths: IoPaths,
        owners: Result<ModuleOwners, String>,
        probe: Option<ProbeRun>,
    }

    /// Changes anything, for a field inside a field (`|f| f.rpcrdma.loaded = true`).
    /// nvidia_fs loaded at `version` (`None`: no release known), with no DKMS source tree.
    pub fn nvidia_fs_release(self, version: Option<&str>) -> Self {
        let version = version.map(str::to_string);
        self.with(|f| {
            f.nvidia_fs.version = version;
            f.nvidia_fs.source_versions = Vec::new();
        })
    }

    pub fn with(mut self, change: impl FnOnce(&mut HostFacts)) -> Self {
        change(&mut self.0);
        self
    }

    pub fn build(self) -> HostFacts {
        self.0
    }
}

impl HostFacts {
    /// An ordinary node without GDS (see the module's header), to change field by field.
    pub fn builder() -> HostFactsBuilder {
        HostFactsBuilder(ordinary())
    }
}

fn ordinary() -> HostFacts {
    let file = module_file(INBOX_RPCRDMA, false, Export::NotExported);
    HostFacts {
        root: Root::new("/nonexistent/nfs-gds-facts-without-a-tree"),
        kernel: KernelInfo {
            release: Some(RELEASE.into()),
            proc_version: Some(format!(
                "Linux version {RELEASE} (buildd@ubuntu) #45-Ubuntu SMP"
            )),
            version_signature: None,
            upstream: None,
            upstream_source: None,
        },
        loaded_modules: Some(Vec::new()),
        nvidia_fs: NvidiaFs::default(),
        rpcrdma: RpcrdmaFacts {
            resolution: Some(resolution(INBOX_RPCRDMA)),
            file: Some(Ok(file)),
            loaded: false,
            sys: SysModule::default(),
            kallsyms: Some(Ok(Vec::new())),
            loaded_build: None,
            requests: Some(Ok(untouched_requests())),
        },
        gpl_rule: None,
        rpcrdma_load: ModuleLoad {
            file: None,
            modversions: KernelModversions::Unknown,
            abi: None,
            divergent_providers: Vec::new(),
            nvidia_fs_file: None,
            nvidia_fs_abi: None,
            nvidia_fs_divergent: Vec::new(),
            signatures: Ok(SignatureEnforcement {
                enforcement: Enforcement::NotEnforced,
                evidence: "no Secure Boot, no module.sig_enforce".into(),
            }),
            crcless_kernel: None,
            crcless: None,
            nvidia_fs_crcless: None,
        },
        boot: BootKernels {
            running: Some(RELEASE.into()),
            installed: Vec::new(),
            others: Vec::new(),
            next_boot: Ok(NextBoot {
                release: Some(RELEASE.into()),
                bootloader: Bootloader::Grub,
                entry: None,
                cmdline: None,
                decided_by: "GRUB's default entry".into(),
                notes: Vec::new(),
            }),
            dkms: Vec::new(),
        },
        kernel_log: None,
        pci: PciFacts::default(),
        gpu_driver: GpuDriver {
            loaded: false,
            version: None,
            flavour: GpuDriverFlavour::Unknown,
            evidence: None,
        },
        cmdline: Some(format!(
            "BOOT_IMAGE=/boot/vmlinuz-{RELEASE} root=/dev/sda1 ro quiet"
        )),
        nvfs_topology: NvfsTopology::default(),
        cufile: None,
        container: ContainerFacts::default(),
        io_paths: IoPaths::default(),
        localio: Default::default(),
        module_keys: ModuleKeys::none(),
        inventory: Inventory::default(),
        owners: Ok(ModuleOwners::default()),
        probe: None,
        gdscheck: None,
    }
}

/// modprobe resolving rpcrdma to `rel` (below the ordinary node's module tree), which exists.
pub fn resolution(rel: &str) -> Resolution {
    Resolution::File {
        module: RPCRDMA.into(),
        rel_path: rel.into(),
        path: module_path(rel),
        origin: ModuleOrigin::of(rel),
        deps: vec!["ib_core".into(), "sunrpc".into()],
        exists: true,
    }
}

/// Where the builder's module files are, as the host path of `rel` in the module tree.
pub fn module_path(rel: &str) -> PathBuf {
    PathBuf::from(format!("/lib/modules/{RELEASE}/{rel}"))
}

/// An inspected rpcrdma file at `rel`: with both hooks `defined` and exported as `export`, or
/// without them.
pub fn module_file(rel: &str, defined: bool, export: Export) -> ModuleFile {
    ModuleFile {
        path: module_path(rel),
        compression: if rel.ends_with(".zst") {
            Compression::Zstd
        } else {
            Compression::None
        },
        file_size: 90_000,
        elf_size: 250_000,
        modinfo: Default::default(),
        build_id: None,
        has_symtab: true,
        versioned_variants: Vec::new(),
        export_layout: ExportLayout::SplitTables,
        symbols: crate::kmod::hook_symbols(defined, export),
    }
}

/// A hooked rpcrdma as DOCA-OFED's DKMS build installs it, exporting the hooks GPL.
pub const DKMS_RPCRDMA: &str = "updates/dkms/rpcrdma.ko";

/// The kallsyms lines of both hooks in a loaded rpcrdma, with type letter `letter` (`T` for a
/// plain export on kernels with split export tables, `t` for GPL).
pub fn loaded_hooks(letter: char) -> Vec<KallsymsEntry> {
    RPCRDMA_HOOKS
        .iter()
        .enumerate()
        .map(|(i, s)| KallsymsEntry {
            symbol: s.to_string(),
            type_letter: letter,
            module: Some(RPCRDMA.into()),
            line: format!("ffffffffc0a{i}1000 {letter} {s}\t[{RPCRDMA}]"),
        })
        .collect()
}

/// rpcrdma as the ordinary node has it, but from `rel` with the hooks as given, loaded or not
/// (a loaded build is the file, with its hooks in kallsyms when the file has them).
pub fn rpcrdma(rel: &str, hooks: bool, export: Export, loaded: bool) -> RpcrdmaFacts {
    let mut file = module_file(rel, hooks, export.clone());
    file.build_id = Some("a1b2c3".into());
    RpcrdmaFacts {
        resolution: Some(resolution(rel)),
        file: Some(Ok(file)),
        loaded,
        sys: if loaded {
            SysModule {
                present: true,
                initstate: Some("live".into()),
                version: None,
                srcversion: None,
                build_id: Some("a1b2c3".into()),
            }
        } else {
            SysModule::default()
        },
        kallsyms: Some(Ok(if loaded && hooks {
            loaded_hooks(if export == Export::Plain { 'T' } else { 't' })
        } else {
            Vec::new()
        })),
        loaded_build: loaded.then_some(LoadedBuild::ResolvedFile),
        requests: Some(Ok(untouched_requests())),
    }
}

/// `/proc/modules`'s line of a loaded module.
pub fn loaded_module(name: &str) -> LoadedModule {
    LoadedModule {
        name: name.into(),
        size: 200_000,
        refcount: Some(0),
        used_by: Vec::new(),
        state: "Live".into(),
    }
}

/// `modprobe rpcrdma` and the kernel's request with no configuration line about them.
pub fn untouched_requests() -> RpcrdmaRequests {
    RpcrdmaRequests {
        files: vec!["/lib/modprobe.d/aliases.conf".into()],
        requests: vec![plain_request(RPCRDMA)],
        bad_lines: Vec::new(),
    }
}

/// A request of `name` that loads rpcrdma's file, untouched.
pub fn plain_request(name: &str) -> RequestExplanation {
    RequestExplanation {
        request: name.into(),
        lookup: Lookup::ModuleName,
        targets: vec![RPCRDMA.into()],
        steps: vec![ModuleStep {
            module: RPCRDMA.into(),
            role: "target".into(),
            outcome: ModuleOutcome::Loads {
                file: Some(INBOX_RPCRDMA.into()),
            },
            options: Vec::new(),
        }],
        effects: Vec::new(),
    }
}

/// An NVIDIA GPU at `address` whose IOMMU group is of `iommu` type (`identity`, `DMA-FQ`).
pub fn gpu(address: &str, iommu: Option<&str>) -> PciDevice {
    pci_device(address, NVIDIA_VENDOR, 0x030200, iommu)
}

/// A Mellanox RDMA NIC at `address` (`mlx5_0`) whose IOMMU group is of `iommu` type.
pub fn rdma_nic(address: &str, iommu: Option<&str>) -> PciDevice {
    let mut d = pci_device(address, MELLANOX_VENDOR, 0x020000, iommu);
    d.rdma_names = vec!["mlx5_0".into()];
    d
}

fn pci_device(address: &str, vendor: u32, class: u32, iommu: Option<&str>) -> PciDevice {
    PciDevice {
        address: address.into(),
        vendor,
        class,
        iommu_group_type: iommu.map(str::to_string),
        rdma_names: Vec::new(),
    }
}

/// The load facts of a module file at `rel` (unversioned, no exports), signed as `signature`.
pub fn load_facts(rel: &str, signature: SignatureFacts) -> LoadFacts {
    LoadFacts {
        path: module_path(rel),
        compression: Compression::None,
        imports: ImportVersions::Unversioned,
        exports: ExportCrcs {
            source: ExportCrcSource::None,
            crcs: Default::default(),
        },
        signature,
        vermagic: None,
        btf: None,
        frwr_map: None,
    }
}

/// rpcrdma built into the kernel image, with both hooks in kallsyms (no module tag).
pub fn built_in() -> RpcrdmaFacts {
    let mut hooks = loaded_hooks('t');
    for h in &mut hooks {
        h.module = None;
        h.line = h.line.replace(&format!("\t[{RPCRDMA}]"), "");
    }
    RpcrdmaFacts {
        resolution: Some(Resolution::BuiltIn {
            module: RPCRDMA.into(),
        }),
        file: None,
        loaded: false,
        sys: SysModule::default(),
        kallsyms: Some(Ok(hooks)),
        loaded_build: None,
        requests: Some(Ok(untouched_requests())),
    }
}
