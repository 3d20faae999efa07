//! Reads what matters from a module's ELF image: `.modinfo`, the GNU build-id, and for each
//! wanted symbol whether it is defined and whether it is exported GPL-only.
//!
//! # Export layouts
//!
//! A linked `.ko` marks an export with a local symbol `__ksymtab_<sym>` that labels its
//! `struct kernel_symbol` entry. Where GPL-ness is kept has two answers:
//!
//! - **Split tables** (every kernel before the flags-table series below): `EXPORT_SYMBOL`
//!   entries sit in section `__ksymtab`, `EXPORT_SYMBOL_GPL` entries in `__ksymtab_gpl`. Up to 6.4
//!   the C macro emits each entry into `___ksymtab[_gpl]+<sym>`; from 6.5 (modpost rework) modpost
//!   emits the same sections from `.export_symbol`; in both, `scripts/module.lds.S` merges them
//!   into `__ksymtab` / `__ksymtab_gpl`. Unlinked objects still carry the `+<sym>` suffix.
//! - **Flags table** (the "scalable symbol flags with `__kflagstab`" series, Siddharth Nayyar,
//!   v5 of 2026-03-26, committed to the modules tree on 2026-03-31, e.g. 10a4eb5882ba; Debian's
//!   7.2.13 and 7.3.4 modules carry it, the first mainline release was not pinned down): every
//!   export sits
//!   in `__ksymtab`, and a one-byte bitset per export in `__kflagstab`, labelled `__flags_<sym>`
//!   and in the same (sorted) order as `__ksymtab`, says whether it is GPL-only
//!   (`KSYM_FLAG_GPL_ONLY = 1 << 0`). The kernel then refuses a module that exports symbols
//!   without `__kflagstab`, so its presence is what tells the layouts apart. The flag is read from
//!   `__flags_<sym>`, or failing that from the entry's index in `__ksymtab`.
//!
//! An export entry anywhere else, or flags that cannot be read, yields [`Export::Unrecognised`]
//! naming the section: never a guess.
//!
//! Verified against real distribution modules by listing every export of every module with
//! `examples/ko-exports.rs` ([`list_exports`]) and diffing against the `EXPORT_SYMBOL[_GPL]`
//! column of the matching `linux-headers` package's `Module.symvers` (spot-checked with
//! `readelf -SW` / `readelf -Ws`): Debian 12 `linux-image-6.1.0-50-amd64` 6.1.176, plain `.ko`,
//! 4022 modules, 14135 exports (6127 plain, 8008 GPL); Debian 13
//! `linux-image-6.12.117+deb13-amd64` 6.12.117, `.ko.xz` (xz CRC32, 1 MiB dictionary), 4230
//! modules, 15520 exports (6530 plain, 8990 GPL). Both identical to `Module.symvers`, e.g.
//! `sunrpc.ko` with 3 (6.1) and 6 (6.12) plain exports among 268 GPL ones. The flags-table
//! layout the same way: Debian 13 `linux-modules-7.3.4+deb13-amd64` 7.3.4-1~bpo13+1
//! (trixie-backports), `.ko.xz`, 4225 modules, 16244 exports (6716 plain, 9528 GPL), identical
//! to the `Module.symvers` of `linux-headers-7.3.4+deb13-amd64` (`sunrpc.ko`: 6 plain, 271 GPL);
//! and in the VM suite the 7.3.4 kernel's own `symbol_get` of the hooks agrees with the flag.
//!
//! # Hostile input
//!
//! goblin's whole-file `Elf::parse` also walks program headers, dynamic sections and every
//! relocation section, allocating for each; a module needs none of that. This reader asks goblin
//! only for the header, the section headers and the symbol table, after checking itself that
//! each of them lies inside the file, and looks names up in the string tables by hand (a string
//! table that is not UTF-8 as a whole must not hide the names that are).

use goblin::container::{Container, Ctx};
use goblin::elf::header::{self, Header};
use goblin::elf::section_header::{self, SectionHeader};
use goblin::elf::sym::{Sym, Symtab};
use goblin::elf::Elf;
use serde::{Deserialize, Serialize};

use super::build_id::parse_gnu_build_id_note;
use super::modinfo::{parse_modinfo, Modinfo};

