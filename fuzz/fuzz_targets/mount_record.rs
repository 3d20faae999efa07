//! A mount record of `/run/nfs-gds/mounts/` (JSON the helper wrote, or anyone who could plant a
//! file there), and an `/etc/fstab` as doctor reads its `nfs-gds` lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::doctor::fstab::parse_nfs_gds_entries;
use nfs_gds::mount::record::parse_record;

fuzz_target!(|data: &[u8]| {
    let _ = parse_record(data);
    let _ = parse_nfs_gds_entries(&String::from_utf8_lossy(data));
});
