//! `nfs-gds inspect-module [NAME|PATH]`: what one kernel module file really contains.
//!
//! A NAME (or alias) is resolved as modprobe would for the running kernel below `--root`; a PATH
//! (anything with a `/`, ending in `.ko[.gz|.xz|.zst]`, or an existing file) is read as given.
//! Plain exports are judged by the GPL rule of the kernel the module was built for (its
//! vermagic release), which the report names when it is not the running kernel. Exit 0 when both nvfs hooks are
//! defined and exported in a way the kernel accepts, 1 when they are missing or exported in a way
//! the kernel refuses or may refuse, 2 when the file cannot be found, read or parsed. A module
//! that is not rpcrdma and defines no hook (sunrpc, ib_core, nvidia-fs) gets its facts and no
//! hook verdict, and exit 0: the hooks are rpcrdma's to carry. Every file's report also says
//! whether it carries symbol CRCs (a module built for a kernel without CONFIG_MODVERSIONS has
//! none, and such a kernel checks its vermagic and BTF instead), its split BTF, and for rpcrdma
//! which `frwr_map()` generation it was built from, where its BTF or symbols tell.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::context::{CmdError, Ctx};
use super::exit;
use crate::checks::catalogue::{rpcrdma_hook_export, rpcrdma_hooks};
use crate::checks::render::{self, TextStyle};
use crate::checks::{fix, CheckResult, Status, SCHEMA_VERSION};
use crate::host::io::reader::is_plain_name;
use crate::host::kernel::KernelInfo;
use crate::host::modules::gpl_rule::{self, GplRule};
use crate::host::modules::{ModuleOrigin, ModuleTree, Resolution};
use crate::host::Root;
use crate::kmod::btf::{FrwrEvidence, FrwrGeneration, ModuleBtf};
use crate::kmod::load_facts::LoadFacts;
use crate::kmod::modversions::ImportVersions;
use crate::kmod::{Export, ExportLayout, ModuleFile, RPCRDMA, RPCRDMA_HOOKS};

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Module name or alias (resolved like modprobe), or a path to a .ko[.gz|.xz|.zst] file
    #[arg(default_value = "rpcrdma", value_name = "NAME|PATH")]
    pub module: String,
    #[command(flatten)]
    pub output: super::shared::OutputArgs,
}

/// The verdict on the hooks of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HooksVerdict {
    /// Both defined and exported GPL (or plain on a kernel known to accept it).
    Usable,
    /// At least one hook is not defined.
    Missing,
    /// Defined, but at least one is not exported at all.
    NotExported,
    /// Exported plain and this kernel refuses that.
    PlainRefused,
    /// Exported plain and it is not known whether this kernel refuses that, or exported from an
    /// unrecognised table.
    Uncertain,
    /// Not rpcrdma, and no hook defined: nothing to judge.
    NotRpcrdma,
}

/// What one module file contains and the verdict on its hooks: `inspect-module --json`'s
/// document.
#[derive(Debug, Serialize)]
pub struct Inspected {
    schema_version: u32,
    /// Always `inspect-module`, like the `command` of every other JSON document.
    command: &'static str,
    module: ModuleFile,
    hooks: HooksVerdict,
    /// `rpcrdma-hooks` and `rpcrdma-hook-export` for this file, as `check` reports them; absent
    /// for a module that is not rpcrdma.
    #[serde(skip_serializing_if = "Option::is_none")]
    checks: Option<[CheckResult; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_rule: Option<GplRule>,
    /// What the loader checks of the file; absent when its load facts could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<LoadView>,
}

/// What the loader checks of a file besides its hooks.
#[derive(Debug, Serialize)]
struct LoadView {
    /// Imports with a symbol CRC (`__versions`); 0 for a module built for a kernel without
    /// CONFIG_MODVERSIONS.
    versioned_imports: usize,
    /// Its vermagic names `modversions`.
    vermagic_modversions: bool,
    /// Its split BTF, or why it could not be read; absent without `.BTF`.
    #[serde(skip_serializing_if = "Option::is_none")]
    btf: Option<Result<ModuleBtf, String>>,
    /// rpcrdma's `frwr_map()` generation (`unknown` where nothing tells); absent for another
    /// module.
    #[serde(skip_serializing_if = "Option::is_none")]
    frwr_map: Option<FrwrGeneration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frwr_map_from: Option<FrwrEvidence>,
}

impl LoadView {
    fn of(f: &LoadFacts, rpcrdma: bool) -> Self {
        LoadView {
            versioned_imports: match &f.imports {
                ImportVersions::Unversioned => 0,
                ImportVersions::Versioned { versions, .. } => versions.len(),
            },
            vermagic_modversions: f
                .vermagic
                .as_deref()
                .is_some_and(|v| v.split_whitespace().any(|w| w == "modversions")),
            btf: f.btf.clone(),
            frwr_map: rpcrdma.then(|| f.frwr_map.map_or(FrwrGeneration::Unknown, |(g, _)| g)),
            frwr_map_from: f.frwr_map.filter(|_| rpcrdma).map(|(_, e)| e),
        }
    }

