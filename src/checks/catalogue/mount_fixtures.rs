//! The mount tables the mount checks' unit tests judge: the capture of two real RDMA mounts, and
//! a hand-written node where a TCP mount of the server came first.

use crate::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};
use crate::nfs::ServerHost;

const CAPTURE: &str = include_str!("../../../tests/fixtures/mountstats.txt");

/// mountinfo lines in the order of the captured mountstats.
const CAPTURE_MOUNTINFO: &str = include_str!("../../../tests/fixtures/mountinfo.txt");

/// The captured node: mounts 61 and 62 of 10.0.2.15 over RDMA.
pub fn capture() -> MountTable {
    table(CAPTURE_MOUNTINFO, CAPTURE)
}

pub fn table(mountinfo: &str, mountstats: &str) -> MountTable {
    MountTable::join(
        parse_mountinfo(mountinfo.as_bytes()).unwrap(),
        parse_mountstats(mountstats.as_bytes()),
    )
}

/// `/mnt/tcp` (id 40) over TCP, then `/mnt/gds` (id 41), meant for RDMA, which inherited it.
pub const TCP_FIRST: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/tcp rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
41 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
";
pub const TCP_FIRST_STATS: &str = "\
device /dev/vda mounted on / with fstype ext4
device 10.0.2.15:/export mounted on /mnt/tcp with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp,timeo=600
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.15:/export mounted on /mnt/gds with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp,timeo=600
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
";

pub fn tcp_first() -> MountTable {
    table(TCP_FIRST, TCP_FIRST_STATS)
}

pub fn srv(s: &str) -> ServerHost {
    ServerHost::parse(s).unwrap()
}
