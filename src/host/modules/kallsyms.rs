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
    let mut found: Vec<KallsymsEntry> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(_addr), Some(ty), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if !wanted.contains(&name) || found.iter().any(|e| e.symbol == name) {
            continue;
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
        if found.len() == wanted.len() {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOOKS: [&str; 2] = [
        "rpcrdma_register_nvfs_dma_ops",
        "rpcrdma_unregister_nvfs_dma_ops",
    ];

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
    fn builtin_symbols_have_no_module() {
        let text = "ffffffff81000000 T rpcrdma_register_nvfs_dma_ops\n";
        let e = find_symbols(text, &HOOKS);
        assert_eq!(e[0].module, None);
    }
}