    fn text(&self, out: &mut String) {
        let crcs = match (self.versioned_imports, self.vermagic_modversions) {
            (0, false) => "none: built for a kernel without CONFIG_MODVERSIONS (no `modversions` in its vermagic, no __versions); such a kernel checks no symbol CRCs, only the vermagic and, unless CONFIG_MODULE_ALLOW_BTF_MISMATCH is set, the BTF".to_string(),
            (0, true) => "none, though its vermagic says `modversions`: a kernel that checks symbol versions refuses it".to_string(),
            (n, _) => format!("{n} imports versioned (__versions)"),
        };
        let _ = writeln!(out, "symbol CRCs:  {crcs}");
        let btf = match &self.btf {
            None => "none (built where no vmlinux was at hand, so kbuild made none: a kernel without symbol CRCs checks its vermagic alone)".to_string(),
            Some(Err(e)) => format!("unreadable: {e}"),
            Some(Ok(b)) => format!(
                "split, {} types of its own{}{}",
                b.own_types,
                b.base_str_len
                    .map(|l| format!(", built against a kernel BTF of {l} bytes of names"))
                    .unwrap_or_default(),
                if b.has_distilled_base() { ", distilled base (.BTF.base: the kernel relocates it onto its own types by name)" } else { "" }
            ),
        };
        let _ = writeln!(out, "BTF:          {btf}");
        if let Some(g) = self.frwr_map {
            let from = match self.frwr_map_from {
                Some(FrwrEvidence::Btf) => " (from its BTF)",
                Some(FrwrEvidence::Symbols) => " (from its symbols: rpcrdma_convert_iovs)",
                None => " (neither its BTF nor its symbols tell)",
            };
            let _ = writeln!(out, "frwr_map:     {}{from}", g.describe());
        }
    }
}

/// The endings of a module file's name, compressed or not.
const MODULE_FILE_ENDINGS: [&str; 4] = [".ko", ".ko.gz", ".ko.xz", ".ko.zst"];

/// Whether the argument names a file rather than a module: it has a `/`, ends like a module
/// file, or is an existing file.
fn is_path(wanted: &str) -> bool {
    wanted.contains('/')
        || MODULE_FILE_ENDINGS.iter().any(|e| wanted.ends_with(e))
        || Path::new(wanted).is_file()
}

/// The file to inspect, and where it sits in the module tree when it was found by name.
fn resolve(ctx: &Ctx, wanted: &str) -> Result<(PathBuf, Option<ModuleOrigin>), CmdError> {
    if is_path(wanted) {
        return match std::fs::symlink_metadata(wanted) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(format!("{wanted}: no such file").into())
            }
            _ => Ok((PathBuf::from(wanted), None)),
        };
    }
    let kernel = KernelInfo::read(&ctx.host.root)?;
    let release = kernel.release.ok_or_else(|| {
        format!(
            "cannot resolve module name {wanted:?}: {} is missing, so the kernel release is unknown (give a path instead)",
            ctx.host.root.join("proc/sys/kernel/osrelease").display()
        )
    })?;
    match ModuleTree::read(&ctx.host.root, &release)?.resolve(&ctx.host.root, wanted)? {
        Resolution::File { path, origin, .. } => Ok((path, Some(origin))),
        Resolution::BuiltIn { module } => Err(format!(
            "{module} is built into kernel {release}; there is no file to inspect (`nfs-gds check` reads its hooks from /proc/kallsyms)"
        )
        .into()),
        Resolution::NotFound { module } => {
            Err(format!("no module named {module} for kernel {release} (not in modules.dep or modules.builtin)").into())
        }
        Resolution::NoModuleTree { dir } => Err(format!(
            "no modules.dep in {}: cannot resolve {wanted:?} (give a path instead)",
            dir.display()
        )
        .into()),
    }
}

