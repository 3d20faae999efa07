//! The check registry: every check nfs-gds knows, each declared once in its own file under
//! [`catalogue`](super::catalogue), and the questions every consumer asks of the list.
//!
//! On the pattern of ripgrep's flag definitions: a [`Check`] declares everything about itself
//! (id, doc line, scope and how to run it, default level, whether waiting can clear it), and the
//! mount helper, `check`, `verify`, `doctor`, the agent, the policy's id validation, the wait and
//! the guide's check table all iterate [`all`]. Adding a check is one catalogue file, the reader its
//! facts need, and a fixture.

use super::asked::Asked;
pub use super::check::{Check, Detail, MountSubject, Scope};
use super::{CheckId, CheckResult};
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::{Mount, MountTable};
use crate::host::HostFacts;
use serde::{Deserialize, Deserializer};

/// Every check, in the order an admin fixes them.
pub fn all() -> &'static [&'static Check] {
    super::catalogue::ALL
}

pub fn find(name: &str) -> Option<&'static Check> {
    all().iter().copied().find(|c| c.id.as_str() == name)
}

/// The registered check of an id (every `CheckId` comes from a registered check).
pub fn get(id: CheckId) -> &'static Check {
    find(id.as_str()).unwrap_or_else(|| unreachable!("{id} is declared by a catalogue file"))
}

pub fn names() -> Vec<&'static str> {
    all().iter().map(|c| c.id.as_str()).collect()
}

/// The node checks, plus the probe when `probe` is set (its outcome must then be in `facts`).
pub fn node_checks(facts: &HostFacts, probe: bool) -> Vec<CheckResult> {
    all()
        .iter()
        .filter(|c| c.is_node() || (probe && matches!(c.scope, Scope::Probe(_))))
        .filter_map(|c| c.run_on_node(facts))
        .collect()
}

/// The mount checks whose scope `wanted` accepts, run on `subject`. The list is made with room
/// for all of them (a result is large, and the agent runs these for every mount it watches).
fn mount_checks(
    subject: &MountSubject,
    detail: Detail,
    wanted: fn(&Scope) -> bool,
) -> Vec<CheckResult> {
    let checks = || all().iter().filter(|c| wanted(&c.scope));
    let mut results = Vec::with_capacity(checks().count());
    results.extend(checks().filter_map(|c| c.run_on_mount(subject, detail)));
    results
}

/// The checks that judge mounts before they are made (the transport trap, what the kernel
/// will do with the options asked).
pub fn before_mount(subject: &MountSubject) -> Vec<CheckResult> {
    mount_checks(subject, Detail::Full, |s| {
        matches!(s, Scope::BeforeMount(_) | Scope::Planned(_))
    })
}

/// The checks the helper runs on the mount it just made; `asked` is what it knows the mount
/// asked for ([`asked_option`](super::asked::asked_option) decides between the sources).
pub fn after_mount(
    mount: &Mount,
    table: &MountTable,
    port: u16,
    asked: &[Asked],
    localio: &MountLocalio,
) -> Vec<CheckResult> {
    let subject = MountSubject::existing(mount, table, port, asked, localio);
    mount_checks(&subject, Detail::Full, |s| {
        matches!(s, Scope::AfterMount(_))
    })
}

/// `nfs-gds verify`: every mount check on an existing mount, the trap included as context,
/// saying as much as `detail` asks.
pub fn verify_mount(
    mount: &Mount,
    table: &MountTable,
    port: u16,
    asked: &[Asked],
    localio: &MountLocalio,
    detail: Detail,
) -> Vec<CheckResult> {
    let subject = MountSubject::existing(mount, table, port, asked, localio);
    mount_checks(&subject, detail, |s| !matches!(s, Scope::Planned(_)))
}

/// An id is parsed only against the registry: it knows every check, so it knows every id.
impl CheckId {
    /// The registered check of that name.
    pub fn parse(s: &str) -> Option<CheckId> {
        find(s).map(|c| c.id)
    }
}

