//! Whether the kernel will *load* the rpcrdma and nvidia_fs files modprobe resolves, read once
//! for the checks that predict a refusal: each file's load facts (symbol versions, signature
//! trailer), their comparison with the export CRCs of the providers `modules.symbols` names
//! (ib_core and rdma_cm for rpcrdma, nvidia.ko's `nvidia_p2p_*` for nvidia_fs), whether the
//! kernel checks symbol versions at all, and whether it enforces module signatures.
//!
//! Only the two resolved files and the providers of their imports are read (each provider file once,
//! however many symbols it gives). The CRCs are compared with the provider *files*: a provider
//! already loaded from another build links with its own CRCs, which neither `/sys/module` nor
//! kallsyms shows (kallsyms gives the address of a `__crc_` label, not its value), so the
//! comparison names the files it used and the loaded providers whose build differs from them.

use serde::Serialize;

use super::module_name::normalize_name;
use super::module_tree::{ModuleTree, Resolution};
use crate::host::io::error::HostError;
use crate::host::io::facts_cache::{AbiAnswer, AbiKey, FactsCache, FileIdentity};
use crate::host::io::root::Root;
use crate::host::kernel::KernelInfo;
use crate::host::modules::build_symvers::symvers_key;
use crate::host::modules::kernel_config::{read_kernel_config, read_proc_config, KernelConfig};
use crate::host::modules::module_files::load_facts_below;
use crate::host::modules::sig_enforcement::{
    self, judge_running, SignatureEnforcement, SignatureEvidence,
};
use crate::host::modules::symbol_providers::TreeProviders;
use crate::host::modules::sysmodule::SysModule;
use crate::kmod::abi::{compare_import_crcs, AbiVerdict, KernelModversions, Provider, Uncompared};
use crate::kmod::crcless_load::{self, CrclessKernel, CrclessVerdict};
use crate::kmod::load_facts::LoadFacts;
use crate::kmod::modversions::ImportVersions;
use crate::kmod::{NVIDIA_FS, RPCRDMA};

/// A provider of a module's imports that is loaded from another build than its file.
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
    /// The load facts of the nvidia_fs file modprobe resolves; `None` without a file.
    pub nvidia_fs_file: Option<Result<LoadFacts, String>>,
    /// The CRC comparison of the nvidia_fs file's imports (nvidia_p2p_* from nvidia.ko).
    pub nvidia_fs_abi: Option<AbiVerdict>,
    /// Loaded providers of nvidia_fs's imports (nvidia) whose build-id is not their file's.
    pub nvidia_fs_divergent: Vec<DivergentProvider>,
    /// The kernel's module signature enforcement and the evidence that decided it.
    pub signatures: Result<SignatureEnforcement, String>,
    /// On a kernel without CONFIG_MODVERSIONS: what it checks instead, as read.
    pub crcless_kernel: Option<CrclessKernel>,
    /// On such a kernel, the prediction for the rpcrdma file (vermagic and BTF).
    pub crcless: Option<CrclessVerdict>,
    /// On such a kernel, the prediction for the nvidia_fs file.
    pub nvidia_fs_crcless: Option<CrclessVerdict>,
}

/// The kernel configuration options the symbol-version judgement reads.
pub const CONFIG_OPTIONS: &[&str] = &["CONFIG_MODVERSIONS", "CONFIG_MODULES"];

/// The running kernel's build configuration: `/boot/config-<release>` (or the module tree's
/// `config`), else `/proc/config.gz`; the options asked for here, by the signature judgement
/// and by the LOCALIO reader (one list, so the facts cache keeps one entry per file).
pub fn read_running_config(
    root: &Root,
    kernel: &KernelInfo,
) -> Result<Option<KernelConfig>, HostError> {
    let asked = [
        CONFIG_OPTIONS,
        sig_enforcement::CONFIG_OPTIONS,
        super::localio::CONFIG_OPTIONS,
        super::crcless_kernel::CONFIG_OPTIONS,
    ]
    .concat();
    if let Some(release) = &kernel.release {
        if let Some(c) = read_kernel_config(root, release, &asked)? {
            return Ok(Some(c));
        }
    }
    read_proc_config(root, &asked)
}