/// The module's name: its modinfo `name=`, else the file's name without `.ko…`, with `-` as
/// `_` the way the kernel names modules.
fn module_name(f: &ModuleFile) -> String {
    let name = match &f.modinfo.name {
        Some(n) => n.clone(),
        None => {
            let file = f.path.file_name().unwrap_or_default().to_string_lossy();
            file.split(".ko").next().unwrap_or_default().to_string()
        }
    };
    name.replace('-', "_")
}

/// Whether the nvfs hooks are this file's to carry: it is rpcrdma (by name), or it defines a
/// hook whatever it is called.
fn carries_hooks(f: &ModuleFile) -> bool {
    module_name(f) == "rpcrdma" || f.symbols.iter().any(|s| s.defined)
}

/// The file's verdict, derived from its two checks (the same ones `check` runs on the module
/// modprobe would load), with the detail of which way it failed.
fn verdict(f: &ModuleFile, checks: &[CheckResult; 2]) -> HooksVerdict {
    let [hooks, export] = checks;
    if hooks.status != Status::Pass {
        return if hooks.status == Status::Fail {
            HooksVerdict::Missing
        } else {
            HooksVerdict::Uncertain
        };
    }
    match export.status {
        Status::Pass => HooksVerdict::Usable,
        Status::Fail if f.symbols.iter().any(|s| s.export == Export::NotExported) => {
            HooksVerdict::NotExported
        }
        Status::Fail => HooksVerdict::PlainRefused,
        _ => HooksVerdict::Uncertain,
    }
}

fn text(
    f: &ModuleFile,
    v: HooksVerdict,
    load: Option<&LoadView>,
    rule: Option<&GplRule>,
    checks: Option<&[CheckResult; 2]>,
    style: TextStyle,
) -> String {
    let none = "(none)";
    let mut out = String::new();
    let _ = writeln!(out, "file:         {}", f.path.display());
    let _ = writeln!(
        out,
        "compression:  {} ({} bytes on disk, {} bytes ELF)",
        f.compression.as_str(),
        f.file_size,
        f.elf_size
    );
    let m = &f.modinfo;
    let _ = writeln!(out, "name:         {}", m.name.as_deref().unwrap_or(none));
    let _ = writeln!(
        out,
        "vermagic:     {}",
        m.vermagic.as_deref().unwrap_or(none)
    );
    let _ = writeln!(
        out,
        "version:      {}",
        m.version.as_deref().unwrap_or(none)
    );
    let _ = writeln!(
        out,
        "srcversion:   {}",
        m.srcversion.as_deref().unwrap_or(none)
    );
    let _ = writeln!(
        out,
        "license:      {}",
        m.license.as_deref().unwrap_or(none)
    );
    let _ = writeln!(
        out,
        "depends:      {}",
        if m.depends.is_empty() {
            none.to_string()
        } else {
            m.depends.join(",")
        }
    );
    let _ = writeln!(
        out,
        "build-id:     {}",
        f.build_id.as_deref().unwrap_or(none)
    );
    let _ = writeln!(
        out,
        "exports:      {}",
        match f.export_layout {
            ExportLayout::SplitTables => "__ksymtab / __ksymtab_gpl (GPL-only by table)",
            ExportLayout::FlagsTable => "__ksymtab + __kflagstab (GPL-only by flag)",
            ExportLayout::NoExports => "none",
        }
    );
    if !f.has_symtab {
        let _ = writeln!(
            out,
            "symbols:      no symbol table (stripped): hooks cannot be seen"
        );
    }
    let judged = checks.is_some();
    for s in f.symbols.iter().filter(|_| judged) {
        let state = if !s.defined {
            "MISSING".to_string()
        } else {
            match &s.export {
                Export::Gpl => "defined, exported GPL".into(),
                Export::Plain => "defined, exported plain (EXPORT_SYMBOL)".into(),
                Export::NotExported => "defined, NOT exported".into(),
                Export::Unrecognised { section } => {
                    format!("defined, exported from unrecognised section {section}")
                }
            }
        };
        let _ = writeln!(out, "hook:         {:<33} {state}", s.symbol);
    }
    if let Some(l) = load {
        l.text(&mut out);
    }
    if let Some(r) = rule {
        let _ = writeln!(
            out,
            "kernel rule:  GPL-only symbol_get {}: {}",
            r.enforcement.as_str(),
            r.evidence
        );
    }
    let checks = checks.map(|c| c.as_slice()).unwrap_or_default();
    let width = checks
        .iter()
        .map(|c| c.id.as_str().len())
        .max()
        .unwrap_or(0);
    for c in checks {
        out.push_str(&render::check_text(c, style, width));
    }
    let _ = writeln!(out, "verdict:      {}", verdict_line(f, v));
    out
}

