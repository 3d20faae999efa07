//! What an OCI runtime hands `nfs-gds oci-hook`: the container state on stdin and the bundle's
//! `config.json` (the same bytes are fed to both parsers, and to the test for a whole value that
//! ends the reading of stdin), then what the hook derives from them:
//! the annotations' GDS marks, the bind mounts, and their cleaned paths.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::oci::{clean_path, config_path, parse_config, parse_state, whole_value, Marks, Whole};

fuzz_target!(|data: &[u8]| {
    // The hook stops reading stdin at the end of the first whole value.
    if let Whole::Value(end) = whole_value(data) {
        assert!(end <= data.len());
        let _ = parse_state(&data[..end]);
    }
    if let Ok(state) = parse_state(data) {
        let _ = config_path(&state);
        let _ = Marks::of(&state.annotations).any();
    }
    if let Ok(config) = parse_config("config.json", data) {
        let marks = Marks::of(&config.annotations);
        for m in config.mounts.iter().filter(|m| m.is_bind()) {
            if let Some(dest) = clean_path(&m.destination) {
                let _ = marks.marks(&dest);
            }
            let _ = m.source.as_deref().map(clean_path);
        }
    }
});
