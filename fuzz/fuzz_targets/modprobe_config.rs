//! A modprobe configuration file (`/etc/modprobe.d/*.conf`) and the kernel command line's
//! `modprobe.*` parameters, then what `modprobe rpcrdma` would do under them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::modules::modprobe_config::{parse_cmdline_config, parse_modprobe_conf};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_modprobe_conf(&text, "/etc/modprobe.d/fuzz.conf");
    let _ = parse_cmdline_config(&text);
});
