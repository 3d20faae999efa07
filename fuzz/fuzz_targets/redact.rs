//! What `collect` does to every file on its way into a bundle: the redaction of mount tables,
//! the policy, kallsyms, process environments and kernel command lines (`/proc/cmdline` and
//! the boot configuration). Besides not panicking, an option list never keeps the value of a
//! `password=` option that the input spelled out plainly, nor an fstab line one spelt with an
//! octal escape, nor a command line one written as its own word or after `--`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::doctor::redact::{redact, redact_file, redact_options};

const PATHS: [&str; 14] = [
    "/etc/fstab",
    "/proc/self/mounts",
    "/proc/self/mountinfo",
    "/proc/self/mountstats",
    "/proc/kallsyms",
    "/etc/nfs-gds/nfs-gds.toml",
    "/proc/1/environ",
    "/etc/os-release",
    "/proc/cmdline",
    "/boot/grub/grub.cfg",
    "/boot/grub2/grubenv",
    "/etc/default/grub",
    "/boot/loader/entries/x.conf",
    "/etc/kernel/cmdline",
];

fuzz_target!(|data: &[u8]| {
    for path in PATHS {
        let _ = redact_file(path, data);
    }
    let text = String::from_utf8_lossy(data);
    let list = format!("{text},password=FUZZSECRET");
    let out = redact_options(&list);
    assert!(!out.contains("FUZZSECRET"), "{list:?} kept its password: {out:?}");

    if text.contains("FUZZSECRET") {
        return;
    }
    let opts: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let fstab = format!("s /m cifs {opts},pass\\075FUZZSECRET 0 0\n");
    let out = redact("/etc/fstab", &fstab);
    assert!(
        !out.contains("FUZZSECRET"),
        "{fstab:?} kept its password: {out:?}"
    );

    // With its quotes balanced, the text cannot pull the planted word into a quoted one.
    let line: String = text.chars().filter(|c| *c != '\n').collect();
    if line.matches('"').count() % 2 == 0 && !line.ends_with('\\') {
        for (path, planted) in [
            ("/proc/cmdline", format!("{line} password=FUZZSECRET\n")),
            ("/proc/cmdline", format!("{line} -- --token FUZZSECRET\n")),
            (
                "/boot/grub/grub.cfg",
                format!("linux /vmlinuz {line} password=FUZZSECRET\n"),
            ),
            (
                "/boot/loader/entries/x.conf",
                format!("options {line} pw=FUZZSECRET\n"),
            ),
        ] {
            let out = redact(path, &planted);
            assert!(
                !out.contains("FUZZSECRET"),
                "{path}: {planted:?} kept: {out:?}"
            );
        }
    }
});
