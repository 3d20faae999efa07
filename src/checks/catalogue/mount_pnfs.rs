//! `mount-pnfs`: an NFSv4.1/4.2 mount whose mountstats `nfsv4:` line names a pNFS layout reads
//! and writes through the data servers the layout names, over the transports the layout picks;
//! its `xprt: rdma` lines cover the metadata server only. Advisory: the data path is not in this
//! record.

use crate::checks::check::{Check, Detail, MountSubject, Scope};
use crate::checks::sized::sized;
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::mounts::Mount;

pub const ID: CheckId = CheckId::new("mount-pnfs");

pub static CHECK: Check = Check {
    id: ID,
    doc: "after mounting: the NFSv4.1+ mount uses no pNFS layout, so its `xprt:` lines are the data path (with a layout they cover the metadata server only) (advisory)",
    scope: Scope::AfterMount(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(subject: &MountSubject, detail: Detail) -> CheckResult {
    match *subject {
        MountSubject::Existing { mount, .. } => mount_pnfs(mount, detail),
        MountSubject::Planned { .. } => CheckResult::skip(ID, "nothing is mounted yet"),
    }
}

pub fn mount_pnfs(m: &Mount, detail: Detail) -> CheckResult {
    let id = ID;
    if !m.is_nfs4() {
        return CheckResult::skip(id, "not an NFSv4 mount: no pNFS");
    }
    let Some(stats) = &m.stats else {
        return CheckResult::unknown(id, "the mount has no mountstats record to show its layout");
    };
    match stats.pnfs.as_deref() {
        None => detail.pass(id, || {
            CheckResult::pass(
                id,
                sized(
                    160,
                    format_args!(
                        "{} uses no pNFS layout: its own transports carry its data",
                        m.info.mount_point_shown()
                    ),
                ),
            )
        }),
        Some(layout) => CheckResult::warn(
            id,
            format!(
                "{} uses pNFS ({layout}): `xprt: rdma` covers the metadata server only; the layout picks the data servers' transport and their connections are not in this record",
                m.info.mount_point_shown()
            ),
        )
        .with("mountstats nfsv4", format!("pnfs={layout}"))
        .remedy("check the data servers' transport on the storage side (a flexfiles layout names a netid per data server) or mount without pNFS (`vers=4.0` or `vers=3`) where GPU-direct over RDMA must be certain; `/proc/fs/nfsfs/servers` lists the servers this client talks to"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Status;
    use crate::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};

    fn judge(fstype: &str, nfsv4: Option<&str>) -> CheckResult {
        let vers = if fstype == "nfs" { "3" } else { "4.2" };
        let info = format!(
            "40 1 0:50 / /mnt/gds rw - {fstype} 10.0.2.15:/export rw,vers={vers},proto=rdma\n"
        );
        let mut stats = format!("device 10.0.2.15:/export mounted on /mnt/gds with fstype {fstype} statvers=1.1\n\topts:\trw,vers={vers},proto=rdma,port=20049\n");
        if let Some(l) = nfsv4 {
            stats.push_str(&format!("\tnfsv4:\t{l}\n"));
        }
        stats
            .push_str("\tsec:\tflavor=1,pseudoflavor=1\n\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1\n");
        let t = MountTable::join(
            parse_mountinfo(info.as_bytes()).unwrap(),
            parse_mountstats(stats.as_bytes()),
        );
        mount_pnfs(t.by_id(40).unwrap(), Detail::Full)
    }

    #[test]
    fn a_layout_warns_that_rdma_is_the_metadata_server_only() {
        let r = judge("nfs4", Some("bm0=0xfdffbfff,bm1=0x40fdbe3e,bm2=0x60803,acl=0x3,sessions,pnfs=LAYOUT_FLEX_FILES,lease_time=90,lease_expired=0"));
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(
            r.summary.contains(
                "uses pNFS (LAYOUT_FLEX_FILES): `xprt: rdma` covers the metadata server only"
            ),
            "{}",
            r.summary
        );
        assert_eq!(r.evidence[0].seen, "pnfs=LAYOUT_FLEX_FILES");
    }

    #[test]
    fn no_layout_passes_and_v3_is_not_judged() {
        let r = judge(
            "nfs4",
            Some(
                "bm0=0xfdffbfff,acl=0x3,sessions,pnfs=not configured,lease_time=10,lease_expired=0",
            ),
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(judge("nfs4", None).status, Status::Pass);
        assert_eq!(judge("nfs", None).status, Status::Skip);
    }
}
