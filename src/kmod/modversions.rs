//! Symbol versions (CONFIG_MODVERSIONS) as a module file carries them: the CRC it expects of each
//! symbol it imports, and the CRC of each symbol it exports.
//!
//! # Imports
//!
//! modpost writes one `struct modversion_info { unsigned long crc; char name[64 - sizeof(long)]; }`
//! per imported symbol into section `__versions` (64 bytes an entry on 32- and 64-bit alike; the
//! CRC is a 32-bit value in a word). With CONFIG_EXTENDED_MODVERSIONS (6.14, for names longer than
//! 55 bytes and Rust) modpost also writes `__version_ext_crcs` (one `u32` per import) and
//! `__version_ext_names` (the names, NUL-terminated, in the same order); the loader's
//! `check_version()` then relies on those alone, and `__versions` (only with
//! CONFIG_BASIC_MODVERSIONS) keeps just the short names. This reader does the same.
//!
//! # Exports
//!
//! The kernel takes an exported symbol's CRC from `__kcrctab` (or `__kcrctab_gpl`) at the index
//! of its entry in `__ksymtab` (or `__ksymtab_gpl`). How the file stores it changed in 5.19
//! (commit 7b4537199a4a, "kbuild: link symbol CRCs at final link, removing
//! CONFIG_MODULE_REL_CRCS"):
//!
//! - **before 5.19**: genksyms' linker script defines each `__crc_<sym>` as an *absolute* symbol
//!   whose value is the CRC; the `__kcrctab` entries are relocations against it.
//! - **from 5.19**: modpost's `SYMBOL_CRC()` emits `__crc_<sym>: .long <crc>` into
//!   `___kcrctab[_gpl]+<sym>` (merged into `__kcrctab[_gpl]` at link): a label on the CRC itself.
//!
//! Both are read from the `__crc_<sym>` symbol. A module whose symbol table lost those labels
//! falls back to the kernel's own rule, the table index (`__ksymtab_<sym>`'s slot in its table,
//! the same slot in the matching CRC table); that is taken only when the CRC table carries no
//! relocations, i.e. when its bytes are the CRCs themselves (5.19 and later).

use std::collections::BTreeMap;

use goblin::container::Endian;
use goblin::elf::section_header;
use serde::{Deserialize, Serialize};

use super::elf::{ElfError, Image};

/// Size of one `struct modversion_info`.
pub const MODVERSION_INFO_SIZE: usize = 64;

/// One imported symbol and the CRC the module was built against. Its JSON form (the facts
/// cache's, nothing a user reads) is the pair `[symbol, crc]`: a warm run reads some 200 of
/// them, and serde reads a pair in two thirds of the instructions of an object with two keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(String, u32)", into = "(String, u32)")]
pub struct SymbolVersion {
    pub symbol: String,
    pub crc: u32,
}

impl From<(String, u32)> for SymbolVersion {
    fn from((symbol, crc): (String, u32)) -> Self {
        SymbolVersion { symbol, crc }
    }
}

impl From<SymbolVersion> for (String, u32) {
    fn from(v: SymbolVersion) -> Self {
        (v.symbol, v.crc)
    }
}

/// Which table the import versions were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImportTable {
    /// `__versions` (`struct modversion_info`).
    Basic,
    /// `__version_ext_crcs` + `__version_ext_names` (CONFIG_EXTENDED_MODVERSIONS).
    Extended,
}

/// The CRCs a module expects of its imports. Kept by the facts cache, which reads it on every
/// warm run: externally tagged, which serde reads as it goes, where an internal `kind` tag makes
/// it buffer the whole list first (an eighth of a warm check's instructions did that).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImportVersions {
    /// No version table: the module was built without CONFIG_MODVERSIONS.
    Unversioned,
    Versioned {
        table: ImportTable,
        versions: Vec<SymbolVersion>,
    },
}

/// Where the export CRCs were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExportCrcSource {
    /// Absolute `__crc_<sym>` symbols (kernels before 5.19).
    AbsoluteSymbols,
    /// `__crc_<sym>` labels on the CRC words in `__kcrctab[_gpl]` (5.19 and later).
    CrcTableLabels,
    /// No `__crc_<sym>` symbols; the `__kcrctab[_gpl]` slot matching the `__ksymtab[_gpl]` slot.
    TableIndex,
    /// The module exports without CRCs (built without CONFIG_MODVERSIONS), or exports nothing.
    None,
}

/// The CRCs of a module's exports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportCrcs {
    pub source: ExportCrcSource,
    pub crcs: BTreeMap<String, u32>,
}