/// Reads everything above for the running kernel, given its configuration
/// ([`read_running_config`], read once for every reader that judges it) and the load facts of
/// its resolved rpcrdma file (read with its inspection, in one decompression); `None` without a
/// file.
pub fn read_module_load(
    root: &Root,
    release: Option<&str>,
    config: &Result<Option<KernelConfig>, HostError>,
    tree: Option<&ModuleTree>,
    rpcrdma: Option<Result<LoadFacts, String>>,
) -> Result<ModuleLoad, HostError> {
    let signatures = match (config, SignatureEvidence::read(root)) {
        (Ok(c), Ok(evidence)) => Ok(judge_running(&evidence, c.as_ref())),
        (Err(e), _) => Err(e.to_string()),
        (_, Err(e)) => Err(e.to_string()),
    };
    let modversions = match config {
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
    let crcless_kernel = match (&modversions, config) {
        (KernelModversions::Disabled { .. }, Ok(c)) => Some(
            super::crcless_kernel::read_crcless_kernel(root, release, c.as_ref())?,
        ),
        _ => None,
    };
    let mut load = ModuleLoad {
        file: None,
        modversions,
        abi: None,
        divergent_providers: Vec::new(),
        nvidia_fs_file: None,
        nvidia_fs_abi: None,
        nvidia_fs_divergent: Vec::new(),
        signatures,
        crcless_kernel,
        crcless: None,
        nvidia_fs_crcless: None,
    };
    let Some(tree) = tree else {
        return Ok(load);
    };
    if let Resolution::File {
        path, exists: true, ..
    } = tree.resolve(root, NVIDIA_FS)?
    {
        let cache = FactsCache::of(root);
        let nvfs = load_facts_below(root, &path, cache.as_ref()).0;
        if let Ok(f) = &nvfs {
            let (verdict, divergent) = compare(root, tree, f, &load.modversions, NVIDIA_FS)?;
            load.nvidia_fs_abi = Some(verdict);
            load.nvidia_fs_divergent = divergent;
            load.nvidia_fs_crcless = crcless(&load, f, NVIDIA_FS);
        }
        load.nvidia_fs_file = Some(nvfs);
    }
    let Some(facts) = rpcrdma else {
        return Ok(load);
    };
    if let Ok(f) = &facts {
        let (verdict, divergent) = compare(root, tree, f, &load.modversions, RPCRDMA)?;
        load.abi = Some(verdict);
        load.divergent_providers = divergent;
        load.crcless = crcless(&load, f, RPCRDMA);
    }
    load.file = Some(facts);
    Ok(load)
}

/// The prediction for `file` on a kernel without symbol CRCs; `None` on another kernel.
fn crcless(load: &ModuleLoad, file: &LoadFacts, module: &str) -> Option<CrclessVerdict> {
    let kernel = load.crcless_kernel.as_ref()?;
    Some(crcless_load::judge(
        module,
        file.vermagic.as_deref(),
        file.btf.as_ref(),
        kernel,
    ))
}

/// Compares the imports of `module`'s file with the export CRCs of their providers in `tree`,
/// and names the providers loaded from another build than the file compared. The verdict is
/// answered from the facts cache while the imports, the kernel's CONFIG_MODVERSIONS, the
/// indexes that name the providers, the tree's `build` link and the build symvers it would
/// find, and every provider file (and the symvers, when it answered) are what they were: then
/// neither an index nor a module file is opened.
fn compare(
    root: &Root,
    tree: &ModuleTree,
    file: &LoadFacts,
    modversions: &KernelModversions,
    module: &str,
) -> Result<(AbiVerdict, Vec<DivergentProvider>), HostError> {
    let cache = FactsCache::of(root);
    let key = cache.as_ref().map(|_| AbiKey {
        module: normalize_name(module),
        imports: imports_hash(file),
        modversions: modversions.clone(),
        indexes: index_identities(root, tree),
        symvers: symvers_key(root, &tree.dir_rel),
    });
    let derive = || {
        let answer = compare_files(tree, file, modversions, cache.clone());
        if let (Some(cache), Some(key)) = (&cache, &key) {
            if !has_unreadable(&answer.verdict) {
                cache.store_abi(key, &answer);
            }
        }
        answer
    };
    let answer = match cache.as_ref().zip(key.as_ref()) {
        Some((c, k)) => {
            let look = || {
                c.abi(k, |p| {
                    root.identity(root.rel_of(&p.path).unwrap_or_default())
                })
            };
            match look() {
                Some(answer) => answer,
                None => c.after_miss(look, derive),
            }
        }
        None => derive(),
    };
    let mut diverging = Vec::new();
    for provider in answer.used {
        if normalize_name(&provider) != normalize_name(module) {
            diverging.extend(divergent(root, tree, &provider)?);
        }
    }
    Ok((answer.verdict, diverging))
}

/// The comparison itself: each import's provider from `modules.symbols`, its CRC from the
/// build's `Module.symvers` where that is proven to be the in-tree providers' build
/// ([`TreeProviders::use_build_symvers`]), else from the provider's file (or its cached export
/// table).
fn compare_files(
    tree: &ModuleTree,
    file: &LoadFacts,
    modversions: &KernelModversions,
    cache: Option<FactsCache>,
) -> AbiAnswer {
    let mut providers = TreeProviders::new(tree).with_cache(cache);
    if let ImportVersions::Versioned { versions, .. } = &file.imports {
        if !matches!(modversions, KernelModversions::Disabled { .. }) {
            let symbols: Vec<&str> = versions.iter().map(|v| v.symbol.as_str()).collect();
            providers.use_build_symvers(&symbols);
        }
    }
    let mut used = Vec::new();
    let mut verdict = compare_import_crcs(&file.imports, modversions, |s| {
        let p = providers.provider_of(s);
        if let Provider::Module { module, .. } = &p {
            if !used.contains(module) {
                used.push(module.clone());
            }
        }
        p
    });
    if let AbiVerdict::Compared(r) = &mut verdict {
        r.build_symvers = providers.build_symvers().map(Into::into);
    }
    AbiAnswer {
        verdict,
        used,
        providers: providers.files().to_vec(),
    }
}

/// A verdict that could not read a provider is not kept: the next run tries again.
fn has_unreadable(verdict: &AbiVerdict) -> bool {
    matches!(verdict, AbiVerdict::Compared(r) if r.uncompared.iter().any(|u| matches!(u, Uncompared::ProviderUnreadable { .. })))
}

/// A hash of the imports judged (names and CRCs, in order).
fn imports_hash(file: &LoadFacts) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match &file.imports {
        ImportVersions::Unversioned => 0u8.hash(&mut h),
        ImportVersions::Versioned { table, versions } => {
            1u8.hash(&mut h);
            (*table as u8).hash(&mut h);
            for v in versions {
                (&v.symbol, v.crc).hash(&mut h);
            }
        }
    }
    h.finish()
}

/// The identities of the indexes that name providers: `modules.symbols` and `modules.dep`,
/// binary and text (whichever the tree reads), as they are now.
fn index_identities(root: &Root, tree: &ModuleTree) -> Vec<Option<FileIdentity>> {
    [
        "modules.symbols.bin",
        "modules.symbols",
        "modules.dep.bin",
        "modules.dep",
    ]
    .iter()
    .map(|name| {
        let rel = format!("{}/{name}", tree.dir_rel);
        root.identity(std::path::Path::new(&rel))
    })
    .collect()
}

/// A loaded `module` whose build-id differs from its file's. The file is inspected only when
/// the module is loaded with a build-id (answered from the module facts cache when unchanged).
fn divergent(
    root: &Root,
    tree: &ModuleTree,
    module: &str,
) -> Result<Option<DivergentProvider>, HostError> {
    let name = normalize_name(module);
    let sys = SysModule::read(root, &name)?;
    let Some(loaded) = sys.build_id else {
        return Ok(None);
    };
    let Some(entry) = tree.dep_entry(&name)? else {
        return Ok(None);
    };
    let path = tree.path_of(&entry.file);
    let cache = FactsCache::of(root);
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
