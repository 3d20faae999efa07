//! `mount-connections`: the RDMA connections a mount really has (its `xprt: rdma` lines in
//! mountstats, one per connection) are as many as the `nconnect=` it asked for. Before upstream
//! commit b326df4a8ec6 ("NFS: enable nconnect for RDMA", backported to 6.6-stable in November
//! 2025), NFSv4.x clients over RDMA silently used one connection whatever `nconnect` said;
//! NFSv3 was not affected.
//!
//! Such a kernel also keeps no `nconnect=` in the mount's options in `/proc`, so the ask is
//! taken from the strongest source that has it ([`asked_option`]): the helper's own options for
//! the mount it just made, its record of the mount, the `nfs-gds` fstab line, and only then the
//! kernel's list. The message names the source, and says when the kernel dropped the ask.

use crate::checks::asked::{asked_option, Asked};
use crate::checks::check::{Check, Detail, MountSubject, Scope};
use crate::checks::sized::sized;
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::mounts::Mount;

pub const ID: CheckId = CheckId::new("mount-connections");

pub static CHECK: Check = Check {
    id: ID,
    doc: "after mounting: the mount has as many `xprt: rdma` lines (connections) as the `nconnect=` it asked for (the helper's options, its record or the fstab line before /proc, which drops the ask where NFSv4.x over RDMA ignores nconnect: kernels without b326df4a8ec6)",
    scope: Scope::AfterMount(run),
    default_level: Level::Warn,
    waitable: false,
};

/// The commit that lets NFSv4.x use nconnect over RDMA.
pub use crate::host::mounts::nconnect_rdma::COMMIT as NCONNECT_RDMA_COMMIT;