/// How a symbol is exported by a module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Export {
    /// `EXPORT_SYMBOL_GPL`: accepted by every kernel's `__symbol_get`.
    Gpl,
    /// Plain `EXPORT_SYMBOL`: refused by `__symbol_get` on kernels with the GPL-only rule.
    Plain,
    /// Not exported at all: nvidia-fs cannot find it.
    NotExported,
    /// There is an export entry, in a section this reader does not know (or whose flags it could
    /// not read).
    Unrecognised { section: String },
}

/// Where the module keeps the GPL-ness of its exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExportLayout {
    /// `__ksymtab` for plain exports, `__ksymtab_gpl` for GPL-only ones.
    SplitTables,
    /// One `__ksymtab` plus a `__kflagstab` of per-export flag bytes.
    FlagsTable,
    /// The module exports nothing (no export table at all).
    NoExports,
}

/// What a module file says about one symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    pub export_layout: ExportLayout,
    /// Defined symbols that are a versioned variant of a wanted name
    /// ([`versioned_variant_of`]): an ABI the caller may not know.
    pub versioned_variants: Vec<String>,
}

/// Whether `name` is `wanted` with a version inserted after its first word, the way NVIDIA
/// versions its hook ABIs (`nvme_register_nvfs_dma_ops` → `nvme_v2_register_nvfs_dma_ops`):
/// `rpcrdma_v2_register_nvfs_dma_ops` is a variant of `rpcrdma_register_nvfs_dma_ops`.
pub fn versioned_variant_of(name: &[u8], wanted: &str) -> bool {
    let Some((first, rest)) = wanted.split_once('_') else {
        return false;
    };
    let Some(tail) = name
        .strip_prefix(first.as_bytes())
        .and_then(|t| t.strip_prefix(b"_v"))
    else {
        return false;
    };
    let digits = tail.iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0
        && tail[digits..]
            .strip_prefix(b"_")
            .is_some_and(|r| r == rest.as_bytes())
}

#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not a valid ELF file: {0}")]
    Parse(String),
    #[error(
        "ELF {what} lies outside the file (offset {offset}, size {size}, file size {file_size})"
    )]
    OutOfBounds {
        what: String,
        offset: u64,
        size: u64,
        file_size: usize,
    },
    #[error("not a kernel module: it has no .modinfo section")]
    NoModinfo,
}

/// Byte range `[offset, offset + size)` of `bytes`, or an error naming `what`.
pub(super) fn slice_of<'a>(
    bytes: &'a [u8],
    what: &str,
    offset: u64,
    size: u64,
) -> Result<&'a [u8], ElfError> {
    let out_of_bounds = || ElfError::OutOfBounds {
        what: what.to_string(),
        offset,
        size,
        file_size: bytes.len(),
    };
    let start = usize::try_from(offset).map_err(|_| out_of_bounds())?;
    let len = usize::try_from(size).map_err(|_| out_of_bounds())?;
    let end = start.checked_add(len).ok_or_else(out_of_bounds)?;
    bytes.get(start..end).ok_or_else(out_of_bounds)
}

/// The NUL-terminated name at `offset` of a string table; `None` when out of range.
fn name_at(strtab: &[u8], offset: usize) -> Option<&[u8]> {
    let rest = strtab.get(offset..)?;
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Classifies the section an export entry of the split-tables layout lives in.
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

/// `KSYM_FLAG_GPL_ONLY` of the `__kflagstab` series.
const KSYM_FLAG_GPL_ONLY: u8 = 1 << 0;

/// A parsed module image: its sections and symbols, ready for lookups (shared with the other
/// readers of this module: modversions, signatures).
pub(super) struct Image<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) ctx: Ctx,
    pub(super) sections: Vec<SectionHeader>,
    shstrtab: &'a [u8],
    symtab: Option<(Symtab<'a>, &'a [u8])>,
}

