//! The node-level checks: what must hold on this machine before any GDS mount can work.
//!
//! Each function judges [`HostFacts`] (already read) and returns one [`CheckResult`]; nothing
//! here touches the host. [`premount`] runs them in the order an admin would fix them.

use super::{CheckId, CheckResult};
use crate::host::facts::{HostFacts, RpcrdmaFacts, RPCRDMA};
use crate::host::gpl_rule::{Enforcement, GplRule};
use crate::host::modules::{ModuleOrigin, Resolution};
use crate::kmod::{Export, ModuleFile, RPCRDMA_HOOKS};

/// The pointer to doctor that remedies end with; doctor itself strips it from its own report.
pub const DOCTOR: &str = "run `nfs-gds doctor` for the fix on this node's stack";

/// Every node-level check, in the order to fix them.
pub fn premount(facts: &HostFacts) -> Vec<CheckResult> {
    vec![
        nvidia_fs_loaded(facts),
        nvidia_fs_devices(facts),
        rpcrdma_module(facts),
        rpcrdma_hooks(facts),
        rpcrdma_hook_export(facts),
        rpcrdma_loaded(facts),
        rpcrdma_fresh(facts),
    ]
}

pub fn nvidia_fs_loaded(facts: &HostFacts) -> CheckResult {
    let id = CheckId::NvidiaFsLoaded;
    let nv = &facts.nvidia_fs;
    if nv.loaded {
        let v = nv.version.as_deref().unwrap_or("unknown version");
        CheckResult::pass(id, format!("nvidia_fs {v} is loaded"))
            .with("/sys/module/nvidia_fs", "present")
    } else {
        CheckResult::fail(id, "nvidia_fs is not loaded: without it every GPU read over NFS goes through CPU bounce buffers")
            .with("/sys/module/nvidia_fs", "absent")
            .remedy(format!(
                "load it (`modprobe nvidia-fs`, from the nvidia-fs-dkms / nvidia-gds packages), or on Kubernetes enable `gds.enabled` in the GPU Operator ClusterPolicy; {DOCTOR}"
            ))
    }
}

pub fn nvidia_fs_devices(facts: &HostFacts) -> CheckResult {
    let id = CheckId::NvidiaFsDevices;
    let nv = &facts.nvidia_fs;
    if !nv.loaded {
        return CheckResult::skip(id, "nvidia_fs is not loaded, so it has no device nodes");
    }
    if nv.devices.is_empty() {
        CheckResult::fail(
            id,
            "nvidia_fs is loaded but there is no /dev/nvidia-fs* node, so cuFile cannot open it",
        )
        .with("/dev/nvidia-fs*", "none")
        .remedy("check that devtmpfs/udev created the nodes (`ls -l /dev/nvidia-fs*`); on GPU Operator nodes make sure the nvidia-fs container runs and exposes them")
    } else {
        CheckResult::pass(
            id,
            format!(
                "{} device node(s), /dev/{} first",
                nv.devices.len(),
                nv.devices[0]
            ),
        )
        .with("/dev/nvidia-fs*", nv.devices.join(" "))
    }
}

fn file_evidence(r: CheckResult, f: &ModuleFile) -> CheckResult {
    r.with("file", f.path.display().to_string())
        .with("compression", f.compression.as_str())
}

