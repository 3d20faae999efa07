//! The kernel and distribution identity: `/etc/os-release`, and the upstream version taken from
//! `/proc/version_signature`, `/proc/version` or the release string. The input is split at the
//! first three NUL bytes into os-release, release, `/proc/version` and the version signature.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::platform::os_release::parse_os_release;
use nfs_gds::host::modules::gpl_rule::{version_has_rule, weigh};
use nfs_gds::host::kernel::KernelInfo;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(4, '\0');
    let os_release = parts.next().unwrap_or_default();
    let os = parse_os_release(os_release);
    let _ = os.family();
    let mut field = || parts.next().map(str::to_string);
    let (release, proc_version, signature) = (field(), field(), field());
    let info = KernelInfo::from_parts(release, proc_version, signature);
    if let Some(v) = info.upstream {
        let _ = version_has_rule(v);
    }
    let _ = weigh(&info, None);
});
