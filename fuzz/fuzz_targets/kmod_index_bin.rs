//! depmod's binary indexes (`modules.dep.bin`, `modules.alias.bin`, `modules.symbols.bin`,
//! `modules.builtin.bin`) as `kmod::index` reads them in place: the header, then the lookups the
//! checks make — an exact key, every value of a key, and a wildcard walk of the alias patterns.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::kmod::fnmatch::fnmatch;
use nfs_gds::kmod::index::Index;

fuzz_target!(|data: &[u8]| {
    if let Ok(index) = Index::open(data) {
        for key in ["rpcrdma", "xprtrdma", "symbol:rpcrdma_register_nvfs_dma_ops", ""] {
            let _ = index.lookup(key);
            let _ = index.lookup_all(key);
        }
        let _ = index.lookup_wild("pci:v000015B3d0000101Bsv000015B3sd00000008bc02sc00i00");
        let _ = index.lookup_wild("rpcrdma");
    }
    // The matcher the wildcard walk uses, on the input split at its first NUL.
    if let Some(nul) = data.iter().position(|b| *b == 0) {
        let _ = fnmatch(&data[..nul], &data[nul + 1..]);
    }
});
