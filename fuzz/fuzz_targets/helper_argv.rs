//! The helper's argv as mount(8) passes it (`SPEC DIR [-sfnv] [-N NS] [-o OPTS] [-t TYPE]`,
//! combined and attached flags, `--`), then the request built from it: SPEC parsed as an NFS
//! source and the joined `-o` string rebuilt for `mount.nfs`. Arguments are NUL-separated and
//! may hold bytes that are not UTF-8, as a real argv may.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use libfuzzer_sys::fuzz_target;
use nfs_gds::mount::args::{parse, Parsed};
use nfs_gds::mount::options::rebuild;
use nfs_gds::nfs::NfsSource;
use nfs_gds::nfs::OptionDefaults;

fuzz_target!(|data: &[u8]| {
    let argv: Vec<OsString> = data
        .split(|b| *b == 0)
        .map(|arg| OsString::from_vec(arg.to_vec()))
        .collect();
    let Ok(Parsed::Run(args)) = parse(&argv) else {
        return;
    };
    let Some(spec) = args.spec.to_str() else {
        return;
    };
    let Ok(source) = NfsSource::parse(spec) else {
        return;
    };
    let _ = rebuild(
        &args.option_string(),
        OptionDefaults::default(),
        &source.server,
    );
});
