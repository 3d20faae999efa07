//! `/proc/self/mountinfo`: the line parser (octal escapes, optional tags, the `-` separator),
//! then what the helper and `verify` ask of the table: the topmost mount at a path, whether a
//! mount point is below the helper's staging area, and a mount's identity found again.
//!
//! The kernel is also the oracle: the input, split at its first NUL, is taken as a mount point
//! and a mount source, escaped as the kernel escapes them (space, tab, newline and backslash as
//! `\ooo`) into an otherwise fixed line, and the parser must give both back byte for byte.
#![no_main]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::mounts::{parse_mountinfo, unescape, MountTable};

/// What `seq_escape(m, s, " \t\n\\")` prints.
fn kernel_escape(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\\') {
            out.extend_from_slice(format!("\\{b:03o}").as_bytes());
        } else {
            out.push(b);
        }
    }
    out
}

fn round_trip(data: &[u8]) {
    let (point, source) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"10.0.2.15:/export"[..]),
    };
    // A mount point is absolute; a source the kernel prints is never empty ("none" at least).
    let mut point = point.to_vec();
    point.insert(0, b'/');
    if source.is_empty() || source.contains(&0) || std::str::from_utf8(source).is_err() {
        return;
    }
    let mut line = b"36 25 0:51 / ".to_vec();
    line.extend(kernel_escape(&point));
    line.extend_from_slice(b" rw,relatime shared:1 - nfs4 ");
    line.extend(kernel_escape(source));
    line.extend_from_slice(b" rw,vers=4.2,proto=rdma,port=20049\n");
    let entries = parse_mountinfo(&line).expect("a line as the kernel prints it parses");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].mount_point(), Path::new(OsStr::from_bytes(&point)));
    assert_eq!(entries[0].source().as_bytes(), source);
    assert_eq!(entries[0].super_option("proto"), Some("rdma"));
}

fuzz_target!(|data: &[u8]| {
    let _ = unescape(data);
    round_trip(data);
    let Ok(entries) = parse_mountinfo(data) else {
        return;
    };
    let points: Vec<_> = entries.iter().map(|e| e.mount_point().to_path_buf()).collect();
    let table = MountTable::join(entries, Vec::new());
    for point in points.iter().take(8) {
        if let Some(m) = table.topmost_at(point) {
            let _ = (m.is_nfs(), m.option("proto"), m.runs_over_rdma());
            let identity = nfs_gds::mount::identity::MountIdentity::of(&m.info);
            assert!(identity.find(&table).is_some(), "a mount's identity finds it");
        }
        let _ = nfs_gds::host::mounts::staged::is_staged(point);
    }
    let _ = nfs_gds::host::mounts::staged::staged_nfs(&table);
    let _ = table.topmost_at(Path::new("/mnt/data"));
});
