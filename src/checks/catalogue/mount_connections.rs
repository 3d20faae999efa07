//! `mount-connections`: the RDMA connections a mount really has (its `xprt: rdma` lines in
//! mountstats, one per connection) are as many as the `nconnect=` it asked for. Before upstream
//! commit b326df4a8ec6 ("NFS: enable nconnect for RDMA", backported to 6.6-stable in November
//! 2025), NFSv4.x clients over RDMA silently used one connection whatever `nconnect` said;
//! NFSv3 was not affected.

use crate::checks::check::{Check, MountSubject, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::mounts::Mount;

pub const ID: CheckId = CheckId::new("mount-connections");

pub static CHECK: Check = Check {
    id: ID,
    doc: "after mounting: the mount has as many `xprt: rdma` lines (connections) as the `nconnect=` it asked for (NFSv4.x over RDMA ignores nconnect on kernels without b326df4a8ec6)",
    scope: Scope::AfterMount(run),
    default_level: Level::Warn,
    waitable: false,
};

/// The commit that lets NFSv4.x use nconnect over RDMA.
pub const NCONNECT_RDMA_COMMIT: &str = "b326df4a8ec6";

fn run(subject: &MountSubject) -> CheckResult {
    match *subject {
        MountSubject::Existing { mount, .. } => mount_connections(mount),
        MountSubject::Planned { .. } => CheckResult::skip(ID, "nothing is mounted yet"),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub fn mount_connections(m: &Mount) -> CheckResult {
    let id = ID;
    if !m.is_nfs() {
        return CheckResult::skip(id, "not an NFS mount");
    }
    let xprts = m.stats.as_ref().map(|s| s.xprts.as_slice()).unwrap_or(&[]);
    let rdma = xprts.iter().filter(|x| x.is_rdma()).count();
    if rdma == 0 {
        return CheckResult::skip(
            id,
            "the mount has no RDMA transport in mountstats (mount-transport judges that)",
        );
    }
    let asked_text = m.option("nconnect");
    let asked = match asked_text.map(str::parse::<usize>) {
        None => 1,
        Some(Ok(n)) => n.max(1),
        Some(Err(_)) => {
            return CheckResult::unknown(
                id,
                format!(
                    "nconnect={} is not a number",
                    asked_text.unwrap_or_default()
                ),
            )
        }
    };
    let at = m.info.mount_point_shown();
    let seen = format!("{rdma} `xprt: rdma` line{}", plural(rdma));
    let asked_word = match asked_text {
        Some(n) => format!("nconnect={n} asked"),
        None => "no nconnect asked (1 connection)".to_string(),
    };
    if rdma >= asked {
        return CheckResult::pass(
            id,
            format!(
                "{at}: {asked_word}, {rdma} RDMA connection{} in effect",
                plural(rdma)
            ),
        )
        .with("mountstats", seen);
    }
    let version = m
        .option("vers")
        .unwrap_or(if m.is_nfs4() { "4" } else { "3" });
    let r = CheckResult::warn(
        id,
        if m.is_nfs4() && rdma == 1 {
            format!(
                "{at}: {asked_word}, 1 RDMA connection: this kernel predates NFS-over-RDMA nconnect for v4.x; mount with vers=3 or a kernel with {NCONNECT_RDMA_COMMIT}"
            )
        } else {
            format!(
                "{at}: {asked_word}, {rdma} RDMA connection{} in effect: the client made fewer than asked",
                plural(rdma)
            )
        },
    )
    .with("mountstats", seen)
    .with("vers", version.to_string());
    if m.is_nfs4() {
        r.remedy(format!("NFSv4.x uses nconnect over RDMA only on kernels with upstream commit {NCONNECT_RDMA_COMMIT} (\"NFS: enable nconnect for RDMA\"; in 6.6-stable since November 2025): mount with vers=3, which honours nconnect over RDMA, or boot a kernel that has it"))
    } else {
        r.remedy("look in the kernel log for RPC/RDMA connection errors (`dmesg | grep -i rpcrdma`): the server or the RDMA device refused the other connections")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};

    const XPRT: &str = "\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0\n";

    fn judge(fstype: &str, opts: &str, xprts: usize) -> CheckResult {
        let info = format!("1 0 254:0 / / rw - ext4 /dev/vda rw\n40 1 0:50 / /mnt/gds rw - {fstype} 10.0.2.15:/export rw,{opts},addr=10.0.2.15\n");
        let stats = format!(
            "device 10.0.2.15:/export mounted on /mnt/gds with fstype {fstype} statvers=1.1\n\topts:\trw,{opts}\n{}",
            XPRT.repeat(xprts)
        );
        let t = MountTable::join(
            parse_mountinfo(info.as_bytes()).unwrap(),
            parse_mountstats(stats.as_bytes()),
        );
        mount_connections(t.by_id(40).unwrap())
    }

    #[test]
    fn v4_with_one_connection_of_eight_names_the_commit() {
        let r = judge("nfs4", "vers=4.2,nconnect=8,proto=rdma,port=20049", 1);
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(r.summary.starts_with("/mnt/gds: nconnect=8 asked, 1 RDMA connection: this kernel predates NFS-over-RDMA nconnect for v4.x; mount with vers=3 or a kernel with b326df4a8ec6"), "{}", r.summary);
        assert!(r.remedy.unwrap().contains("vers=3"));
    }

    #[test]
    fn all_connections_in_effect_pass() {
        let r = judge("nfs4", "vers=4.2,nconnect=4,proto=rdma,port=20049", 4);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(
            r.summary,
            "/mnt/gds: nconnect=4 asked, 4 RDMA connections in effect"
        );
        let r = judge("nfs", "vers=3,nconnect=4,proto=rdma,port=20049", 4);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        let r = judge("nfs4", "vers=4.2,proto=rdma,port=20049", 1);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert!(r.summary.starts_with("/mnt/gds: no nconnect asked"));
    }

    #[test]
    fn v3_short_of_connections_is_not_blamed_on_the_v4_rule() {
        let r = judge("nfs", "vers=3,nconnect=4,proto=rdma,port=20049", 2);
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(!r.summary.contains("b326df4a8ec6"), "{}", r.summary);
        assert!(r.summary.contains("2 RDMA connections in effect"));
    }

    #[test]
    fn tcp_and_unreadable_counts_are_not_judged() {
        let info = "40 1 0:50 / /mnt/t rw - nfs4 h:/e rw,vers=4.2,proto=tcp\n";
        let stats = "device h:/e mounted on /mnt/t with fstype nfs4 statvers=1.1\n\topts:\trw,vers=4.2,nconnect=4,proto=tcp\n\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0\n";
        let t = MountTable::join(
            parse_mountinfo(info.as_bytes()).unwrap(),
            parse_mountstats(stats.as_bytes()),
        );
        assert_eq!(mount_connections(t.by_id(40).unwrap()).status, Status::Skip);
        let r = judge("nfs4", "vers=4.2,nconnect=lots,proto=rdma", 1);
        assert_eq!(r.status, Status::Unknown, "{r:?}");
    }
}
