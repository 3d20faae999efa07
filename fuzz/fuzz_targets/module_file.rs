//! A module file as `inspect-module` and the checks read it: magic-byte sniffing, the
//! decompressor the magic selects (xz, zstd, gzip, capped at `MODULE_SIZE_CAP`), then the ELF
//! reader (sections, symbols, export tables, `.modinfo`, build id). Plain ELF input also goes
//! through the export lister that `examples/ko-exports.rs` uses.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use nfs_gds::kmod::{elf, inspect_bytes, RPCRDMA_HOOKS};

fuzz_target!(|data: &[u8]| {
    if let Ok(module) = inspect_bytes(Path::new("fuzz.ko"), data, &RPCRDMA_HOOKS) {
        for hook in RPCRDMA_HOOKS {
            let _ = module.symbols.iter().find(|s| s.symbol == hook);
        }
        let _ = module.modinfo.get("vermagic");
    }
    if data.starts_with(b"\x7fELF") {
        let _ = elf::list_exports(data);
    }
});
