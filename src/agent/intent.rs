//! Which NFS mounts are meant for RDMA, and why: the agent verifies exactly those.
//!
//! Three ways, strongest first: the helper made and verified the mount (its record in
//! [`crate::mount::record`]); a `[[mount]]` table of the policy names its mount point, its
//! export, or an export above it (`source = "filer:/datasets"` covers csi-driver-nfs's
//! `filer:/datasets/pvc-…` subdirectories, `source = "filer:/"` every export of `filer`); or its
//! options say `proto=rdma|rdma6`. The first two survive the transport trap, which leaves a mount
//! asked for RDMA printing `proto=tcp`.

use std::collections::HashMap;

use crate::host::mounts::{is_rdma_netid, Mount};
use crate::mount::record::MountRecord;
use crate::policy::MountRule;

/// Why a mount is meant for RDMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// `mount.nfs-gds` made and verified it, on this port.
    Recorded { port: u16 },
    /// The `[[mount]]` table with this index (0-based) covers it.
    Policy(usize),
    /// Its options say `proto=rdma` or `rdma6`.
    Options,
}

impl Intent {
    /// The word used in metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Recorded { .. } => "recorded",
            Intent::Policy(_) => "policy",
            Intent::Options => "options",
        }
    }
}

/// Whether the export `source` is `rule` or below it (`srv:/a` covers `srv:/a` and `srv:/a/b`,
/// not `srv:/ab`). Both are compared as written, server included.
fn export_covers(rule: &str, source: &str) -> bool {
    let rule = if rule.ends_with('/') && !rule.ends_with(":/") {
        rule.trim_end_matches('/')
    } else {
        rule
    };
    match source.strip_prefix(rule) {
        Some("") => true,
        Some(rest) => rest.starts_with('/') || rule.ends_with('/'),
        None => false,
    }
}

/// Whether a `[[mount]]` table declares this mount: its target is the mount point, or its
/// source is the export or above it. A table with both needs both.
pub fn rule_covers(rule: &MountRule, m: &Mount) -> bool {
    let target_ok = rule
        .target
        .as_deref()
        .is_none_or(|t| t == m.info.mount_point());
    let source_ok = rule
        .source
        .as_deref()
        .is_none_or(|s| export_covers(s, m.info.source()));
    target_ok && source_ok
}

/// The helper's records, indexed by what identifies a mount (device, source, mount point), so
/// a node with thousands of mounts and records is looked up in constant time per mount.
#[derive(Debug, Default)]
pub struct Records {
    ports: HashMap<(String, String, String), u16>,
}

impl Records {
    pub fn new(records: &[MountRecord]) -> Self {
        Records {
            ports: records
                .iter()
                .map(|r| {
                    (
                        (r.device.clone(), r.source.clone(), r.target.clone()),
                        r.port,
                    )
                })
                .collect(),
        }
    }

    /// The port the helper verified `m` on, if it recorded `m`.
    pub fn port_of(&self, m: &Mount) -> Option<u16> {
        if self.ports.is_empty() {
            return None;
        }
        let probe = MountRecord::of(m, 0);
        self.ports
            .get(&(probe.device, probe.source, probe.target))
            .copied()
    }
}

/// Why `m` is meant for RDMA, or `None` when it is not.
pub fn intent_of(m: &Mount, records: &Records, rules: &[MountRule]) -> Option<Intent> {
    if !m.is_nfs() {
        return None;
    }
    if let Some(port) = records.port_of(m) {
        return Some(Intent::Recorded { port });
    }
    if let Some(i) = rules.iter().position(|r| rule_covers(r, m)) {
        return Some(Intent::Policy(i));
    }
    let asked = m.info.super_option("proto").is_some_and(is_rdma_netid)
        || m.stats
            .as_ref()
            .and_then(|s| s.opt("proto"))
            .is_some_and(is_rdma_netid);
    asked.then_some(Intent::Options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::{parse_mountinfo, MountTable};

    fn mounts(text: &str) -> MountTable {
        MountTable::join(parse_mountinfo(text.as_bytes()).unwrap(), Vec::new())
    }

    const TABLE: &str = "\
30 1 0:40 / /mnt/home rw - nfs4 home:/users rw,vers=4.2,proto=tcp,addr=10.0.0.9
31 1 0:41 / /mnt/gds rw - nfs4 filer:/datasets rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
32 1 0:42 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pvc-1/mount rw - nfs4 filer:/datasets/pvc-1 rw,vers=4.2,proto=tcp,addr=10.0.2.15
33 1 0:43 / /mnt/ab rw - nfs4 filer:/datasetsX rw,vers=4.2,proto=tcp,addr=10.0.2.15
34 1 254:1 / /data rw - ext4 /dev/vdb rw
";

    fn rule(target: Option<&str>, source: Option<&str>) -> MountRule {
        MountRule {
            target: target.map(Into::into),
            source: source.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn exports_cover_themselves_and_what_is_below() {
        assert!(export_covers("filer:/datasets", "filer:/datasets"));
        assert!(export_covers("filer:/datasets", "filer:/datasets/pvc-1"));
        assert!(export_covers("filer:/datasets/", "filer:/datasets/pvc-1"));
        assert!(!export_covers("filer:/datasets", "filer:/datasetsX"));
        assert!(export_covers("filer:/", "filer:/anything"));
        assert!(!export_covers("filer:/", "filer2:/anything"));
    }

    #[test]
    fn options_records_and_policy_each_make_a_mount_meant_for_rdma() {
        let t = mounts(TABLE);
        let m = |id| t.by_id(id).unwrap();
        let none = Records::default();
        // Only the options: the proto=rdma mount.
        let got: Vec<_> = t
            .mounts
            .iter()
            .map(|m| intent_of(m, &Records::default(), &[]))
            .collect();
        assert_eq!(got, [None, Some(Intent::Options), None, None, None]);
        // A rule for the export covers the kubelet mount below it, not a look-alike name.
        let rules = [rule(None, Some("filer:/datasets"))];
        assert_eq!(intent_of(m(32), &none, &rules), Some(Intent::Policy(0)));
        assert_eq!(intent_of(m(33), &none, &rules), None);
        assert_eq!(intent_of(m(31), &none, &rules), Some(Intent::Policy(0)));
        // A record of the helper beats both, and only for its own mount.
        let rec = Records::new(&[MountRecord::of(m(30), 20049)]);
        assert_eq!(
            intent_of(m(30), &rec, &rules),
            Some(Intent::Recorded { port: 20049 })
        );
        assert_eq!(intent_of(m(33), &rec, &rules), None);
        // A target rule; and a non-NFS mount is never meant for RDMA.
        let rules = [rule(Some("/mnt/home"), None), rule(Some("/data"), None)];
        assert_eq!(intent_of(m(30), &none, &rules), Some(Intent::Policy(0)));
        assert_eq!(intent_of(m(34), &none, &rules), None);
        // Both criteria must hold when both are given.
        let rules = [rule(Some("/mnt/home"), Some("filer:/"))];
        assert_eq!(intent_of(m(30), &none, &rules), None);
    }
}
