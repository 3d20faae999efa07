//! A kernel image (`/boot/vmlinuz-*`) as the GPL-rule check scans it: find a compressed payload
//! (gzip, xz, zstd) or a bare ELF and look for the string that tells whether `__symbol_get`
//! accepts only GPL exports.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::modules::gpl_rule::RULE_TEXT;
use nfs_gds::kmod::image_scan::{scan_bytes, Budget};

fuzz_target!(|data: &[u8]| {
    let _ = scan_bytes(data, RULE_TEXT, Budget::DEFAULT);
});