impl<'de> Deserialize<'de> for CheckId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CheckId::parse(&s).ok_or_else(|| {
            let names = names();
            // The closest id by edit distance, when it is close enough to be a misspelling.
            let closest = names
                .iter()
                .map(|n| (strsim::damerau_levenshtein(&s, n), n))
                .min()
                .filter(|(d, n)| *d <= 3.max(n.len() / 4));
            match closest {
                Some((_, n)) => serde::de::Error::custom(format!(
                    "unknown check id `{s}`: did you mean `{n}`? (known: {})",
                    names.join(", ")
                )),
                None => serde::de::Error::custom(format!(
                    "unknown check id `{s}` (known: {})",
                    names.join(", ")
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::mount_fixtures::{capture, table, tcp_first};
    use crate::checks::catalogue::{mount_connections, mount_localio, mount_pnfs, transport_trap};
    use crate::checks::Status;
    use crate::host::mount_localio::MountLocalio;

    /// A kernel without LOCALIO: the mounts here are judged for what else they show.
    fn no_localio() -> MountLocalio {
        MountLocalio::without_localio()
    }

    #[test]
    fn every_check_is_declared_once_with_a_doc_line() {
        let mut seen = std::collections::BTreeSet::new();
        for c in all() {
            assert!(seen.insert(c.id.as_str()), "{} declared twice", c.id);
            assert!(!c.doc.is_empty(), "{} has no doc line", c.id);
            let name = c.id.as_str();
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{name} is not kebab-case"
            );
        }
    }

    #[test]
    fn verify_passes_every_check_on_the_captured_rdma_mounts() {
        let t = capture();
        for id in [61, 62] {
            let m = t.by_id(id).unwrap();
            for r in verify_mount(m, &t, 20049, &[], &no_localio(), Detail::Full) {
                assert_eq!(r.status, Status::Pass, "{r:?}");
            }
        }
    }

    #[test]
    fn verify_puts_the_trap_first_as_context() {
        let t = tcp_first();
        let checks = verify_mount(
            t.by_id(41).unwrap(),
            &t,
            20049,
            &[],
            &no_localio(),
            Detail::Full,
        );
        assert_eq!(checks[0].id, transport_trap::ID);
        assert_eq!(checks[0].status, Status::Fail);
        let ids: Vec<&str> = checks.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "transport-trap",
                "mount-transport",
                "mount-options",
                "mount-connections",
                "mount-pnfs",
                "mount-localio"
            ]
        );
    }

    #[test]
    fn a_non_nfs_mount_fails_both_post_checks() {
        let t = table("1 0 254:0 / /mnt/d rw - ext4 /dev/vda rw\n", "");
        let m = t.by_id(1).unwrap();
        for r in verify_mount(m, &t, 20049, &[], &no_localio(), Detail::Full) {
            match r.id {
                // The advisory checks of the I/O path have nothing to say of a mount that is
                // not NFS.
                transport_trap::ID | mount_connections::ID | mount_pnfs::ID | mount_localio::ID => {
                    assert_eq!(r.status, Status::Skip)
                }
                _ => {
                    assert_eq!(r.status, Status::Fail);
                    assert!(r.summary.contains("ext4 mount, not NFS"), "{}", r.summary);
                }
            }
        }
    }

    /// Mounts of every kind the mount checks tell apart: RDMA on the right and the wrong port,
    /// TCP, UDP, NFSv3, nconnect in effect and not, a pNFS layout, no mountstats record, a
    /// TCP mount of the same server, not NFS.
    const VARIED_INFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/a rw - nfs4 10.0.2.15:/a rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
41 1 0:51 / /mnt/b rw - nfs4 10.0.2.15:/b rw,vers=4.2,proto=rdma,port=2049,addr=10.0.2.15
42 1 0:52 / /mnt/c rw - nfs4 10.0.2.16:/c rw,vers=4.1,proto=rdma,port=20049,nconnect=4,addr=10.0.2.16
43 1 0:53 / /mnt/d rw - nfs 10.0.2.17:/d rw,vers=3,proto=rdma,port=20049,nconnect=2,addr=10.0.2.17
44 1 0:54 / /mnt/e rw - nfs4 10.0.2.18:/e rw,vers=4.2,proto=tcp,addr=10.0.2.18
45 1 0:55 / /mnt/f rw - nfs4 10.0.2.18:/f rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.18
46 1 0:56 / /mnt/g rw - nfs 10.0.2.19:/g rw,vers=3,proto=udp,addr=10.0.2.19
47 1 0:57 / /mnt/h rw - nfs4 10.0.2.20:/h rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
48 1 0:58 / /mnt/i rw - nfs4 10.0.2.21:/i rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.21
";
    const VARIED_STATS: &str = "\
device /dev/vda mounted on / with fstype ext4
device 10.0.2.15:/a mounted on /mnt/a with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=20049
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1
device 10.0.2.15:/b mounted on /mnt/b with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=2049
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1
device 10.0.2.16:/c mounted on /mnt/c with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.1,proto=rdma,port=20049,nconnect=4
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1
device 10.0.2.17:/d mounted on /mnt/d with fstype nfs statvers=1.1
\topts:\trw,vers=3,proto=rdma,port=20049,nconnect=2
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1
device 10.0.2.18:/e mounted on /mnt/e with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.18:/f mounted on /mnt/f with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=20049
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1
device 10.0.2.19:/g mounted on /mnt/g with fstype nfs statvers=1.1
\topts:\trw,vers=3,proto=udp
\txprt:\tudp 0 0 2 0 0 39 39 0 39 0 2 0 0
device 10.0.2.20:/h mounted on /mnt/h with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=20049
\tnfsv4:\tbm0=0xfdffbfff,bm1=0x40f9be3e,bm2=0x60800,acl=0x3,sessions,pnfs=LAYOUT_FLEX_FILES,lease_time=90,lease_expired=0
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 1 1 1
";

    #[test]
    fn saying_only_the_status_gives_every_status_the_full_run_gives() {
        use crate::checks::asked::{Asked, AskedBy};
        let varied = table(VARIED_INFO, VARIED_STATS);
        let asks = [
            vec![],
            vec![Asked::new(
                AskedBy::Fstab { line: 3 },
                "vers=4.2,nconnect=4",
            )],
            vec![Asked::new(AskedBy::Helper, "nconnect=x")],
        ];
        let mut bare_passes = 0;
        for t in [capture(), tcp_first(), varied] {
            for m in &t.mounts {
                for port in [20049, 2049] {
                    for asked in &asks {
                        let full = verify_mount(m, &t, port, asked, &no_localio(), Detail::Full);
                        let bare =
                            verify_mount(m, &t, port, asked, &no_localio(), Detail::StatusOnly);
                        let ids = |r: &[CheckResult]| r.iter().map(|r| r.id).collect::<Vec<_>>();
                        assert_eq!(ids(&full), ids(&bare));
                        for (f, b) in full.iter().zip(&bare) {
                            let at = m.info.mount_point_shown();
                            assert_eq!(f.status, b.status, "{} on {at}: {f:?}", f.id);
                            if f.status == Status::Pass {
                                // A pass says nothing, so saying it costs nothing.
                                assert!(b.summary.is_empty() && b.evidence.is_empty(), "{b:?}");
                                bare_passes += 1;
                            } else {
                                assert_eq!(f, b, "only a pass is said bare");
                            }
                        }
                    }
                }
            }
        }
        assert!(bare_passes > 50, "{bare_passes} passes compared");
    }

    #[test]
    fn checks_that_judge_existing_mounts_are_not_waited_for() {
        for c in all().iter().filter(|c| c.is_mount()) {
            assert!(!c.waitable, "{}", c.id);
        }
    }

    #[test]
    fn ids_round_trip_and_are_unique() {
        for c in all() {
            assert_eq!(CheckId::parse(c.id.as_str()), Some(c.id));
            let json = serde_json::to_string(&c.id).unwrap();
            assert_eq!(json, format!("\"{}\"", c.id));
            assert_eq!(serde_json::from_str::<CheckId>(&json).unwrap(), c.id);
        }
        let mut names = names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all().len());
        let e = serde_json::from_str::<CheckId>("\"no-such\"").unwrap_err();
        assert!(e.to_string().contains("unknown check id `no-such`"), "{e}");
        assert!(!e.to_string().contains("did you mean"), "{e}");
    }

    #[test]
    fn a_misspelt_check_id_gets_the_closest_one() {
        let e = serde_json::from_str::<CheckId>("\"rpcrdma-hook\"").unwrap_err();
        assert!(
            e.to_string().contains("did you mean `rpcrdma-hooks`?"),
            "{e}"
        );
        let e = serde_json::from_str::<CheckId>("\"transprot-trap\"").unwrap_err();
        assert!(
            e.to_string().contains("did you mean `transport-trap`?"),
            "{e}"
        );
    }
}