impl<'a> Image<'a> {
    pub(super) fn parse(bytes: &'a [u8]) -> Result<Self, ElfError> {
        let parse_err = |e: goblin::error::Error| ElfError::Parse(e.to_string());
        let header: Header = Elf::parse_header(bytes).map_err(parse_err)?;
        if &header.e_ident[..header::SELFMAG] != header::ELFMAG {
            return Err(ElfError::Parse("bad ELF magic".into()));
        }
        let container = match header.e_ident[header::EI_CLASS] {
            header::ELFCLASS64 => Container::Big,
            header::ELFCLASS32 => Container::Little,
            c => return Err(ElfError::Parse(format!("unknown ELF class {c}"))),
        };
        let endian = match header.e_ident[header::EI_DATA] {
            header::ELFDATA2LSB => goblin::container::Endian::Little,
            header::ELFDATA2MSB => goblin::container::Endian::Big,
            d => return Err(ElfError::Parse(format!("unknown ELF data encoding {d}"))),
        };
        let ctx = Ctx::new(container, endian);

        let shdr_size = SectionHeader::size(ctx);
        if header.e_shoff == 0 {
            return Err(ElfError::NoModinfo);
        }
        if usize::from(header.e_shentsize) != shdr_size {
            return Err(ElfError::Parse(format!(
                "section header entry size {} (expected {shdr_size})",
                header.e_shentsize
            )));
        }
        // The first header must be readable; with e_shnum == 0 the real count sits in its sh_size.
        slice_of(
            bytes,
            "section header table",
            header.e_shoff,
            shdr_size as u64,
        )?;
        let count = if header.e_shnum == 0 {
            let first =
                SectionHeader::parse(bytes, header.e_shoff as usize, 1, ctx).map_err(parse_err)?;
            first.first().map_or(0, |s| s.sh_size)
        } else {
            u64::from(header.e_shnum)
        };
        let table_size = count.checked_mul(shdr_size as u64).ok_or_else(|| {
            ElfError::Parse(format!("section header table claims {count} entries"))
        })?;
        slice_of(bytes, "section header table", header.e_shoff, table_size)?;
        let sections = SectionHeader::parse(bytes, header.e_shoff as usize, count as usize, ctx)
            .map_err(parse_err)?;

        let mut shstrndx = usize::from(header.e_shstrndx);
        if shstrndx == section_header::SHN_XINDEX as usize {
            shstrndx = sections.first().map_or(0, |s| s.sh_link as usize);
        }
        let shstrtab = match sections.get(shstrndx) {
            Some(sh) => slice_of(bytes, "section name table", sh.sh_offset, sh.sh_size)?,
            None => &[],
        };

        let symtab = match sections
            .iter()
            .rfind(|sh| sh.sh_type == section_header::SHT_SYMTAB)
        {
            None => None,
            Some(sh) => {
                let sym_size = Sym::size(container);
                if sh.sh_entsize != sym_size as u64 {
                    return Err(ElfError::Parse(format!(
                        "symbol table entry size {} (expected {sym_size})",
                        sh.sh_entsize
                    )));
                }
                slice_of(bytes, "symbol table", sh.sh_offset, sh.sh_size)?;
                let count = (sh.sh_size / sym_size as u64) as usize;
                let syms =
                    Symtab::parse(bytes, sh.sh_offset as usize, count, ctx).map_err(parse_err)?;
                let strtab = match sections.get(sh.sh_link as usize) {
                    Some(s) => slice_of(bytes, "symbol name table", s.sh_offset, s.sh_size)?,
                    None => {
                        return Err(ElfError::Parse(format!(
                            "symbol table links to missing section {}",
                            sh.sh_link
                        )))
                    }
                };
                Some((syms, strtab))
            }
        };
        Ok(Image {
            bytes,
            ctx,
            sections,
            shstrtab,
            symtab,
        })
    }

    pub(super) fn section_name(&self, sh: &SectionHeader) -> &'a [u8] {
        name_at(self.shstrtab, sh.sh_name).unwrap_or(b"")
    }

    pub(super) fn find_section(&self, name: &str) -> Option<(usize, &SectionHeader)> {
        self.sections
            .iter()
            .enumerate()
            .find(|(_, sh)| self.section_name(sh) == name.as_bytes())
    }

    pub(super) fn section_data(
        &self,
        sh: &SectionHeader,
        what: &str,
    ) -> Result<&'a [u8], ElfError> {
        if sh.sh_type == section_header::SHT_NOBITS {
            return Ok(&[]);
        }
        slice_of(self.bytes, what, sh.sh_offset, sh.sh_size)
    }

    /// Defined symbols (not `SHN_UNDEF`), with their names.
    pub(super) fn defined_symbols(&self) -> impl Iterator<Item = (&'a [u8], Sym)> + '_ {
        self.symtab.iter().flat_map(|(syms, strtab)| {
            syms.iter().filter_map(move |sym| {
                if sym.st_shndx == section_header::SHN_UNDEF as usize {
                    return None;
                }
                Some((name_at(strtab, sym.st_name)?, sym))
            })
        })
    }
}

