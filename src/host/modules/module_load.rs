//! Whether the kernel will *load* the rpcrdma file modprobe resolves, read once for the checks
//! that predict a refusal: the file's load facts (symbol versions, signature trailer), their
//! comparison with the export CRCs of the providers `modules.symbols` names, whether the kernel
//! checks symbol versions at all, and whether it enforces module signatures.
//!
//! Only the resolved rpcrdma and the providers of its imports are read (each provider file once,
//! however many symbols it gives). The CRCs are compared with the provider *files*: a provider
//! already loaded from another build links with its own CRCs, which neither `/sys/module` nor
//! kallsyms shows (kallsyms gives the address of a `__crc_` label, not its value), so the
//! comparison names the files it used and the loaded providers whose build differs from them.

use serde::Serialize;

use crate::host::kernel::KernelInfo;
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::kernel_config::{read_kernel_config, read_proc_config, KernelConfig};
use crate::host::modules::sig_enforcement::{
    judge_running, SignatureEnforcement, SignatureEvidence,
};
use crate::host::modules::symbol_providers::{read_load_facts_below, TreeProviders};
use crate::host::modules::sysmodule::SysModule;
use crate::host::modules::{normalize_name, ModuleTree, Resolution};
use crate::host::{HostError, Root};
use crate::kmod::abi::{compare_import_crcs, AbiVerdict, KernelModversions, Provider};
use crate::kmod::load_facts::LoadFacts;
use crate::kmod::{NVIDIA_FS, RPCRDMA};

/// A provider of rpcrdma's imports that is loaded from another build than its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DivergentProvider {
    pub module: String,
    pub loaded_build_id: String,
}

/// What decides whether the kernel loads the rpcrdma file.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleLoad {
    /// The load facts of the resolved file, or why they could not be read; `None` without a file.
    pub file: Option<Result<LoadFacts, String>>,
    /// What is known of the kernel's CONFIG_MODVERSIONS.
    pub modversions: KernelModversions,
    /// The CRC comparison, when the file was read.
    pub abi: Option<AbiVerdict>,
    /// Loaded providers whose build-id is not their file's.
    pub divergent_providers: Vec<DivergentProvider>,
    /// The load facts of the nvidia_fs file modprobe resolves, read only when the kernel does not
    /// plainly accept unsigned modules (its signature is then all that is asked of it).
    pub nvidia_fs_file: Option<Result<LoadFacts, String>>,
    /// The kernel's module signature enforcement and the evidence that decided it.
    pub signatures: Result<SignatureEnforcement, String>,
}

/// The running kernel's build configuration: `/boot/config-<release>` (or the module tree's
/// `config`), else `/proc/config.gz`.
pub fn read_running_config(
    root: &Root,
    kernel: &KernelInfo,
) -> Result<Option<KernelConfig>, HostError> {
    if let Some(release) = &kernel.release {
        if let Some(c) = read_kernel_config(root, release)? {
            return Ok(Some(c));
        }
    }
    read_proc_config(root)
}

/// Reads everything above for the running kernel, given the load facts of its resolved
/// rpcrdma file (read with its inspection, in one decompression); `None` without a file.
pub fn read_module_load(
    root: &Root,
    kernel: &KernelInfo,
    rpcrdma: Option<Result<LoadFacts, String>>,
) -> Result<ModuleLoad, HostError> {
    let config = read_running_config(root, kernel);
    let signatures = match (&config, SignatureEvidence::read(root)) {
        (Ok(c), Ok(evidence)) => Ok(judge_running(&evidence, c.as_ref())),
        (Err(e), _) => Err(e.to_string()),
        (_, Err(e)) => Err(e.to_string()),
    };
    let modversions = match &config {
        Ok(Some(c)) => match c.get("CONFIG_MODVERSIONS") {
            Some(_) if c.is_yes("CONFIG_MODVERSIONS") => KernelModversions::Enabled {
                evidence: format!("CONFIG_MODVERSIONS=y in {}", c.path),
            },
            _ if c.is_yes("CONFIG_MODULES") => KernelModversions::Disabled {
                evidence: format!("CONFIG_MODVERSIONS is not set in {}", c.path),
            },
            // A partial configuration (a fixture, a stripped file) does not say.
            _ => KernelModversions::Unknown,
        },
        _ => KernelModversions::Unknown,
    };
    let mut load = ModuleLoad {
        file: None,
        modversions,
        abi: None,
        divergent_providers: Vec::new(),
        nvidia_fs_file: None,
        signatures,
    };
    let Some(release) = &kernel.release else {
        return Ok(load);
    };
    let may_refuse_unsigned = !matches!(
        &load.signatures,
        Ok(s) if s.enforcement == Enforcement::NotEnforced
    );
    if may_refuse_unsigned {
        let tree = ModuleTree::read(root, release)?;
        if let Resolution::File {
            path, exists: true, ..
        } = tree.resolve(root, NVIDIA_FS)?
        {
            load.nvidia_fs_file = Some(read_load_facts_below(root, &path));
        }
    }
    let Some(facts) = rpcrdma else {
        return Ok(load);
    };
    if let Ok(f) = &facts {
        let tree = ModuleTree::read(root, release)?;
        let mut providers = TreeProviders::new(&tree);
        let mut used = Vec::new();
        let verdict = compare_import_crcs(&f.imports, &load.modversions, |s| {
            let p = providers.provider_of(s);
            if let Provider::Module { module, .. } = &p {
                if !used.contains(module) {
                    used.push(module.clone());
                }
            }
            p
        });
        for module in used {
            load.divergent_providers
                .extend(divergent(root, &tree, &module)?);
        }
        load.abi = Some(verdict);
    }
    load.file = Some(facts);
    Ok(load)
}

/// A loaded `module` whose build-id differs from its file's. The file is inspected only when
/// the module is loaded with a build-id (answered from the module facts cache when unchanged).
fn divergent(
    root: &Root,
    tree: &ModuleTree,
    module: &str,
) -> Result<Option<DivergentProvider>, HostError> {
    let name = normalize_name(module);
    if name == RPCRDMA {
        return Ok(None);
    }
    let sys = SysModule::read(root, &name)?;
    let Some(loaded) = sys.build_id else {
        return Ok(None);
    };
    let Some(entry) = tree.dep_entry(&name)? else {
        return Ok(None);
    };
    let path = tree.path_of(&entry.file);
    let cache = crate::host::io::facts_cache::FactsCache::for_root(root);
    let on_disk = crate::host::modules::module_files::inspect_file_with_cache(
        root,
        &path,
        &[],
        cache.as_ref(),
    )
    .ok()
    .and_then(|f| f.build_id);
    Ok(
        (on_disk.as_deref() != Some(loaded.as_str())).then_some(DivergentProvider {
            module: name,
            loaded_build_id: loaded,
        }),
    )
}
