//! `/proc/self/mountinfo`: the line parser (octal escapes, optional tags, the `-` separator),
//! then what the helper and `verify` ask of the table: the topmost mount at a path, and which
//! mount is new between two tables.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::mounts::{parse_mountinfo, unescape, MountTable};

fuzz_target!(|data: &[u8]| {
    let _ = unescape(data);
    let Ok(entries) = parse_mountinfo(data) else {
        return;
    };
    let points: Vec<_> = entries.iter().map(|e| e.mount_point.clone()).collect();
    let table = MountTable::join(entries, Vec::new());
    let empty = MountTable::join(Vec::new(), Vec::new());
    for point in points.iter().take(8) {
        if let Some(m) = table.topmost_at(point) {
            let _ = (m.is_nfs(), m.option("proto"), m.runs_over_rdma());
        }
        let _ = table.new_since(&empty, point);
    }
    let _ = table.topmost_at(Path::new("/mnt/data"));
});