/// Reads the export flags of the flags-table layout.
struct FlagsTable<'a> {
    index: usize,
    data: &'a [u8],
    /// Size of one `__ksymtab` entry, when it can be told from the two section sizes.
    entry_size: Option<u64>,
}

impl<'a> FlagsTable<'a> {
    fn new(image: &Image<'a>) -> Result<Option<Self>, ElfError> {
        let Some((index, sh)) = image.find_section("__kflagstab") else {
            return Ok(None);
        };
        let data = image.section_data(sh, "section __kflagstab")?;
        let entry_size = image.find_section("__ksymtab").and_then(|(_, k)| {
            let n = data.len() as u64;
            // A zero-sized `__ksymtab` would make every index 0 / 0.
            (n > 0 && k.sh_size >= n && k.sh_size.is_multiple_of(n)).then(|| k.sh_size / n)
        });
        Ok(Some(FlagsTable {
            index,
            data,
            entry_size,
        }))
    }

    /// The export of `sym`, whose `__ksymtab_<sym>` entry is `entry`, looked up by its
    /// `__flags_<sym>` label or else by its index in `__ksymtab`.
    fn export_of(&self, label: Option<&Sym>, entry: &Sym) -> Export {
        let byte = match label {
            Some(l) if l.st_shndx == self.index => usize::try_from(l.st_value)
                .ok()
                .and_then(|i| self.data.get(i)),
            _ => self.entry_size.and_then(|size| {
                usize::try_from(entry.st_value / size)
                    .ok()
                    .filter(|_| entry.st_value.is_multiple_of(size))
                    .and_then(|i| self.data.get(i))
            }),
        };
        match byte {
            Some(b) if b & KSYM_FLAG_GPL_ONLY != 0 => Export::Gpl,
            Some(_) => Export::Plain,
            None => Export::Unrecognised {
                section: "__ksymtab (its flag in __kflagstab cannot be found)".into(),
            },
        }
    }
}

/// Every export of the image, classified, in symbol-table order. For checking the reader against
/// a module's `Module.symvers` or `readelf`; [`inspect_elf`] answers for the symbols asked about.
pub fn list_exports(bytes: &[u8]) -> Result<Vec<(String, Export)>, ElfError> {
    let image = Image::parse(bytes)?;
    let flags = FlagsTable::new(&image)?;
    let entries: Vec<(String, Sym)> = image
        .defined_symbols()
        .filter_map(|(name, sym)| {
            let target = name.strip_prefix(b"__ksymtab_")?;
            let in_names = image
                .sections
                .get(sym.st_shndx)
                .is_some_and(|sh| image.section_name(sh) == b"__ksymtab_strings");
            (!in_names).then(|| (String::from_utf8_lossy(target).into_owned(), sym))
        })
        .collect();
    let labels = flags_labels(&image, flags.is_some());
    Ok(entries
        .into_iter()
        .map(|(name, sym)| {
            let export = classify(&image, flags.as_ref(), labels.get(name.as_bytes()), &sym);
            (name, export)
        })
        .collect())
}

/// `__flags_<sym>` labels by `<sym>` (only gathered when the image has a flags table).
fn flags_labels<'a>(image: &Image<'a>, wanted: bool) -> std::collections::HashMap<&'a [u8], Sym> {
    if !wanted {
        return Default::default();
    }
    image
        .defined_symbols()
        .filter_map(|(name, sym)| Some((name.strip_prefix(b"__flags_")?, sym)))
        .collect()
}

fn classify(
    image: &Image<'_>,
    flags: Option<&FlagsTable<'_>>,
    label: Option<&Sym>,
    entry: &Sym,
) -> Export {
    let section = image
        .sections
        .get(entry.st_shndx)
        .map(|sh| String::from_utf8_lossy(image.section_name(sh)).into_owned())
        .unwrap_or_else(|| format!("section index {}", entry.st_shndx));
    match (export_of_section(&section), flags) {
        // In the flags-table layout everything sits in `__ksymtab`; the flag decides.
        (Export::Plain, Some(f)) => f.export_of(label, entry),
        (export, _) => export,
    }
}

