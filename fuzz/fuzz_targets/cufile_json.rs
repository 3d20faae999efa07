//! `/etc/cufile.json`: NVIDIA's JSON with `//` and `/* */` comments, stripped and then linted
//! for the settings the checks and doctor report (`allow_compat_mode`). Plain JSON is its own oracle: when
//! serde_json reads the input as it is, stripping comments and trailing commas must change
//! nothing and the setting must be what serde_json finds there.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::platform::cufile_json::{lint, strip_json_comments};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let stripped = strip_json_comments(&text);
    let config = lint("/etc/cufile.json", &text, None);
    let _ = config.compat_allowed();
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
        assert_eq!(stripped, text, "comment stripping changed plain JSON");
        assert_eq!(config.parse_error, None, "plain JSON reported as broken");
        assert_eq!(
            config.allow_compat_mode,
            value
                .pointer("/properties/allow_compat_mode")
                .and_then(|b| b.as_bool())
        );
    }
});