impl ExportCrcs {
    pub fn crc_of(&self, symbol: &str) -> Option<u32> {
        self.crcs.get(symbol).copied()
    }
}

fn read_u32(bytes: &[u8], endian: Endian) -> Option<u32> {
    let b: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    Some(match endian {
        Endian::Little => u32::from_le_bytes(b),
        Endian::Big => u32::from_be_bytes(b),
    })
}

/// The low 32 bits of the `unsigned long` at the start of `entry` (the CRC of a
/// `modversion_info`).
fn read_crc_word(entry: &[u8], word: usize, endian: Endian) -> Option<u32> {
    let w = entry.get(..word)?;
    match (endian, word) {
        (Endian::Little, _) => read_u32(w, endian),
        (Endian::Big, 8) => read_u32(&w[4..], endian),
        (Endian::Big, _) => read_u32(w, endian),
    }
}

fn name_until_nul(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Parses a `__versions` section.
pub fn parse_versions_section(
    data: &[u8],
    word: usize,
    endian: Endian,
) -> Result<Vec<SymbolVersion>, ElfError> {
    if !data.len().is_multiple_of(MODVERSION_INFO_SIZE) {
        return Err(ElfError::Parse(format!(
            "section __versions is {} bytes, not a multiple of the {MODVERSION_INFO_SIZE}-byte modversion_info",
            data.len()
        )));
    }
    Ok(data
        .chunks_exact(MODVERSION_INFO_SIZE)
        .filter_map(|entry| {
            let crc = read_crc_word(entry, word, endian)?;
            let symbol = name_until_nul(&entry[word..]);
            (!symbol.is_empty()).then_some(SymbolVersion { symbol, crc })
        })
        .collect())
}

/// Parses `__version_ext_crcs` and `__version_ext_names`.
pub fn parse_extended_versions(
    crcs: &[u8],
    names: &[u8],
    endian: Endian,
) -> Result<Vec<SymbolVersion>, ElfError> {
    if !crcs.len().is_multiple_of(4) {
        return Err(ElfError::Parse(format!(
            "section __version_ext_crcs is {} bytes, not a multiple of 4",
            crcs.len()
        )));
    }
    let names: Vec<&[u8]> = names.split(|&b| b == 0).filter(|n| !n.is_empty()).collect();
    let count = crcs.len() / 4;
    if names.len() != count {
        return Err(ElfError::Parse(format!(
            "__version_ext_crcs holds {count} CRCs but __version_ext_names {} names",
            names.len()
        )));
    }
    Ok(crcs
        .chunks_exact(4)
        .zip(names)
        .filter_map(|(c, n)| {
            Some(SymbolVersion {
                symbol: String::from_utf8_lossy(n).into_owned(),
                crc: read_u32(c, endian)?,
            })
        })
        .collect())
}

fn word_size(image: &Image<'_>) -> usize {
    if image.ctx.container.is_big() {
        8
    } else {
        4
    }
}

pub(super) fn import_versions_of(image: &Image<'_>) -> Result<ImportVersions, ElfError> {
    let endian = image.ctx.le;
    let ext_crcs = image.find_section("__version_ext_crcs");
    let ext_names = image.find_section("__version_ext_names");
    if let (Some((_, c)), Some((_, n))) = (ext_crcs, ext_names) {
        let crcs = image.section_data(c, "section __version_ext_crcs")?;
        let names = image.section_data(n, "section __version_ext_names")?;
        return Ok(ImportVersions::Versioned {
            table: ImportTable::Extended,
            versions: parse_extended_versions(crcs, names, endian)?,
        });
    }
    match image.find_section("__versions") {
        None => Ok(ImportVersions::Unversioned),
        Some((_, sh)) => {
            let data = image.section_data(sh, "section __versions")?;
            Ok(ImportVersions::Versioned {
                table: ImportTable::Basic,
                versions: parse_versions_section(data, word_size(image), endian)?,
            })
        }
    }
}

pub(super) fn export_crcs_of(image: &Image<'_>) -> Result<ExportCrcs, ElfError> {
    let endian = image.ctx.le;
    let mut crcs = BTreeMap::new();
    let mut absolute = 0usize;
    let mut labelled = 0usize;
    for (name, sym) in image.defined_symbols() {
        let Some(target) = name.strip_prefix(b"__crc_") else {
            continue;
        };
        let target = String::from_utf8_lossy(target).into_owned();
        if sym.st_shndx == section_header::SHN_ABS as usize {
            crcs.insert(target, sym.st_value as u32);
            absolute += 1;
            continue;
        }
        let Some(sh) = image.sections.get(sym.st_shndx) else {
            continue;
        };
        let data = image.section_data(sh, "a CRC table section")?;
        let word = usize::try_from(sym.st_value)
            .ok()
            .and_then(|at| data.get(at..))
            .and_then(|rest| read_u32(rest, endian));
        match word {
            Some(crc) => {
                crcs.insert(target, crc);
                labelled += 1;
            }
            None => {
                return Err(ElfError::Parse(format!(
                    "symbol __crc_{target} points outside its section"
                )))
            }
        }
    }
    let source = match (absolute, labelled) {
        (0, 0) => {
            let by_index = crcs_by_table_index(image)?;
            if by_index.is_empty() {
                ExportCrcSource::None
            } else {
                crcs = by_index;
                ExportCrcSource::TableIndex
            }
        }
        (a, l) if a >= l => ExportCrcSource::AbsoluteSymbols,
        _ => ExportCrcSource::CrcTableLabels,
    };
    Ok(ExportCrcs { source, crcs })
}

/// The kernel's own rule: the CRC of the export in slot `i` of `__ksymtab[_gpl]` is slot `i` of
/// `__kcrctab[_gpl]`. Slots are told from the `__ksymtab_<sym>` labels' offsets.
fn crcs_by_table_index(image: &Image<'_>) -> Result<BTreeMap<String, u32>, ElfError> {
    let endian = image.ctx.le;
    let mut out = BTreeMap::new();
    for (symtab, crctab) in [
        ("__ksymtab", "__kcrctab"),
        ("__ksymtab_gpl", "__kcrctab_gpl"),
    ] {
        let (Some((sym_index, sym_sh)), Some((_, crc_sh))) =
            (image.find_section(symtab), image.find_section(crctab))
        else {
            continue;
        };
        let relocated = [format!(".rela{crctab}"), format!(".rel{crctab}")]
            .iter()
            .any(|r| image.find_section(r).is_some());
        if relocated {
            continue;
        }
        let crc_data = image.section_data(crc_sh, crctab)?;
        let slots = crc_data.len() / 4;
        if slots == 0 || sym_sh.sh_size == 0 || !sym_sh.sh_size.is_multiple_of(slots as u64) {
            continue;
        }
        let entry_size = sym_sh.sh_size / slots as u64;
        for (name, sym) in image.defined_symbols() {
            let Some(target) = name.strip_prefix(b"__ksymtab_") else {
                continue;
            };
            if sym.st_shndx != sym_index || !sym.st_value.is_multiple_of(entry_size) {
                continue;
            }
            let slot = (sym.st_value / entry_size) as usize;
            if let Some(crc) = crc_data.get(slot * 4..).and_then(|b| read_u32(b, endian)) {
                out.insert(String::from_utf8_lossy(target).into_owned(), crc);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(crc: u64, name: &str) -> Vec<u8> {
        let mut e = crc.to_le_bytes().to_vec();
        e.extend_from_slice(name.as_bytes());
        e.resize(MODVERSION_INFO_SIZE, 0);
        e
    }

    #[test]
    fn basic_table_of_64_byte_entries() {
        let mut data = entry(0x1234_abcd, "ib_dma_virt_map_sg");
        data.extend(entry(0xba15_7484, "module_layout"));
        let v = parse_versions_section(&data, 8, Endian::Little).unwrap();
        assert_eq!(
            v,
            vec![
                SymbolVersion {
                    symbol: "ib_dma_virt_map_sg".into(),
                    crc: 0x1234_abcd
                },
                SymbolVersion {
                    symbol: "module_layout".into(),
                    crc: 0xba15_7484
                },
            ]
        );
        let err = parse_versions_section(&data[..100], 8, Endian::Little).unwrap_err();
        assert!(err.to_string().contains("not a multiple"), "{err}");
    }

    #[test]
    fn big_endian_words_keep_the_crc_in_the_low_half() {
        let mut e = vec![0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef];
        e.extend_from_slice(b"printk");
        e.resize(MODVERSION_INFO_SIZE, 0);
        let v = parse_versions_section(&e, 8, Endian::Big).unwrap();
        assert_eq!(v[0].crc, 0xdead_beef);
    }

    #[test]
    fn extended_tables_pair_crcs_with_names() {
        let crcs: Vec<u8> = [0x11u32, 0x22]
            .iter()
            .flat_map(|c| c.to_le_bytes())
            .collect();
        let v = parse_extended_versions(&crcs, b"a_very_long_name\0b\0", Endian::Little).unwrap();
        assert_eq!(v[1].symbol, "b");
        assert_eq!(v[1].crc, 0x22);
        let err = parse_extended_versions(&crcs, b"only_one\0", Endian::Little).unwrap_err();
        assert!(err.to_string().contains("2 CRCs"), "{err}");
    }
}
