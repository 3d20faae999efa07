//! Mount tables as text: a node's table before any NFS mount, and the mountinfo line and
//! mountstats record of an NFSv4 mount of `10.0.2.15:/export` over TCP or RDMA, shaped like the
//! VM capture. Shared by the crate's unit tests and the integration tests, like `tree.rs`.

/// mountinfo with `/` and `/proc` only.
pub const BEFORE: &str = "\
1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
21 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
";

/// mountstats of [`BEFORE`].
pub const BEFORE_STATS: &str = "\
device /dev/vda mounted on / with fstype ext4
device proc mounted on /proc with fstype proc
";

/// A mountinfo line of an NFSv4 mount of 10.0.2.15:/export.
pub fn nfs_info(id: u32, target: &str, proto: &str) -> String {
    let port = if proto == "tcp" { "" } else { ",port=20049" };
    format!("{id} 1 0:50 / {target} rw,relatime shared:40 - nfs4 10.0.2.15:/export rw,vers=4.2,rsize=262144,wsize=262144,namlen=255,hard,proto={proto}{port},timeo=600,retrans=2,sec=sys,clientaddr=10.0.2.15,local_lock=none,addr=10.0.2.15\n")
}

/// Its mountstats record.
pub fn nfs_stats(target: &str, proto: &str) -> String {
    let port = if proto == "tcp" { "" } else { ",port=20049" };
    let xprt = if proto == "tcp" {
        "tcp 0 0 2 0 0 39 39 0 39 0 2 0 0"
    } else {
        "rdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0"
    };
    format!(
        "device 10.0.2.15:/export mounted on {target} with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,rsize=262144,wsize=262144,namlen=255,acregmin=3,acregmax=60,acdirmin=30,acdirmax=60,hard,proto={proto}{port},timeo=600,retrans=2,sec=sys,clientaddr=10.0.2.15,local_lock=none\n\
\tage:\t1\n\
\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n\
\txprt:\t{xprt}\n\
\tper-op statistics\n\
\t        NULL: 1 1 0 40 24 43 4 49 0\n\n"
    )
}

/// [`BEFORE`] and [`BEFORE_STATS`] with one NFS mount added.
pub fn with_mount(id: u32, target: &str, proto: &str) -> (String, String) {
    (
        format!("{BEFORE}{}", nfs_info(id, target, proto)),
        format!("{BEFORE_STATS}{}", nfs_stats(target, proto)),
    )
}