fn run(subject: &MountSubject, detail: Detail) -> CheckResult {
    match *subject {
        MountSubject::Existing { mount, asked, .. } => mount_connections(mount, asked, detail),
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

/// Judges `m` against the `nconnect=` it asked for, from the strongest source of `asked` that
/// names it, else from the kernel's own options ([`asked_option`]).
pub fn mount_connections(m: &Mount, asked: &[Asked], detail: Detail) -> CheckResult {
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
    let ask = asked_option("nconnect", asked, m);
    let wanted = match ask.map(|a| a.value.parse::<usize>()) {
        None => 1,
        Some(Ok(n)) => n.max(1),
        Some(Err(_)) => {
            let a = ask.expect("a value was parsed");
            return CheckResult::unknown(
                id,
                format!("nconnect={} ({}) is not a number", a.value, a.by),
            );
        }
    };
    let at = m.info.mount_point_shown();
    let seen = || sized(32, format_args!("{rdma} `xprt: rdma` line{}", plural(rdma)));
    let asked_word = || match ask {
        Some(a) => format!("nconnect={} asked ({})", a.value, a.by),
        None => "no nconnect asked (1 connection)".to_string(),
    };
    let with_ask = |r: CheckResult| match ask {
        Some(a) if a.dropped_by_kernel() => r
            .with("asked", format!("nconnect={} ({})", a.value, a.by))
            .with("kernel's mount options", "no nconnect="),
        Some(a) => r.with("asked", format!("nconnect={} ({})", a.value, a.by)),
        None => r,
    };
    if rdma >= wanted {
        return detail.pass(id, || {
            with_ask(
                CheckResult::pass(
                    id,
                    sized(
                        160,
                        format_args!(
                            "{at}: {}, {rdma} RDMA connection{} in effect",
                            asked_word(),
                            plural(rdma)
                        ),
                    ),
                )
                .with("mountstats", seen()),
            )
        });
    }
    // A kernel that ignores nconnect also keeps none of it: the ask dropped from /proc is the
    // same kernel's doing, and worth saying, since /proc alone shows nothing wrong.
    let dropped = if ask.is_some_and(|a| a.dropped_by_kernel()) {
        "; the kernel dropped the ask (no nconnect= in its mount options)"
    } else {
        ""
    };
    let version = m
        .option("vers")
        .unwrap_or(if m.is_nfs4() { "4" } else { "3" });
    let asked_word = asked_word();
    let r = CheckResult::warn(
        id,
        if m.is_nfs4() && rdma == 1 {
            format!(
                "{at}: {asked_word}, 1 RDMA connection: this kernel predates NFS-over-RDMA nconnect for v4.x; mount with vers=3 or a kernel with {NCONNECT_RDMA_COMMIT}{dropped}"
            )
        } else {
            format!(
                "{at}: {asked_word}, {rdma} RDMA connection{} in effect: the client made fewer than asked{dropped}",
                plural(rdma)
            )
        },
    )
    .with("mountstats", seen())
    .with("vers", version.to_string());
    let r = with_ask(r);
    if m.is_nfs4() {
        r.remedy(format!("NFSv4.x uses nconnect over RDMA only on kernels with upstream commit {NCONNECT_RDMA_COMMIT} (\"NFS: enable nconnect for RDMA\"; in 6.6-stable since November 2025): mount with vers=3, which honours nconnect over RDMA, or boot a kernel that has it"))
    } else {
        r.remedy("look in the kernel log for RPC/RDMA connection errors (`dmesg | grep -i rpcrdma`): the server or the RDMA device refused the other connections")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::asked::AskedBy;
    use crate::checks::Status;
    use crate::host::mounts::{parse_mountinfo, parse_mountstats, MountTable};

    const XPRT: &str = "\txprt:\trdma 0 0 1 0 0 121 121 0 1096 0 131 1 11 120676 2562 0 0 110132 5 0 0 0 0 66 131 0 0\n";

    fn judge(fstype: &str, opts: &str, xprts: usize) -> CheckResult {
        judge_asked(fstype, opts, xprts, &[])
    }

    fn judge_asked(fstype: &str, opts: &str, xprts: usize, asked: &[Asked]) -> CheckResult {
        let info = format!("1 0 254:0 / / rw - ext4 /dev/vda rw\n40 1 0:50 / /mnt/gds rw - {fstype} 10.0.2.15:/export rw,{opts},addr=10.0.2.15\n");
        let stats = format!(
            "device 10.0.2.15:/export mounted on /mnt/gds with fstype {fstype} statvers=1.1\n\topts:\trw,{opts}\n{}",
            XPRT.repeat(xprts)
        );
        let t = MountTable::join(
            parse_mountinfo(info.as_bytes()).unwrap(),
            parse_mountstats(stats.as_bytes()),
        );
        mount_connections(t.by_id(40).unwrap(), asked, Detail::Full)
    }

    fn evidence<'a>(r: &'a CheckResult, what: &str) -> Option<&'a str> {
        r.evidence
            .iter()
            .find(|e| e.what == what)
            .map(|e| e.seen.as_str())
    }

    /// Linux 6.1 after `vers=4.2,proto=rdma,nconnect=4`: one connection, no `nconnect=` kept.
    const DROPPED: &str = "vers=4.2,proto=rdma,port=20049";

    #[test]
    fn v4_with_one_connection_of_eight_names_the_commit() {
        let r = judge("nfs4", "vers=4.2,nconnect=8,proto=rdma,port=20049", 1);
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert_eq!(r.summary, "/mnt/gds: nconnect=8 asked (the kernel's mount options), 1 RDMA connection: this kernel predates NFS-over-RDMA nconnect for v4.x; mount with vers=3 or a kernel with b326df4a8ec6");
        assert_eq!(evidence(&r, "kernel's mount options"), None);
        assert!(r.remedy.unwrap().contains("vers=3"));
    }

    #[test]
    fn an_ask_the_kernel_dropped_is_judged_from_each_source_and_named() {
        for (asked, by) in [
            (
                Asked::new(AskedBy::Helper, "rw,nconnect=4,vers=4.2,proto=rdma"),
                "mount options",
            ),
            (
                Asked::new(
                    AskedBy::Record,
                    "rw,nconnect=4,vers=4.2,proto=rdma,port=20049",
                ),
                "the helper's record of the mount",
            ),
            (
                Asked::new(AskedBy::Fstab { line: 7 }, "_netdev,vers=4.2,nconnect=4"),
                "fstab line 7",
            ),
        ] {
            let r = judge_asked("nfs4", DROPPED, 1, &[asked]);
            assert_eq!(r.status, Status::Warn, "{r:?}");
            assert_eq!(
                r.summary,
                format!("/mnt/gds: nconnect=4 asked ({by}), 1 RDMA connection: this kernel predates NFS-over-RDMA nconnect for v4.x; mount with vers=3 or a kernel with b326df4a8ec6; the kernel dropped the ask (no nconnect= in its mount options)")
            );
            assert_eq!(
                evidence(&r, "asked"),
                Some(format!("nconnect=4 ({by})").as_str())
            );
            assert_eq!(evidence(&r, "kernel's mount options"), Some("no nconnect="));
        }
        // Without a source above /proc, the same mount shows nothing asked: the blind spot.
        let r = judge("nfs4", DROPPED, 1);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert!(r.summary.contains("no nconnect asked"), "{}", r.summary);
    }

    #[test]
    fn a_kernel_that_keeps_and_honours_the_ask_passes_whoever_asked() {
        // Debian 13's 6.12: four connections and `nconnect=4` shown.
        let asked = [Asked::new(AskedBy::Fstab { line: 2 }, "_netdev,nconnect=4")];
        let r = judge_asked(
            "nfs4",
            "vers=4.2,nconnect=4,proto=rdma,port=20049",
            4,
            &asked,
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(
            r.summary,
            "/mnt/gds: nconnect=4 asked (fstab line 2), 4 RDMA connections in effect"
        );
        assert_eq!(evidence(&r, "kernel's mount options"), None);
        // A source that does not name nconnect leaves it to the kernel's list.
        let asked = [Asked::new(AskedBy::Helper, "rw,vers=4.2,proto=rdma")];
        let r = judge_asked("nfs4", "vers=4.2,nconnect=2,proto=rdma", 1, &asked);
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(
            r.summary
                .contains("nconnect=2 asked (the kernel's mount options)"),
            "{}",
            r.summary
        );
    }

    #[test]
    fn all_connections_in_effect_pass() {
        let r = judge("nfs4", "vers=4.2,nconnect=4,proto=rdma,port=20049", 4);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(
            r.summary,
            "/mnt/gds: nconnect=4 asked (the kernel's mount options), 4 RDMA connections in effect"
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
        assert!(!r.summary.contains("dropped"), "{}", r.summary);
    }

    #[test]
    fn tcp_and_unreadable_counts_are_not_judged() {
        let info = "40 1 0:50 / /mnt/t rw - nfs4 h:/e rw,vers=4.2,proto=tcp\n";
        let stats = "device h:/e mounted on /mnt/t with fstype nfs4 statvers=1.1\n\topts:\trw,vers=4.2,nconnect=4,proto=tcp\n\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0\n";
        let t = MountTable::join(
            parse_mountinfo(info.as_bytes()).unwrap(),
            parse_mountstats(stats.as_bytes()),
        );
        assert_eq!(
            mount_connections(t.by_id(40).unwrap(), &[], Detail::Full).status,
            Status::Skip
        );
        let r = judge("nfs4", "vers=4.2,nconnect=lots,proto=rdma", 1);
        assert_eq!(r.status, Status::Unknown, "{r:?}");
        let asked = [Asked::new(AskedBy::Record, "nconnect=lots")];
        let r = judge_asked("nfs4", DROPPED, 1, &asked);
        assert_eq!(r.status, Status::Unknown, "{r:?}");
        assert!(r.summary.contains("helper's record"), "{}", r.summary);
    }
}
