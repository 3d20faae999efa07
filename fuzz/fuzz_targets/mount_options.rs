//! The mount options as mount(8) hands them to the helper: split (quotes keep commas), classify
//! each against the helper's table, and rebuild the string for `mount.nfs` (drop userspace and
//! `gds_*` options, refuse other transports and `bg`, append `vers=,proto=,port=`). The input is
//! `SPEC` and the option string, split at the first NUL; without a NUL the server is fixed.
//!
//! Beyond not panicking, a rebuilt string must keep the helper's promises: `mount.nfs` splits
//! it into exactly the options the helper meant (it splits on commas outside double quotes, as
//! `split` does), none of them is one the helper drops or refuses, and a new mount ends with
//! the transport options the helper appends.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::mount::options::{classify, rebuild, split, Kind};
use nfs_gds::nfs::OptionDefaults;
use nfs_gds::nfs::{NfsSource, ServerHost};

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
    let Ok(rebuilt) = rebuild(options, OptionDefaults::default(), &server) else {
        return;
    };
    let sent = rebuilt.option_string();
    assert_eq!(split(&sent), rebuilt.options, "{options:?} became {sent:?}");
    for opt in &rebuilt.options {
        let kind = classify(opt);
        assert!(
            !matches!(
                kind,
                Kind::GdsPolicy
                    | Kind::GdsWait
                    | Kind::GdsUnknown
                    | Kind::Userspace
                    | Kind::OtherTransport
                    | Kind::MountProtoRdma
                    | Kind::Background
            ),
            "{opt:?} ({kind:?}) reaches mount.nfs from {options:?}"
        );
    }
    if !rebuilt.remount {
        let mut appended = vec![
            format!("vers={}", rebuilt.version),
            format!("proto={}", rebuilt.netid),
        ];
        // A `port=` the user wrote is kept where it was; otherwise the default is appended.
        let user_port = split(options).iter().any(|o| o.starts_with("port="));
        if !user_port {
            appended.push(format!("port={}", rebuilt.port));
        }
        assert!(
            rebuilt.options.ends_with(&appended),
            "{sent:?} does not end with {appended:?}"
        );
    }
});