/// Inspects an ELF image for `.modinfo`, the build-id and the `wanted` symbols.
pub fn inspect_elf(bytes: &[u8], wanted: &[&str]) -> Result<ElfFacts, ElfError> {
    let image = Image::parse(bytes)?;

    let mut modinfo = None;
    let mut build_id = None;
    for sh in &image.sections {
        match image.section_name(sh) {
            b".modinfo" => {
                modinfo = Some(parse_modinfo(image.section_data(sh, "section .modinfo")?))
            }
            b".note.gnu.build-id" => {
                build_id =
                    parse_gnu_build_id_note(image.section_data(sh, "section .note.gnu.build-id")?)
            }
            _ => {}
        }
    }
    let modinfo = modinfo.ok_or(ElfError::NoModinfo)?;

    let flags = FlagsTable::new(&image)?;
    let export_layout = if flags.is_some() {
        ExportLayout::FlagsTable
    } else if image.find_section("__ksymtab").is_some()
        || image.find_section("__ksymtab_gpl").is_some()
    {
        ExportLayout::SplitTables
    } else {
        ExportLayout::NoExports
    };

    let mut symbols: Vec<SymbolFacts> = wanted
        .iter()
        .map(|s| SymbolFacts {
            symbol: s.to_string(),
            defined: false,
            export: Export::NotExported,
        })
        .collect();
    let mut entries: Vec<(usize, Sym)> = Vec::new();
    let mut labels: Vec<(usize, Sym)> = Vec::new();
    let position = |name: &[u8]| wanted.iter().position(|w| w.as_bytes() == name);
    let mut versioned_variants = Vec::new();
    for (name, sym) in image.defined_symbols() {
        if let Some(i) = position(name) {
            symbols[i].defined = true;
        } else if wanted.iter().any(|w| versioned_variant_of(name, w)) {
            let name = String::from_utf8_lossy(name).into_owned();
            if !versioned_variants.contains(&name) {
                versioned_variants.push(name);
            }
        } else if let Some(i) = name.strip_prefix(b"__ksymtab_").and_then(position) {
            entries.push((i, sym));
        } else if let Some(i) = name.strip_prefix(b"__flags_").and_then(position) {
            labels.push((i, sym));
        }
    }
    for (i, entry) in entries {
        let label = labels.iter().find(|(j, _)| *j == i).map(|(_, s)| s);
        symbols[i].export = classify(&image, flags.as_ref(), label, &entry);
    }

    Ok(ElfFacts {
        modinfo,
        build_id,
        has_symtab: image.symtab.as_ref().is_some_and(|(s, _)| s.len() > 1),
        symbols,
        export_layout,
        versioned_variants,
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
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 2; // ELFCLASS64
        header[5] = 1; // little-endian
        header[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes()); // e_shoff
        header[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        header[0x3c..0x3e].copy_from_slice(&1u16.to_le_bytes()); // e_shnum
        assert!(matches!(
            inspect_elf(&header, &[]),
            Err(ElfError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn versioned_variants_insert_a_version_after_the_first_word() {
        let hook = "rpcrdma_register_nvfs_dma_ops";
        assert!(versioned_variant_of(
            b"rpcrdma_v2_register_nvfs_dma_ops",
            hook
        ));
        assert!(versioned_variant_of(
            b"rpcrdma_v10_register_nvfs_dma_ops",
            hook
        ));
        assert!(!versioned_variant_of(
            b"rpcrdma_register_nvfs_dma_ops",
            hook
        ));
        assert!(!versioned_variant_of(
            b"rpcrdma_v_register_nvfs_dma_ops",
            hook
        ));
        assert!(!versioned_variant_of(
            b"rpcrdma_v2_register_nvfs_dma_opsx",
            hook
        ));
        assert!(!versioned_variant_of(
            b"nvme_v2_register_nvfs_dma_ops",
            hook
        ));
    }

    #[test]
    fn names_are_read_up_to_the_nul() {
        assert_eq!(name_at(b"\0abc\0de", 1), Some(&b"abc"[..]));
        assert_eq!(name_at(b"\0abc\0de", 5), Some(&b"de"[..]));
        assert_eq!(name_at(b"\0abc", 9), None);
    }
}
