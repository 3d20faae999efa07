//! What `collect` does to every file on its way into a bundle: the redaction of mount tables,
//! the policy, kallsyms and process environments. Besides not panicking, an option list never
//! keeps the value of a `password=` option that the input spelled out plainly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::doctor::redact::{redact_file, redact_options};

const PATHS: [&str; 8] = [
    "/etc/fstab",
    "/proc/self/mounts",
    "/proc/self/mountinfo",
    "/proc/self/mountstats",
    "/proc/kallsyms",
    "/etc/nfs-gds/nfs-gds.toml",
    "/proc/1/environ",
    "/etc/os-release",
];

fuzz_target!(|data: &[u8]| {
    for path in PATHS {
        let _ = redact_file(path, data);
    }
    let text = String::from_utf8_lossy(data);
    let list = format!("{text},password=FUZZSECRET");
    let out = redact_options(&list);
    assert!(!out.contains("FUZZSECRET"), "{list:?} kept its password: {out:?}");
});
