//! The nvfs hooks of the rpcrdma the kernel runs, and what shows them.
//!
//! The kernel lists a loaded module's symbols in `/proc/kallsyms`, a file of 10–20 MB on a
//! distribution kernel that the kernel generates anew on every read (tens of milliseconds of
//! system time). When `/sys/module/rpcrdma/notes/.note.gnu.build-id` names the build-id of the
//! file modprobe resolves, the loaded module *is* that file, and the file's own symbol and export
//! tables (already read, or cached) say what kallsyms would: which hooks are defined, and which
//! sit in the module's `syms` export table, the one kallsyms shows upper-case. Kallsyms is then
//! not read at all, and the evidence says so; it is read when the build-id is missing or differs,
//! when the file's facts cannot answer (no symbol table, an export in a section this reader does
//! not know), and for a built-in rpcrdma, whose symbols only kallsyms lists.

use super::kallsyms::KallsymsEntry;
use super::sysmodule::SysModule;
use crate::kmod::{Export, ExportLayout, ModuleFile, RPCRDMA, RPCRDMA_HOOKS};

/// One hook of the loaded rpcrdma (or of the kernel image when rpcrdma is built in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedHook {
    pub symbol: String,
    /// In the module's `syms` export table: the type letter kallsyms shows is upper-case.
    pub in_syms_table: bool,
    /// What showed it: the kallsyms line, or the file's symbol and export.
    pub line: String,
}

impl LoadedHook {
    /// Upper-case in kallsyms: a plain export on kernels with split export tables.
    pub fn plain_export(&self) -> bool {
        self.in_syms_table
    }
}

/// The loaded rpcrdma is the inspected file by GNU build-id, and the file's facts say everything
/// kallsyms would about its hooks.
#[derive(Debug, Clone, Copy)]
pub struct SameBuild<'a> {
    pub build_id: &'a str,
    pub file: &'a ModuleFile,
}

impl SameBuild<'_> {
    /// The evidence line for the identification.
    pub fn evidence(&self) -> String {
        format!(
            "{}, the build-id of {}: the loaded module is that file, so its hooks are the file's (/proc/kallsyms not read)",
            self.build_id,
            self.file.path.display()
        )
    }
}

/// The loaded build as the file, when `sys` (the loaded module) and `file` have the same
/// build-id and the file's symbol facts can stand in for kallsyms.
pub fn same_build<'a>(sys: &'a SysModule, file: Option<&'a ModuleFile>) -> Option<SameBuild<'a>> {
    let file = file?;
    let build_id = sys.build_id.as_deref()?;
    let answers = file.has_symtab
        && RPCRDMA_HOOKS
            .iter()
            .all(|h| file.symbols.iter().any(|s| s.symbol == *h))
        && file
            .symbols
            .iter()
            .all(|s| !s.defined || !matches!(s.export, Export::Unrecognised { .. }));
    (file.build_id.as_deref() == Some(build_id) && answers).then_some(SameBuild { build_id, file })
}

/// The hooks kallsyms lists for the loaded rpcrdma (tagged `[rpcrdma]`), or for the kernel image
/// when rpcrdma is `builtin` (untagged).
pub fn from_kallsyms(entries: &[KallsymsEntry], builtin: bool) -> Vec<LoadedHook> {
    entries
        .iter()
        .filter(|e| of_rpcrdma(e, builtin) && RPCRDMA_HOOKS.contains(&e.symbol.as_str()))
        .map(|e| LoadedHook {
            symbol: e.symbol.clone(),
            in_syms_table: e.plain_export(),
            line: e.line.clone(),
        })
        .collect()
}

/// The hooks `found` lacks.
pub fn missing(found: &[LoadedHook]) -> Vec<&'static str> {
    RPCRDMA_HOOKS
        .iter()
        .copied()
        .filter(|h| !found.iter().any(|e| e.symbol == *h))
        .collect()
}

/// Whether a kallsyms line is the loaded rpcrdma's (tagged `[rpcrdma]`), or the kernel image's
/// when rpcrdma is `builtin`.
fn of_rpcrdma(e: &KallsymsEntry, builtin: bool) -> bool {
    match &e.module {
        Some(m) => m == RPCRDMA,
        None => builtin,
    }
}

/// The versioned variants of the hooks (`rpcrdma_v2_register_nvfs_dma_ops`) kallsyms lists for
/// the loaded rpcrdma: a hook ABI this release does not know.
pub fn versioned_in_kallsyms(entries: &[KallsymsEntry], builtin: bool) -> Vec<String> {
    entries
        .iter()
        .filter(|e| of_rpcrdma(e, builtin) && !RPCRDMA_HOOKS.contains(&e.symbol.as_str()))
        .filter(|e| {
            RPCRDMA_HOOKS
                .iter()
                .any(|h| crate::kmod::elf::versioned_variant_of(e.symbol.as_bytes(), h))
        })
        .map(|e| e.symbol.clone())
        .collect()
}

