//! `/etc/cufile.json`: NVIDIA's JSON with `//` and `/* */` comments, stripped and then parsed
//! for the settings doctor reports (`allow_compat_mode`, RDMA addresses, NFS/RDMA enablement).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::doctor::cufile::{parse_cufile, strip_json_comments};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = strip_json_comments(&text);
    let config = parse_cufile("/etc/cufile.json", &text);
    let _ = config.compat_allowed();
});