pub fn rpcrdma_module(facts: &HostFacts) -> CheckResult {
    let id = CheckId::RpcrdmaModule;
    let rp = &facts.rpcrdma;
    let Some(resolution) = &rp.resolution else {
        return CheckResult::unknown(
            id,
            "the kernel release is unknown, so the module tree cannot be found",
        )
        .with("/proc/sys/kernel/osrelease", "absent");
    };
    match resolution {
        Resolution::BuiltIn { .. } => {
            CheckResult::pass(id, "rpcrdma is built into the kernel").with("modules.builtin", "lists rpcrdma")
        }
        Resolution::NotFound { module } => CheckResult::fail(
            id,
            format!("modprobe knows no {module} module for this kernel, so NFS over RDMA cannot work at all"),
        )
        .remedy(format!("install the RDMA NFS client module for this kernel (DOCA-OFED's mlnx-nfsrdma built with GDS support); {DOCTOR}")),
        Resolution::NoModuleTree { dir } => {
            let r = CheckResult::unknown(
                id,
                format!("there is no modules.dep in {}, so the module modprobe would load cannot be told", dir.display()),
            );
            if rp.loaded {
                r.with("/proc/modules", "rpcrdma loaded")
            } else {
                r.remedy("install the kernel's module tree, or run `depmod -a`")
            }
        }
        Resolution::File {
            rel_path,
            path,
            exists: false,
            ..
        } => CheckResult::fail(
            id,
            format!("modules.dep names {rel_path}, but {} does not exist", path.display()),
        )
        .remedy("the module index is out of date: run `depmod -a`, or reinstall the package that owned the module"),
        Resolution::File { path, origin, .. } => match &rp.file {
            Some(Ok(f)) => file_evidence(
                CheckResult::pass(id, format!("modprobe loads {}, {}", path.display(), origin.describe())),
                f,
            ),
            Some(Err(e)) => CheckResult::fail(id, format!("the module file cannot be inspected: {e}"))
                .with("file", path.display().to_string())
                .remedy("reinstall the package that owns the file, then run `depmod -a`"),
            None => CheckResult::unknown(id, "the module file was not inspected"),
        },
    }
}

fn origin_of(rp: &RpcrdmaFacts) -> Option<&ModuleOrigin> {
    match &rp.resolution {
        Some(Resolution::File { origin, .. }) => Some(origin),
        _ => None,
    }
}

fn missing_hooks_remedy(origin: Option<&ModuleOrigin>) -> String {
    match origin {
        Some(ModuleOrigin::Inbox) => format!(
            "this is the distribution's own rpcrdma, which never has the hooks: install DOCA-OFED / MLNX_OFED's mlnx-nfsrdma built with GDS support; {DOCTOR}"
        ),
        Some(_) => format!(
            "this rpcrdma was built without GDS support (mlnx-ofa_kernel configured without --with-gds): rebuild it with GDS enabled; {DOCTOR}"
        ),
        None => format!(
            "a distribution's own rpcrdma never has the hooks, and an mlnx-nfsrdma build has them only when mlnx-ofa_kernel was configured --with-gds: install or rebuild NVIDIA's mlnx-nfsrdma with GDS support; {DOCTOR}"
        ),
    }
}

pub fn rpcrdma_hooks(facts: &HostFacts) -> CheckResult {
    let id = CheckId::RpcrdmaHooks;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return match &rp.kallsyms {
            Err(e) => CheckResult::unknown(
                id,
                format!("rpcrdma is built in and kallsyms cannot be read: {e}"),
            ),
            Ok(_) => {
                let found = rp.loaded_hooks();
                if found.len() == RPCRDMA_HOOKS.len() {
                    CheckResult::pass(id, "the built-in rpcrdma defines both nvfs hooks").with(
                        "/proc/kallsyms",
                        found
                            .iter()
                            .map(|e| e.line.as_str())
                            .collect::<Vec<_>>()
                            .join(" | "),
                    )
                } else {
                    CheckResult::fail(id, "the built-in rpcrdma lacks the nvfs hooks")
                        .remedy(format!("boot a kernel whose rpcrdma has GDS support, or build rpcrdma as a module with it; {DOCTOR}"))
                }
            }
        };
    }
    let Some(f) = rp.inspected() else {
        return CheckResult::skip(id, "no rpcrdma module file to inspect (see rpcrdma-module)");
    };
    file_hooks(f, origin_of(rp))
}

/// `rpcrdma-hooks` for one module file: both hooks defined? `origin` chooses the remedy.
pub fn file_hooks(f: &ModuleFile, origin: Option<&ModuleOrigin>) -> CheckResult {
    let id = CheckId::RpcrdmaHooks;
    if !f.has_symtab {
        return file_evidence(
            CheckResult::unknown(
                id,
                "the module file has no symbol table (fully stripped), so its hooks cannot be seen",
            ),
            f,
        );
    }
    let missing: Vec<&str> = f
        .symbols
        .iter()
        .filter(|s| !s.defined)
        .map(|s| s.symbol.as_str())
        .collect();
    if missing.is_empty() {
        file_evidence(CheckResult::pass(id, "both nvfs hooks are defined"), f)
            .with("symbols", RPCRDMA_HOOKS.join(", "))
    } else {
        file_evidence(
            CheckResult::fail(
                id,
                format!(
                    "{} has no {}: rpcrdma was built without GPUDirect Storage support, so GPU I/O falls back to bounce buffers",
                    f.path.display(),
                    missing.join(" or ")
                ),
            ),
            f,
        )
        .with("missing", missing.join(", "))
        .remedy(missing_hooks_remedy(origin))
    }
}

