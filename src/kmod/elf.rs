//! Reads what matters from a module's ELF image: `.modinfo`, the GNU build-id, and for each
//! wanted symbol whether it is defined and in which export table it sits.
//!
//! Export tables in a linked `.ko`: `EXPORT_SYMBOL(sym)` puts a `struct kernel_symbol` named
//! `__ksymtab_<sym>` in section `__ksymtab`, `EXPORT_SYMBOL_GPL` in `__ksymtab_gpl`. The way they
//! get there changed, the result did not:
//! - up to 6.4 the C macro emits the entry into `___ksymtab[_gpl]+<sym>` in the object file;
//! - from 6.5 (modpost rework) the C macro only records the export in `.export_symbol` and
//!   modpost emits the `KSYMTAB_*` entries into the same `___ksymtab[_gpl]+<sym>` sections;
//! - in both, `scripts/module.lds.S` merges those into `__ksymtab` / `__ksymtab_gpl`.
//!
//! Verified on: synthetic modules with both section layouts (tests), and unlinked objects whose
//! sections still carry the `+<sym>` suffix. A module whose export tables this reader does not
//! recognise (for instance a future layout that keeps GPL-ness in a separate flags table) yields
//! [`Export::Unrecognised`] naming the section, never a guess.

use goblin::elf::{section_header::SHN_UNDEF, Elf};
use serde::Serialize;

use super::modinfo::{parse_modinfo, Modinfo};
use crate::host::sysmodule::parse_gnu_build_id_note;

/// How a symbol is exported by a module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Export {
    /// `EXPORT_SYMBOL_GPL`: accepted by every kernel's `__symbol_get`.
    Gpl,
    /// Plain `EXPORT_SYMBOL`: refused by `__symbol_get` on kernels with the GPL-only rule.
    Plain,
    /// Not exported at all: nvidia-fs cannot find it.
    NotExported,
    /// There is an export entry, in a section this reader does not know.
    Unrecognised { section: String },
}

/// What a module file says about one symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymbolFacts {
    pub symbol: String,
    /// Defined in the module (not merely referenced).
    pub defined: bool,
    pub export: Export,
}

/// The facts of one ELF module image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElfFacts {
    pub modinfo: Modinfo,
    pub build_id: Option<String>,
    pub symbols: Vec<SymbolFacts>,
    /// Whether the image has a symbol table at all (a fully stripped module has none, and then
    /// nothing can be said about its symbols).
    pub has_symtab: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not a valid ELF file: {0}")]
    Parse(String),
    #[error("ELF section {name} lies outside the file (offset {offset}, size {size}, file size {file_size})")]
    SectionOutOfBounds {
        name: String,
        offset: u64,
        size: u64,
        file_size: usize,
    },
    #[error("not a kernel module: it has no .modinfo section")]
    NoModinfo,
}

fn section_bytes<'a>(
    bytes: &'a [u8],
    name: &str,
    offset: u64,
    size: u64,
) -> Result<&'a [u8], ElfError> {
    let out_of_bounds = || ElfError::SectionOutOfBounds {
        name: name.to_string(),
        offset,
        size,
        file_size: bytes.len(),
    };
    let start = usize::try_from(offset).map_err(|_| out_of_bounds())?;
    let end = start
        .checked_add(usize::try_from(size).map_err(|_| out_of_bounds())?)
        .ok_or_else(out_of_bounds)?;
    bytes.get(start..end).ok_or_else(out_of_bounds)
}

/// Classifies the section an export entry lives in.
pub fn export_of_section(section: &str) -> Export {
    let base = section.split('+').next().unwrap_or(section);
    match base {
        "__ksymtab_gpl" | "___ksymtab_gpl" => Export::Gpl,
        "__ksymtab" | "___ksymtab" => Export::Plain,
        _ => Export::Unrecognised {
            section: section.to_string(),
        },
    }
}

/// Inspects an ELF image for `.modinfo`, the build-id and the `wanted` symbols.
pub fn inspect_elf(bytes: &[u8], wanted: &[&str]) -> Result<ElfFacts, ElfError> {
    let elf = Elf::parse(bytes).map_err(|e| ElfError::Parse(e.to_string()))?;

    let mut modinfo = None;
    let mut build_id = None;
    for sh in &elf.section_headers {
        let name = elf.shdr_strtab.get_at(sh.sh_name).unwrap_or("");
        if name == ".modinfo" {
            let data = section_bytes(bytes, name, sh.sh_offset, sh.sh_size)?;
            modinfo = Some(parse_modinfo(data));
        } else if name == ".note.gnu.build-id" {
            let data = section_bytes(bytes, name, sh.sh_offset, sh.sh_size)?;
            build_id = parse_gnu_build_id_note(data);
        }
    }
    let modinfo = modinfo.ok_or(ElfError::NoModinfo)?;

    let section_name = |idx: usize| -> String {
        elf.section_headers
            .get(idx)
            .and_then(|sh| elf.shdr_strtab.get_at(sh.sh_name))
            .unwrap_or("")
            .to_string()
    };

    let mut symbols: Vec<SymbolFacts> = wanted
        .iter()
        .map(|s| SymbolFacts {
            symbol: s.to_string(),
            defined: false,
            export: Export::NotExported,
        })
        .collect();
    for sym in elf.syms.iter() {
        let Some(name) = elf.strtab.get_at(sym.st_name) else {
            continue;
        };
        if sym.st_shndx == SHN_UNDEF as usize {
            continue;
        }
        if let Some(f) = symbols.iter_mut().find(|f| f.symbol == name) {
            f.defined = true;
        } else if let Some(target) = name.strip_prefix("__ksymtab_") {
            if let Some(f) = symbols.iter_mut().find(|f| f.symbol == target) {
                f.export = export_of_section(&section_name(sym.st_shndx));
            }
        }
    }

    Ok(ElfFacts {
        modinfo,
        build_id,
        has_symtab: !elf.syms.is_empty(),
        symbols,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_of_both_generations_classify() {
        assert_eq!(export_of_section("__ksymtab_gpl"), Export::Gpl);
        assert_eq!(export_of_section("__ksymtab"), Export::Plain);
        assert_eq!(
            export_of_section("___ksymtab_gpl+rpcrdma_register_nvfs_dma_ops"),
            Export::Gpl
        );
        assert_eq!(
            export_of_section("___ksymtab+rpcrdma_register_nvfs_dma_ops"),
            Export::Plain
        );
        assert_eq!(
            export_of_section(".text"),
            Export::Unrecognised {
                section: ".text".into()
            }
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(inspect_elf(b"", &[]).is_err());
        assert!(inspect_elf(b"\x7fELF\x02\x01\x01", &[]).is_err());
    }
}