/// The hooks the loaded module has, from the file it was loaded from: those the file defines
/// (kallsyms lists a module's defined symbols only), in the `syms` table when `is_exported()`
/// would find them there — the plain exports with split tables, every export with the
/// `__kflagstab` layout.
pub fn from_file(same: SameBuild<'_>) -> Vec<LoadedHook> {
    let f = same.file;
    f.symbols
        .iter()
        .filter(|s| s.defined && RPCRDMA_HOOKS.contains(&s.symbol.as_str()))
        .map(|s| {
            let in_syms_table = match s.export {
                Export::Plain => true,
                Export::Gpl => f.export_layout == ExportLayout::FlagsTable,
                Export::NotExported | Export::Unrecognised { .. } => false,
            };
            let export = match s.export {
                Export::Plain => "exported plain",
                Export::Gpl => "exported GPL",
                _ => "not exported",
            };
            LoadedHook {
                symbol: s.symbol.clone(),
                in_syms_table,
                line: format!("{} defined, {export}", s.symbol),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmod::Compression;

    /// An rpcrdma file whose hooks are defined (or not) and exported as `export`.
    fn file(defined: bool, export: Export) -> ModuleFile {
        ModuleFile {
            path: "/lib/modules/6.8.0/updates/dkms/rpcrdma.ko".into(),
            compression: Compression::None,
            file_size: 90_000,
            elf_size: 90_000,
            modinfo: Default::default(),
            build_id: Some("a1".into()),
            has_symtab: true,
            versioned_variants: Vec::new(),
            export_layout: ExportLayout::SplitTables,
            symbols: crate::kmod::hook_symbols(defined, export),
        }
    }

    /// The kallsyms lines of both hooks of a loaded rpcrdma, with type letter `letter`.
    fn kallsyms_lines(letter: char) -> Vec<KallsymsEntry> {
        RPCRDMA_HOOKS
            .iter()
            .map(|s| KallsymsEntry {
                symbol: s.to_string(),
                type_letter: letter,
                module: Some(RPCRDMA.into()),
                line: format!("0000000000000000 {letter} {s}\t[{RPCRDMA}]"),
            })
            .collect()
    }

    fn loaded(build_id: &str) -> SysModule {
        SysModule {
            present: true,
            build_id: Some(build_id.into()),
            ..SysModule::default()
        }
    }

    #[test]
    fn a_file_of_the_loaded_build_id_stands_in_for_kallsyms() {
        for (export, upper) in [(Export::Gpl, false), (Export::Plain, true)] {
            let file = file(true, export.clone());
            let sys = loaded("a1");
            let same = same_build(&sys, Some(&file)).expect("same build");
            let hooks = from_file(same);
            // What kallsyms would show: both hooks, upper-case exactly when exported plain.
            let shown = from_kallsyms(&kallsyms_lines(if upper { 'T' } else { 't' }), false);
            assert_eq!(
                hooks
                    .iter()
                    .map(|h| (&h.symbol, h.plain_export()))
                    .collect::<Vec<_>>(),
                shown
                    .iter()
                    .map(|h| (&h.symbol, h.plain_export()))
                    .collect::<Vec<_>>(),
                "{export:?}"
            );
            assert!(same.evidence().contains("/proc/kallsyms not read"));
        }
    }

    #[test]
    fn with_the_flags_table_every_export_is_upper_case() {
        let mut file = file(true, Export::Gpl);
        file.export_layout = ExportLayout::FlagsTable;
        let sys = loaded("a1");
        let hooks = from_file(same_build(&sys, Some(&file)).unwrap());
        assert!(hooks.iter().all(|h| h.plain_export()));
    }

    #[test]
    fn a_hookless_file_gives_no_hooks() {
        let file = file(false, Export::Gpl);
        let sys = loaded("a1");
        assert!(from_file(same_build(&sys, Some(&file)).unwrap()).is_empty());
    }

    #[test]
    fn kallsyms_is_needed_when_the_file_cannot_answer() {
        let file = file(true, Export::Gpl);
        // Another build, or no build-id on either side.
        assert!(same_build(&loaded("ffff"), Some(&file)).is_none());
        assert!(same_build(&SysModule::default(), Some(&file)).is_none());
        assert!(same_build(&loaded("a1"), None).is_none());
        // A stripped file, or an export in a section this reader does not know.
        let mut stripped = file.clone();
        stripped.has_symtab = false;
        assert!(same_build(&loaded("a1"), Some(&stripped)).is_none());
        let mut odd = file.clone();
        odd.symbols[0].export = Export::Unrecognised {
            section: "__ksymtab_odd".into(),
        };
        assert!(same_build(&loaded("a1"), Some(&odd)).is_none());
        let mut none = file;
        none.build_id = None;
        assert!(same_build(&loaded("a1"), Some(&none)).is_none());
    }
}