fn export_word(e: &Export) -> String {
    match e {
        Export::Gpl => "EXPORT_SYMBOL_GPL".into(),
        Export::Plain => "EXPORT_SYMBOL (plain)".into(),
        Export::NotExported => "not exported".into(),
        Export::Unrecognised { section } => format!("in unrecognised section {section}"),
    }
}

const GPL_FIX: &str = "install a build that exports the hooks with EXPORT_SYMBOL_GPL (MLNX_OFED / DOCA-OFED 24.04 or later)";

pub fn rpcrdma_hook_export(facts: &HostFacts) -> CheckResult {
    let id = CheckId::RpcrdmaHookExport;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return CheckResult::warn(
            id,
            "rpcrdma is built in; how its hooks are exported cannot be read from kallsyms",
        )
        .remedy("verify with the live probe: `nfs-gds doctor --probe`");
    }
    let Some(f) = rp.inspected() else {
        return CheckResult::skip(id, "no rpcrdma module file to inspect (see rpcrdma-module)");
    };
    file_hook_export(f, facts.gpl_rule.as_ref())
}

/// `rpcrdma-hook-export` for one module file, given what is known of the kernel's GPL-only rule
/// (needed only when a hook is exported plain).
pub fn file_hook_export(f: &ModuleFile, rule: Option<&GplRule>) -> CheckResult {
    let id = CheckId::RpcrdmaHookExport;
    if f.symbols.iter().any(|s| !s.defined) {
        return CheckResult::skip(id, "the hooks are not defined (see rpcrdma-hooks)");
    }
    let not_exported: Vec<&str> = f
        .symbols
        .iter()
        .filter(|s| s.export == Export::NotExported)
        .map(|s| s.symbol.as_str())
        .collect();
    let unrecognised = f
        .symbols
        .iter()
        .find(|s| matches!(s.export, Export::Unrecognised { .. }));
    let plain = f.symbols.iter().any(|s| s.export == Export::Plain);
    let result = if !not_exported.is_empty() {
        CheckResult::fail(
            id,
            format!(
                "{} defined but not exported, so nvidia-fs cannot find it",
                not_exported.join(" and ")
            ),
        )
        .remedy(GPL_FIX)
    } else if let Some(s) = unrecognised {
        CheckResult::warn(
            id,
            format!(
                "{} is exported from a section this version of nfs-gds does not recognise",
                s.symbol
            ),
        )
        .remedy("verify with the live probe: `nfs-gds doctor --probe`")
    } else if !plain {
        CheckResult::pass(
            id,
            "both hooks are exported GPL, which every kernel accepts",
        )
    } else {
        match rule.map(|r| r.enforcement) {
            Some(Enforcement::Enforced) => CheckResult::fail(
                id,
                "the hooks are exported with plain EXPORT_SYMBOL and this kernel refuses __symbol_get of non-GPL symbols: nvidia-fs logs `failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops` and GDS silently falls back",
            )
            .remedy(format!("{GPL_FIX}; {DOCTOR}")),
            Some(Enforcement::NotEnforced) => CheckResult::pass(
                id,
                "the hooks are exported plain, which this kernel still accepts (a kernel update that brings the GPL-only rule will break it)",
            ),
            _ => CheckResult::warn(
                id,
                "the hooks are exported plain and it is not known whether this kernel refuses that",
            )
            .remedy(format!("{GPL_FIX}, or confirm with `nfs-gds doctor --probe`")),
        }
    };
    let mut result = f.symbols.iter().fold(result, |r, s| {
        r.with(s.symbol.clone(), export_word(&s.export))
    });
    if plain && not_exported.is_empty() && unrecognised.is_none() {
        let evidence = rule.map_or_else(|| "not judged".to_string(), |r| r.evidence.clone());
        result = result.with("kernel rule", evidence);
    }
    result
}

