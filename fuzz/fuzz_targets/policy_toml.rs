//! The policy file `/etc/nfs-gds/nfs-gds.toml`: TOML, then the validation of levels, check ids,
//! per-mount overrides and option defaults, with errors that carry line and column (checked to point into the text).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::policy::file::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = parse(text) {
        // The error points into the file: 1-based, and no further than one past its last line.
        assert!(
            e.line >= 1 && e.column >= 1,
            "position {}:{}",
            e.line,
            e.column
        );
        assert!(
            e.line <= text.lines().count() + 1,
            "line {} of {:?}",
            e.line,
            text
        );
    }
});
