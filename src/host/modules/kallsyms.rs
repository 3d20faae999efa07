//! Symbols the running kernel knows, from `/proc/kallsyms`.
//!
//! Lines are `ADDRESS TYPE NAME[\t[MODULE]]`; addresses read as zero without privilege, which does
//! not matter here. For a module symbol the type letter is upper-case only when the symbol is in
//! the module's `syms` export table (`is_exported()` in `kernel/module/kallsyms.c`). With the
//! split export tables every released kernel uses, that table holds only *non-GPL* exports, so `T`
//! means a plain `EXPORT_SYMBOL` and `t` means a GPL export (or none at all). Kernels with the
//! `__kflagstab` layout (see [`crate::kmod::elf`]) keep every export in that one table, and there
//! `T` means "exported", GPL or not: the letter then says nothing about the license, which
//! [`crate::host::facts::RpcrdmaFacts::kallsyms_shows_license`] accounts for. Symbols are matched
//! whole: `__ksymtab_…`, `__kstrtab_…` and `__crc_…` helpers contain the hook names too.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;
use crate::kmod::elf::versioned_variant_of;

/// One kallsyms line for a symbol we looked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KallsymsEntry {
    pub symbol: String,
    pub type_letter: char,
    /// The `[module]` tag; `None` for symbols of the kernel image itself.
    pub module: Option<String>,
    /// The line as read, for evidence.
    pub line: String,
}

impl KallsymsEntry {
    /// Upper-case type of a module symbol: in the module's `syms` export table, which is the
    /// non-GPL one on kernels with split export tables.
    pub fn plain_export(&self) -> bool {
        self.type_letter.is_ascii_uppercase()
    }
}

/// Finds the kallsyms lines of each wanted symbol (first occurrence of each), in one pass.
pub fn find_symbols(text: &str, wanted: &[&str]) -> Vec<KallsymsEntry> {
    let mut found = Vec::new();
    for line in text.lines() {
        if take_line(line.as_bytes(), wanted, &mut found) {
            break;
        }
    }
    found
}

/// [`find_symbols`] over `/proc/kallsyms` below the root, streamed: the file is 5–20 MB on a
/// distribution kernel (120,000 lines and more), and reading it whole, then converting it to
/// text, cost twice that in memory. Each buffer of whole lines is searched for the wanted names
/// with `memmem` and only the lines that contain one are parsed, so the 99.99 % of lines about
/// other symbols cost a vectorised search, not a split. `Ok(None)` when it does not exist.
pub fn read_symbols(root: &Root, wanted: &[&str]) -> Result<Option<Vec<KallsymsEntry>>, HostError> {
    let mut found = Vec::new();
    // A versioned variant (`rpcrdma_v2_register_nvfs_dma_ops`) holds the name's tail only.
    let tails: Vec<&str> = wanted
        .iter()
        .filter_map(|w| w.find('_').map(|i| &w[i..]))
        .collect();
    let names: Vec<&str> = wanted.iter().copied().chain(tails).collect();
    let read = lines_naming(root, PATH, &names, |line| {
        !take_line(line, wanted, &mut found)
    })?;
    Ok(read.then_some(found))
}

/// Streams a kallsyms file (`rel`, [`PATH`] but for a copy) below the root and hands `each` every line that contains one of
/// `names` (anywhere in it: the `__ksymtab_…` helpers of a name too), once, in file order,
/// without its newline; `each` returns false to stop. Each buffer of whole lines is searched
/// with `memmem`, so the lines about other symbols are never split or converted. `Ok(false)`
/// when the file does not exist.
pub fn lines_naming(
    root: &Root,
    rel: impl AsRef<std::path::Path>,
    names: &[&str],
    mut each: impl FnMut(&[u8]) -> bool,
) -> Result<bool, HostError> {
    let Some(mut lines) = root.read_lines(rel)? else {
        return Ok(false);
    };
    let finders: Vec<memchr::memmem::Finder<'_>> = names
        .iter()
        .map(|w| memchr::memmem::Finder::new(w.as_bytes()))
        .collect();
    while let Some(chunk) = lines.next_lines()? {
        // Lines holding a name, each once, in file order.
        let mut starts: Vec<usize> = finders
            .iter()
            .flat_map(|f| f.find_iter(chunk))
            .map(|at| memchr::memrchr(b'\n', &chunk[..at]).map_or(0, |nl| nl + 1))
            .collect();
        starts.sort_unstable();
        starts.dedup();
        for start in starts {
            let end = memchr::memchr(b'\n', &chunk[start..]).map_or(chunk.len(), |i| start + i);
            if !each(&chunk[start..end]) {
                return Ok(true);
            }
        }
    }
    Ok(true)
}

