//! `mount-options`: the mount's options carry `proto=rdma|rdma6` and the port it was meant
//! to use.

use std::fmt::Write as _;

use super::nfs_mounts::not_nfs;
use crate::checks::check::{Check, Detail, MountSubject, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::mounts::Mount;

pub const ID: CheckId = CheckId::new("mount-options");

pub static CHECK: Check = Check {
    id: ID,
    doc:
        "after mounting: the mount's options carry `proto=rdma` (or `rdma6`) and the expected port",
    scope: Scope::AfterMount(run),
    default_level: Level::Enforce,
    waitable: false,
};

fn run(subject: &MountSubject, detail: Detail) -> CheckResult {
    match *subject {
        MountSubject::Existing { mount, port, .. } => mount_options(mount, port, detail),
        MountSubject::Planned { .. } => CheckResult::skip(ID, "nothing is mounted yet"),
    }
}

/// The mount's options carry `proto=rdma|rdma6` and the expected port.
pub fn mount_options(m: &Mount, expected_port: u16, detail: Detail) -> CheckResult {
    let id = ID;
    if !m.is_nfs() {
        return not_nfs(id, m);
    }
    let proto = m.option("proto");
    let port_text = m.option("port");
    let port = m.port();
    let vers = m.option("vers");
    // Put together piece by piece: every mount meant for RDMA gets this check each agent pass.
    let seen = || {
        let mut seen = String::with_capacity(64);
        for piece in [
            "proto=",
            proto.unwrap_or("(none)"),
            " port=",
            port_text.unwrap_or("(none)"),
        ] {
            seen.push_str(piece);
        }
        if let Some(vers) = vers {
            seen.push_str(" vers=");
            seen.push_str(vers);
        }
        seen
    };
    let proto_ok = proto.is_some_and(crate::host::mounts::is_rdma_netid);
    let port_ok = port == Some(expected_port);
    if proto_ok && port_ok {
        return detail.pass(id, || {
            let mut summary = String::with_capacity(32);
            summary.push_str("proto=");
            summary.push_str(proto.unwrap_or_default());
            summary.push_str(" on port ");
            // Writing into a String cannot fail.
            let _ = write!(summary, "{expected_port}");
            CheckResult::pass(id, summary).with("options", seen())
        });
    }
    let mut problems = Vec::new();
    if !proto_ok {
        problems.push(format!(
            "proto={} instead of rdma",
            proto.unwrap_or("(none)")
        ));
    }
    if !port_ok {
        problems.push(match port {
            Some(p) => format!("port {p} instead of {expected_port}"),
            None => format!("no port instead of {expected_port}"),
        });
    }
    let remedy = if !proto_ok {
        "the mount did not get RDMA (see mount-transport); by hand, mount with -t nfs-gds, which asks for proto=rdma".to_string()
    } else {
        format!("mount with port={expected_port}, or, if the server listens for RDMA on another port, set `port` in [options] of the policy (or port= in the mount options)")
    };
    CheckResult::fail(
        id,
        format!(
            "the options of {} say {}",
            m.info.mount_point_shown(),
            problems.join(" and ")
        ),
    )
    .with("options", seen())
    .fix(Fix::Mount)
    .remedy(remedy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::catalogue::mount_fixtures::{capture, srv, table, tcp_first};
    use crate::checks::Status;
    use crate::nfs::NfsVersion;

    #[test]
    fn the_captured_rdma_mounts_pass() {
        let t = capture();
        for id in [61, 62] {
            let r = mount_options(t.by_id(id).unwrap(), 20049, Detail::Full);
            says(&r, Status::Pass, &["proto=rdma on port 20049"]);
            assert!(
                seen(&r, "options").starts_with("proto=rdma port=20049"),
                "{r:#?}"
            );
        }
    }

    #[test]
    fn a_mount_that_inherited_tcp_fails_both_options() {
        let t = tcp_first();
        let r = mount_options(t.by_id(41).unwrap(), 20049, Detail::Full);
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.summary
                .contains("proto=tcp instead of rdma and port 2049 instead of 20049"),
            "{}",
            r.summary
        );
        assert_eq!(seen(&r, "options"), "proto=tcp port=(none) vers=4.2");
        assert_eq!(r.fixes, vec![Fix::Mount]);
        assert!(remedy(&r).contains("-t nfs-gds"));
    }

    #[test]
    fn rdma6_passes_and_the_port_must_be_the_expected_one() {
        let info = "50 1 0:50 / /mnt/d rw - nfs4 s:/e rw,vers=4.2,proto=rdma6,port=20049\n";
        let t = table(info, "");
        let m = t.by_id(50).unwrap();
        assert_eq!(mount_options(m, 20049, Detail::Full).status, Status::Pass);
        let r = mount_options(m, 20050, Detail::Full);
        says(&r, Status::Fail, &["port 20049 instead of 20050"]);
        assert!(remedy(&r).starts_with("mount with port=20050"));
    }

    #[test]
    fn the_nfsv4_port_2049_is_implied_when_the_kernel_omits_it() {
        let info = "50 1 0:50 / /mnt/d rw - nfs4 s:/e rw,vers=4.2,proto=rdma\n";
        let t = table(info, "");
        let m = t.by_id(50).unwrap();
        assert_eq!(mount_options(m, 2049, Detail::Full).status, Status::Pass);
        let r = mount_options(m, 20049, Detail::Full);
        assert!(r
            .remedy
            .as_deref()
            .unwrap()
            .starts_with("mount with port=20049"));
        assert!(
            r.summary.contains("port 2049 instead of 20049"),
            "{}",
            r.summary
        );
        // NFSv3 prints any port; none means none.
        let info = "50 1 0:50 / /mnt/d rw - nfs s:/e rw,vers=3,proto=rdma\n";
        let t = table(info, "");
        let r = mount_options(t.by_id(50).unwrap(), 20049, Detail::Full);
        assert!(
            r.summary.contains("no port instead of 20049"),
            "{}",
            r.summary
        );
    }

    #[test]
    fn a_non_nfs_mount_fails_and_nothing_planned_is_judged() {
        let t = table("1 0 254:0 / /mnt/d rw - ext4 /dev/vda rw\n", "");
        let r = mount_options(t.by_id(1).unwrap(), 20049, Detail::Full);
        says(&r, Status::Fail, &["ext4 mount, not NFS"]);
        let planned = MountSubject::Planned {
            server: &srv("s"),
            version: NfsVersion::DEFAULT,
            table: &t,
        };
        says(
            &run(&planned, Detail::Full),
            Status::Skip,
            &["nothing is mounted yet"],
        );
    }
}