/// The verdict in words. An uncertain verdict says what made it uncertain: a hook exported from
/// a section nfs-gds does not recognise is not "exported plain".
fn verdict_line(f: &ModuleFile, v: HooksVerdict) -> String {
    match v {
        HooksVerdict::Usable => "usable for GDS: nvidia-fs can take both hooks".into(),
        HooksVerdict::NotRpcrdma => format!(
            "not judged: {} is not rpcrdma, and the nvfs hooks are rpcrdma's to carry",
            module_name(f)
        ),
        HooksVerdict::Missing => "NOT usable: built without GDS support (hooks missing)".into(),
        HooksVerdict::NotExported => "NOT usable: hooks defined but not exported".into(),
        HooksVerdict::PlainRefused => "NOT usable: hooks exported plain and this kernel only lets __symbol_get take GPL exports".into(),
        HooksVerdict::Uncertain if !f.versioned_variants.is_empty() => format!(
            "UNCERTAIN: only versioned hook names ({}), an ABI nfs-gds does not know: whether nvidia-fs binds them depends on its release (`nfs-gds check --probe` tells)",
            f.versioned_variants.join(", ")
        ),
        HooksVerdict::Uncertain => {
            let unrecognised: Vec<String> = f
                .symbols
                .iter()
                .filter_map(|s| match &s.export {
                    Export::Unrecognised { section } => Some(format!("{} in {section}", s.symbol)),
                    _ => None,
                })
                .collect();
            if unrecognised.is_empty() {
                "UNCERTAIN: hooks exported plain and whether this kernel refuses that is unknown".into()
            } else {
                format!(
                    "UNCERTAIN: exported from a section nfs-gds does not recognise ({}), so whether nvidia-fs can take the hooks is unknown",
                    unrecognised.join(", ")
                )
            }
        }
    }
}

/// The GPL rule of the kernel `file` was built for: the running kernel's when the module's
/// vermagic names it (or names nothing usable), else the rule of the vermagic's release, from
/// its image below the root or its version, with the evidence saying which kernel was judged.
fn rule_for(root: &Root, file: &ModuleFile) -> Result<GplRule, CmdError> {
    let running = KernelInfo::read(root)?;
    let built = file
        .modinfo
        .vermagic_release()
        .filter(|r| is_plain_name(r) && running.release.as_deref() != Some(*r));
    let Some(built) = built else {
        return Ok(gpl_rule::read(root, &running));
    };
    let mut rule = gpl_rule::read(
        root,
        &KernelInfo::from_parts(Some(built.to_string()), None, None),
    );
    rule.evidence = format!(
        "judged for kernel {built}, the one the module was built for (vermagic), not the running {}: {}",
        running.release.as_deref().unwrap_or("kernel (release unknown)"),
        rule.evidence
    );
    Ok(rule)
}