pub fn rpcrdma_loaded(facts: &HostFacts) -> CheckResult {
    let id = CheckId::RpcrdmaLoaded;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return CheckResult::skip(id, "rpcrdma is built in (see rpcrdma-hooks)");
    }
    if !rp.loaded {
        return CheckResult::skip(
            id,
            "rpcrdma is not loaded; the kernel loads it from disk when the first RDMA mount starts",
        );
    }
    if let Err(e) = &rp.kallsyms {
        return CheckResult::unknown(
            id,
            format!("rpcrdma is loaded but kallsyms cannot be read: {e}"),
        );
    }
    let found = rp.loaded_hooks();
    let lines = found
        .iter()
        .map(|e| e.line.as_str())
        .collect::<Vec<_>>()
        .join(" | ");
    if found.len() < RPCRDMA_HOOKS.len() {
        let file_has_hooks = rp
            .inspected()
            .is_some_and(|f| f.symbols.iter().all(|s| s.defined));
        let r = CheckResult::fail(
            id,
            "the loaded rpcrdma has no nvfs hooks (none in /proc/kallsyms)",
        )
        .with(
            "/proc/kallsyms",
            if lines.is_empty() {
                "no rpcrdma_*_nvfs_dma_ops [rpcrdma]".to_string()
            } else {
                lines
            },
        );
        return if file_has_hooks {
            r.remedy("the module file on disk has the hooks but an older build is loaded: reload rpcrdma when no NFS/RDMA mount uses it (`modprobe -r rpcrdma && modprobe rpcrdma`), or reboot")
        } else {
            r.remedy(missing_hooks_remedy(origin_of(rp)))
        };
    }
    let plain = rp.kallsyms_shows_license() && found.iter().any(|e| e.plain_export());
    let enforced = facts
        .gpl_rule
        .as_ref()
        .is_some_and(|r| r.enforcement == Enforcement::Enforced);
    if plain && enforced {
        CheckResult::fail(id, "the loaded rpcrdma exports its hooks plain (type T in kallsyms) and this kernel refuses that")
            .with("/proc/kallsyms", lines)
            .remedy(format!("{GPL_FIX}; {DOCTOR}"))
    } else {
        CheckResult::pass(id, "the loaded rpcrdma carries both nvfs hooks")
            .with("/proc/kallsyms", lines)
    }
}

pub fn rpcrdma_fresh(facts: &HostFacts) -> CheckResult {
    let id = CheckId::RpcrdmaFresh;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return CheckResult::skip(id, "rpcrdma is built in");
    }
    if !rp.loaded {
        return CheckResult::skip(id, format!("{RPCRDMA} is not loaded"));
    }
    let Some(f) = rp.inspected() else {
        return CheckResult::skip(id, "no module file to compare with (see rpcrdma-module)");
    };
    let stale = |what: &str, loaded: &str, disk: &str| {
        CheckResult::fail(
            id,
            format!("the loaded rpcrdma is a different build from {} ({what} differs): a rebuilt module is waiting for a reload or reboot", f.path.display()),
        )
        .with(format!("loaded {what}"), loaded.to_string())
        .with(format!("on-disk {what}"), disk.to_string())
        .remedy("reload rpcrdma when no NFS/RDMA mount or nfsd RDMA listener uses it (`modprobe -r rpcrdma && modprobe rpcrdma`), otherwise reboot")
    };
    if let (Some(l), Some(d)) = (&rp.sys.build_id, &f.build_id) {
        return if l == d {
            CheckResult::pass(
                id,
                "the loaded rpcrdma is the build on disk (same GNU build-id)",
            )
            .with("build-id", l.clone())
        } else {
            stale("build-id", l, d)
        };
    }
    if let (Some(l), Some(d)) = (&rp.sys.srcversion, &f.modinfo.srcversion) {
        return if l == d {
            CheckResult::pass(id, "the loaded rpcrdma has the same srcversion as the file on disk (no build-id to compare, so a rebuild of the same sources would not show)")
                .with("srcversion", l.clone())
        } else {
            stale("srcversion", l, d)
        };
    }
    CheckResult::warn(id, "cannot tell whether the loaded rpcrdma is the build on disk: neither a build-id nor a srcversion exists on both sides")
        .with("loaded", format!("build-id {}, srcversion {}", rp.sys.build_id.as_deref().unwrap_or("none"), rp.sys.srcversion.as_deref().unwrap_or("none")))
        .with("on disk", format!("build-id {}, srcversion {}", f.build_id.as_deref().unwrap_or("none"), f.modinfo.srcversion.as_deref().unwrap_or("none")))
}
