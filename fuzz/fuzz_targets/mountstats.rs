//! `/proc/self/mountstats`: the `device … mounted on … with fstype …` records and their `xprt:`
//! lines, joined with a mountinfo table as `verify` does, then asked whether each mount runs
//! over RDMA. The input is mountstats; a fixed mountinfo line gives the join a partner.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};

const MOUNTINFO: &[u8] = b"40 1 0:50 / /mnt/data rw,relatime shared:1 - nfs4 10.0.2.15:/export rw,vers=4.2,proto=rdma,port=20049\n";

fuzz_target!(|data: &[u8]| {
    let stats = parse_mountstats(data);
    for record in &stats {
        let _ = (record.opt("proto"), record.opt("port"));
        for xprt in &record.stats.xprts {
            let _ = xprt.is_rdma();
        }
    }
    let infos = parse_mountinfo(MOUNTINFO).expect("the fixed mountinfo line parses");
    let table = MountTable::join(infos, stats);
    for m in &table.mounts {
        let _ = (m.transports(), m.runs_over_rdma(), m.is_nfs4());
    }
});
