//! The check registry: every check nfs-gds knows, each declared once in its own file under
//! [`catalogue`](super::catalogue), and the questions every consumer asks of the list.
//!
//! On the pattern of ripgrep's flag definitions: a [`Check`] declares everything about itself
//! (id, doc line, scope and how to run it, default level, whether waiting can clear it), and the
//! mount helper, `check`, `verify`, `doctor`, the agent, the policy's id validation, the wait and
//! the README table all iterate [`all`]. Adding a check is one catalogue file, the reader its
//! facts need, and a fixture.

use super::asked::Asked;
pub use super::check::{Check, MountSubject, Scope};
use super::{CheckId, CheckResult};
use crate::host::mounts::{Mount, MountTable};
use crate::host::HostFacts;

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
fn mount_checks(subject: &MountSubject, wanted: fn(&Scope) -> bool) -> Vec<CheckResult> {
    let checks = || all().iter().filter(|c| wanted(&c.scope));
    let mut results = Vec::with_capacity(checks().count());
    results.extend(checks().filter_map(|c| c.run_on_mount(subject)));
    results
}

/// The checks that judge mounts before they are made (the transport trap).
pub fn before_mount(subject: &MountSubject) -> Vec<CheckResult> {
    mount_checks(subject, |s| matches!(s, Scope::BeforeMount(_)))
}

/// The checks the helper runs on the mount it just made; `asked` is what it knows the mount
/// asked for ([`asked_option`](super::asked::asked_option) decides between the sources).
pub fn after_mount(
    mount: &Mount,
    table: &MountTable,
    port: u16,
    asked: &[Asked],
) -> Vec<CheckResult> {
    let subject = MountSubject::existing(mount, table, port, asked);
    mount_checks(&subject, |s| matches!(s, Scope::AfterMount(_)))
}

/// `nfs-gds verify`: every mount check on an existing mount, the trap included as context.
pub fn verify_mount(
    mount: &Mount,
    table: &MountTable,
    port: u16,
    asked: &[Asked],
) -> Vec<CheckResult> {
    mount_checks(&MountSubject::existing(mount, table, port, asked), |_| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::mount_fixtures::{capture, table, tcp_first};
    use crate::checks::catalogue::{mount_connections, mount_pnfs, transport_trap};
    use crate::checks::Status;

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
            for r in verify_mount(m, &t, 20049, &[]) {
                assert_eq!(r.status, Status::Pass, "{r:?}");
            }
        }
    }

    #[test]
    fn verify_puts_the_trap_first_as_context() {
        let t = tcp_first();
        let checks = verify_mount(t.by_id(41).unwrap(), &t, 20049, &[]);
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
                "mount-pnfs"
            ]
        );
    }

    #[test]
    fn a_non_nfs_mount_fails_both_post_checks() {
        let t = table("1 0 254:0 / /mnt/d rw - ext4 /dev/vda rw\n", "");
        let m = t.by_id(1).unwrap();
        for r in verify_mount(m, &t, 20049, &[]) {
            match r.id {
                // The advisory checks of the I/O path have nothing to say of a mount that is
                // not NFS.
                transport_trap::ID | mount_connections::ID | mount_pnfs::ID => {
                    assert_eq!(r.status, Status::Skip)
                }
                _ => {
                    assert_eq!(r.status, Status::Fail);
                    assert!(r.summary.contains("ext4 mount, not NFS"), "{}", r.summary);
                }
            }
        }
    }

    #[test]
    fn checks_that_judge_existing_mounts_are_not_waited_for() {
        for c in all().iter().filter(|c| c.is_mount()) {
            assert!(!c.waitable, "{}", c.id);
        }
    }
}
