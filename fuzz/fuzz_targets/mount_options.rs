//! The mount options as mount(8) hands them to the helper: split (quotes keep commas), classify
//! each against the helper's table, and rebuild the string for `mount.nfs` (drop userspace and
//! `gds_*` options, refuse other transports and `bg`, append `vers=,proto=,port=`). The input is
//! `SPEC` and the option string, split at the first NUL; without a NUL the server is fixed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::mount::options::{classify, rebuild, split, OptionDefaults};
use nfs_gds::mount::source::{NfsSource, ServerHost};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (server, options) = match text.split_once('\0') {
        Some((spec, options)) => match NfsSource::parse(spec) {
            Ok(source) => (source.server, options),
            Err(_) => return,
        },
        None => match ServerHost::parse("10.0.2.15") {
            Some(server) => (server, &text[..]),
            None => return,
        },
    };
    for opt in split(options) {
        let _ = classify(&opt);
    }
    if let Ok(rebuilt) = rebuild(options, OptionDefaults::default(), &server) {
        let _ = rebuilt.option_string();
    }
});