/// The file's report, for [`super::report::show`].
pub fn report(args: &InspectArgs, ctx: &Ctx) -> Result<Inspected, CmdError> {
    let (path, origin) = resolve(ctx, &args.module)?;
    // A file found by name is below the root and read inside it; a path is the user's own.
    let file = match origin {
        Some(_) => crate::host::modules::module_files::inspect_file_with_cache(
            &ctx.host.root,
            &path,
            &RPCRDMA_HOOKS,
            None,
        )?,
        None => crate::host::modules::module_files::inspect_file(&path, &RPCRDMA_HOOKS)?,
    };
    let load = match origin {
        Some(_) => {
            crate::host::modules::module_files::load_facts_below(&ctx.host.root, &path, None).0
        }
        None => {
            crate::host::modules::module_files::read_load_facts(&path).map_err(|e| e.to_string())
        }
    };
    let is_rpcrdma = module_name(&file) == RPCRDMA;
    let load = load.ok().map(|l| LoadView::of(&l, is_rpcrdma));
    // A module that is not rpcrdma and defines no hook (sunrpc, ib_core, nvidia-fs): its facts,
    // and no verdict on hooks it was never meant to carry.
    let (v, rule, checks) = if carries_hooks(&file) {
        let plain = file
            .symbols
            .iter()
            .any(|s| s.defined && s.export == Export::Plain);
        let rule = if plain {
            Some(rule_for(&ctx.host.root, &file)?)
        } else {
            None
        };
        let checks = [
            rpcrdma_hooks::file_hooks(&file, origin.as_ref(), None).with_pointer(fix::TO_DOCTOR),
            rpcrdma_hook_export::file_hook_export(&file, rule.as_ref())
                .with_pointer(fix::TO_DOCTOR),
        ];
        (verdict(&file, &checks), rule, Some(checks))
    } else {
        (HooksVerdict::NotRpcrdma, None, None)
    };
    Ok(Inspected {
        schema_version: SCHEMA_VERSION,
        command: "inspect-module",
        module: file,
        hooks: v,
        checks,
        kernel_rule: rule,
        load,
    })
}

impl super::report::Report for Inspected {
    fn text(&self, style: TextStyle) -> String {
        text(
            &self.module,
            self.hooks,
            self.load.as_ref(),
            self.kernel_rule.as_ref(),
            self.checks.as_ref(),
            style,
        )
    }

    fn json(&self) -> Result<String, CmdError> {
        Ok(format!("{}\n", serde_json::to_string_pretty(self)?))
    }

    /// 0 when the hooks are usable (or not this module's to carry), 1 otherwise.
    fn exit_code(&self) -> u8 {
        exit::ready_or_not(matches!(
            self.hooks,
            HooksVerdict::Usable | HooksVerdict::NotRpcrdma
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmod::elf::SymbolFacts;

    fn file(exports: [Export; 2]) -> ModuleFile {
        let [a, b] = exports;
        ModuleFile {
            path: "/x/rpcrdma.ko".into(),
            compression: crate::kmod::decompress::Compression::None,
            file_size: 1,
            elf_size: 1,
            modinfo: Default::default(),
            build_id: None,
            has_symtab: true,
            versioned_variants: Vec::new(),
            export_layout: crate::kmod::elf::ExportLayout::SplitTables,
            symbols: vec![
                SymbolFacts {
                    symbol: "rpcrdma_register_nvfs_dma_ops".into(),
                    defined: true,
                    export: a,
                },
                SymbolFacts {
                    symbol: "rpcrdma_unregister_nvfs_dma_ops".into(),
                    defined: true,
                    export: b,
                },
            ],
        }
    }

    #[test]
    fn an_unrecognised_section_is_not_called_plain() {
        let f = file([
            Export::Unrecognised {
                section: "__ksymtab_odd".into(),
            },
            Export::Gpl,
        ]);
        let line = verdict_line(&f, HooksVerdict::Uncertain);
        assert!(!line.contains("plain"), "{line}");
        assert!(
            line.contains("(rpcrdma_register_nvfs_dma_ops in __ksymtab_odd)"),
            "{line}"
        );
        let f = file([Export::Plain, Export::Plain]);
        assert!(verdict_line(&f, HooksVerdict::Uncertain).contains("exported plain"));
    }
}
