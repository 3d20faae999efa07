//! What an OCI runtime hands `nfs-gds oci-hook`: the container state on stdin and the bundle's
//! `config.json` (the same bytes are fed to both parsers, and to the test for a whole value that
//! ends the reading of stdin), then what the hook derives from them:
//! the annotations' GDS marks and their problems (unknown keys, listed paths not mounted), the
//! bind mounts, and their cleaned paths.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::oci::{
    clean_path, config_path, missing_volumes, parse_config, parse_state, unknown_annotations,
    whole_value, Marks, Whole,
};

fuzz_target!(|data: &[u8]| {
    // The hook stops reading stdin at the end of the first whole value.
    if let Whole::Value(end) = whole_value(data) {
        assert!(end <= data.len());
        let _ = parse_state(&data[..end]);
    }
    if let Ok(state) = parse_state(data) {
        let _ = config_path(&state);
        let marks = Marks::of(&state.annotations);
        let _ = marks.any();
        for p in unknown_annotations(state.annotations.keys().map(String::as_str)) {
            let _ = p.to_string();
        }
        let _ = missing_volumes(&marks.volumes, &[]);
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