/// Where kallsyms is, below the root.
pub const PATH: &str = "proc/kallsyms";

/// Adds `line` to `found` when it is the first of a wanted symbol or of a versioned variant of one
/// ([`versioned_variant_of`]); true once every wanted one is found. A stray non-UTF-8 byte (an
/// odd module's symbol) spoils only its own line.
fn take_line(line: &[u8], wanted: &[&str], found: &mut Vec<KallsymsEntry>) -> bool {
    let line = String::from_utf8_lossy(line);
    let mut fields = line.split_whitespace();
    let (Some(_addr), Some(ty), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
        return false;
    };
    let variant = || {
        wanted
            .iter()
            .any(|w| versioned_variant_of(name.as_bytes(), w))
    };
    if !(wanted.contains(&name) || variant()) || found.iter().any(|e| e.symbol == name) {
        return false;
    }
    let module = fields
        .next()
        .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string);
    found.push(KallsymsEntry {
        symbol: name.to_string(),
        type_letter: ty.chars().next().unwrap_or('?'),
        module,
        line: line.trim_end().to_string(),
    });
    found
        .iter()
        .filter(|e| wanted.contains(&e.symbol.as_str()))
        .count()
        == wanted.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOOKS: [&str; 2] = [
        "rpcrdma_register_nvfs_dma_ops",
        "rpcrdma_unregister_nvfs_dma_ops",
    ];

    #[test]
    fn versioned_variants_are_found_but_never_count_as_the_hooks() {
        let text = "0000000000000000 t rpcrdma_v2_register_nvfs_dma_ops\t[rpcrdma]\n\
                    0000000000000000 t nvme_v2_register_nvfs_dma_ops\t[nvme]\n";
        let e = find_symbols(text, &HOOKS);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].symbol, "rpcrdma_v2_register_nvfs_dma_ops");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join(PATH), text).unwrap();
        let streamed = read_symbols(&Root::new(dir.path()), &HOOKS)
            .unwrap()
            .unwrap();
        assert_eq!(streamed, e);
    }

    #[test]
    fn whole_symbols_only() {
        let text = "0000000000000000 r __ksymtab_rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n\
                    0000000000000000 T rpcrdma_register_nvfs_dma_ops\t[rpcrdma]\n\
                    0000000000000000 t rpcrdma_unregister_nvfs_dma_ops\t[rpcrdma]\n";
        let e = find_symbols(text, &HOOKS);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].symbol, HOOKS[0]);
        assert!(e[0].plain_export());
        assert_eq!(e[0].module.as_deref(), Some("rpcrdma"));
        assert!(!e[1].plain_export());
    }

    #[test]
    fn nothing_found_in_a_kernel_without_hooks() {
        let text = "ffffffffc0a00000 t rpcrdma_prepare_send_sges\t[rpcrdma]\n";
        assert!(find_symbols(text, &HOOKS).is_empty());
    }

    #[test]
    fn the_streamed_search_finds_what_the_line_split_finds() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path());
        std::fs::create_dir_all(root.join("proc")).unwrap();
        // Helper symbols that contain the hook names, over several 64 KiB buffers, the hooks
        // last, one of them twice (the first occurrence counts).
        let mut text = String::new();
        for i in 0..6000 {
            text.push_str(&format!(
                "ffffffffc0a{i:05x} t filler_symbol_{i}\t[other]\n"
            ));
            if i % 1000 == 999 {
                text.push_str(&format!(
                    "0000000000000000 r __ksymtab_{}\t[rpcrdma]\n",
                    HOOKS[i % 2]
                ));
            }
        }
        text.push_str(&format!("ffffffffc0b00000 t {}\t[rpcrdma]\n", HOOKS[1]));
        text.push_str(&format!("ffffffffc0b00010 T {}\t[rpcrdma]\n", HOOKS[0]));
        text.push_str(&format!("ffffffffc0b00020 T {}\t[rpcrdma2]", HOOKS[1]));
        std::fs::write(root.join(PATH), &text).unwrap();
        let streamed = read_symbols(&root, &HOOKS).unwrap().unwrap();
        assert_eq!(streamed, find_symbols(&text, &HOOKS));
        assert_eq!(streamed.len(), 2);
        assert_eq!(streamed[0].symbol, HOOKS[1]);
        assert!(!streamed[0].plain_export() && streamed[1].plain_export());
    }

    #[test]
    fn builtin_symbols_have_no_module() {
        let text = "ffffffff81000000 T rpcrdma_register_nvfs_dma_ops\n";
        let e = find_symbols(text, &HOOKS);
        assert_eq!(e[0].module, None);
    }
}
