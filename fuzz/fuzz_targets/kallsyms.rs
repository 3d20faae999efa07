//! `/proc/kallsyms`: the lines of the rpcrdma hooks (address, type letter, name, `[module]`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::modules::kallsyms::find_symbols;
use nfs_gds::kmod::RPCRDMA_HOOKS;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for entry in find_symbols(&text, &RPCRDMA_HOOKS) {
        let _ = entry.plain_export();
    }
});
