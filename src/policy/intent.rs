//! Which NFS mounts are meant for RDMA, why, and the port each must be on: the one answer the
//! agent, `doctor` and `verify` give for an existing mount.
//!
//! Four ways, strongest first: the helper made and verified the mount (its record, with the
//! port it verified); a `[[mount]]` table of the policy covers it ([`MountRule::matches`]:
//! its mount point, its export, or an export above it); an `nfs-gds` line of fstab mounts it
//! there; or its options say `proto=rdma|rdma6`. The first three survive the transport trap,
//! which leaves a mount asked for RDMA printing `proto=tcp`.
//!
//! The port a mount must be on is the one the helper recorded, else the policy's `[options]`
//! port: never the mount's own `port=`, which would pass every mount on a wrong port.
//!
//! What a mount asked for beyond that (its `nconnect=`) is declared by the same two sources
//! ([`Declared::asked`]: the options of the helper's record, of the fstab line); a `[[mount]]`
//! table sets levels, not mount options, so it declares no ask.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{MountRule, Policy};
use crate::checks::asked::{Asked, AskedBy};
use crate::host::mounts::{is_rdma_netid, Mount};

/// Why a mount is meant for RDMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// `mount.nfs-gds` made and verified it, on this port.
    Recorded { port: u16 },
    /// The `[[mount]]` table with this index (0-based) covers it.
    Policy(usize),
    /// An `nfs-gds` line of fstab mounts it on its mount point.
    Fstab,
    /// Its options say `proto=rdma` or `rdma6`.
    Options,
    /// Nothing of the node declares it, but a container's annotation marks the volume on it
    /// (`nfs-gds/gds`, `nfs-gds/gds-volumes`; decided by [`crate::judge`], the container hook).
    Annotation,
}

impl Intent {
    /// The word used in metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Recorded { .. } => "recorded",
            Intent::Policy(_) => "policy",
            Intent::Fstab => "fstab",
            Intent::Options => "options",
            Intent::Annotation => "annotation",
        }
    }
}

/// What the node itself says about its mounts, beside the policy: the ports and options the
/// helper recorded, indexed by what identifies a mount (device, source, mount point) so
/// thousands of mounts are looked up in constant time each, and the `nfs-gds` fstab lines by
/// mount point.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    records: HashMap<(String, String, String), Recorded>,
    fstab: HashMap<PathBuf, FstabLine>,
}

/// What the helper recorded of one mount.
#[derive(Debug, Clone)]
struct Recorded {
    port: u16,
    /// The options it passed to mount.nfs (empty in records older than the field).
    options: String,
}

/// An `nfs-gds` fstab line: its number and options.
#[derive(Debug, Clone)]
struct FstabLine {
    line: usize,
    options: String,
}

/// How a mount is named in [`Declared`]: device, source, mount point (lossy, as recorded).
fn key_of(m: &Mount) -> (String, String, String) {
    (
        m.info.device_number().to_string(),
        m.info.source().to_string(),
        m.info.mount_point().to_string_lossy().into_owned(),
    )
}

impl Declared {
    /// That the helper verified the mount of `source` with device `device` on `target` on
    /// `port`, having passed `options` to mount.nfs.
    pub fn record(&mut self, device: &str, source: &str, target: &str, port: u16, options: &str) {
        self.records.insert(
            (device.into(), source.into(), target.into()),
            Recorded {
                port,
                options: options.into(),
            },
        );
    }

    /// That line `line` of fstab mounts something on `target` as `nfs-gds` with `options`.
    pub fn fstab_line(&mut self, target: impl Into<PathBuf>, line: usize, options: &str) {
        self.fstab.insert(
            target.into(),
            FstabLine {
                line,
                options: options.into(),
            },
        );
    }

    fn recorded(&self, m: &Mount) -> Option<&Recorded> {
        if self.records.is_empty() {
            return None;
        }
        self.records.get(&key_of(m))
    }

    /// The port the helper verified `m` on, if it recorded `m`.
    pub fn recorded_port(&self, m: &Mount) -> Option<u16> {
        self.recorded(m).map(|r| r.port)
    }

    fn fstab_of(&self, mount_point: &Path) -> Option<&FstabLine> {
        if self.fstab.is_empty() {
            return None;
        }
        self.fstab.get(mount_point)
    }

    /// What the node declares `m` asked for: the options of the helper's record of it and of
    /// the fstab line of its mount point, for [`asked_option`](crate::checks::asked::asked_option)
    /// to decide between (with the kernel's own list last).
    pub fn asked(&self, m: &Mount) -> Vec<Asked> {
        let record = self
            .recorded(m)
            .map(|r| Asked::new(AskedBy::Record, r.options.as_str()));
        let fstab = self
            .fstab_of(m.info.mount_point())
            .map(|f| Asked::new(AskedBy::Fstab { line: f.line }, f.options.as_str()));
        record.into_iter().chain(fstab).collect()
    }
}

/// Why `m` is meant for RDMA, or `None` when it is not.
pub fn intent_of(m: &Mount, declared: &Declared, rules: &[MountRule]) -> Option<Intent> {
    if !m.is_nfs() {
        return None;
    }
    if let Some(port) = declared.recorded_port(m) {
        return Some(Intent::Recorded { port });
    }
    if let Some(i) = rules
        .iter()
        .position(|r| r.matches(m.info.mount_point(), m.info.source()))
    {
        return Some(Intent::Policy(i));
    }
    if declared.fstab_of(m.info.mount_point()).is_some() {
        return Some(Intent::Fstab);
    }
    let asked = m.info.super_option("proto").is_some_and(is_rdma_netid)
        || m.stats
            .as_ref()
            .and_then(|s| s.opt("proto"))
            .is_some_and(is_rdma_netid);
    asked.then_some(Intent::Options)
}

/// The port an existing mount must be on: the one the helper recorded for it, else the
/// policy's `[options]` port.
pub fn expected_port(m: &Mount, declared: &Declared, policy: &Policy) -> u16 {
    declared.recorded_port(m).unwrap_or(policy.options.port)
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
31 1 0:41 / /mnt/gds rw - nfs4 filer:/datasets rw,vers=4.2,proto=rdma,port=20050,addr=10.0.2.15
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
    fn records_policy_fstab_and_options_each_make_a_mount_meant_for_rdma() {
        let t = mounts(TABLE);
        let m = |id| t.by_id(id).unwrap();
        let none = Declared::default();
        // Only the options: the proto=rdma mount.
        let got: Vec<_> = t.mounts.iter().map(|m| intent_of(m, &none, &[])).collect();
        assert_eq!(got, [None, Some(Intent::Options), None, None, None]);
        // A rule for the export covers the kubelet mount below it, not a look-alike name.
        let rules = [rule(None, Some("filer:/datasets"))];
        assert_eq!(intent_of(m(32), &none, &rules), Some(Intent::Policy(0)));
        assert_eq!(intent_of(m(33), &none, &rules), None);
        assert_eq!(intent_of(m(31), &none, &rules), Some(Intent::Policy(0)));
        // A record of the helper beats both, and only for its own mount.
        let mut rec = Declared::default();
        rec.record("0:40", "home:/users", "/mnt/home", 20049, "");
        assert_eq!(
            intent_of(m(30), &rec, &rules),
            Some(Intent::Recorded { port: 20049 })
        );
        assert_eq!(intent_of(m(33), &rec, &rules), None);
        // An fstab line for the mount point, and nothing else.
        let mut fstab = Declared::default();
        fstab.fstab_line("/mnt/ab", 4, "_netdev");
        assert_eq!(intent_of(m(33), &fstab, &[]), Some(Intent::Fstab));
        assert_eq!(intent_of(m(30), &fstab, &[]), None);
        // A target rule; and a non-NFS mount is never meant for RDMA.
        let rules = [rule(Some("/mnt/home"), None), rule(Some("/data"), None)];
        assert_eq!(intent_of(m(30), &none, &rules), Some(Intent::Policy(0)));
        assert_eq!(intent_of(m(34), &none, &rules), None);
        // Both criteria must hold when both are given.
        let rules = [rule(Some("/mnt/home"), Some("filer:/"))];
        assert_eq!(intent_of(m(30), &none, &rules), None);
    }

    #[test]
    fn the_expected_port_is_the_recorded_one_else_the_policys_never_the_mounts_own() {
        let t = mounts(TABLE);
        let gds = t.by_id(31).unwrap();
        let policy = Policy::default();
        // The mount says port=20050; the policy wants 20049.
        assert_eq!(expected_port(gds, &Declared::default(), &policy), 20049);
        let mut rec = Declared::default();
        rec.record("0:41", "filer:/datasets", "/mnt/gds", 20050, "");
        assert_eq!(expected_port(gds, &rec, &policy), 20050);
        // A record of another mount on the same point says nothing about this one.
        let mut other = Declared::default();
        other.record("0:99", "filer:/datasets", "/mnt/gds", 20050, "");
        assert_eq!(expected_port(gds, &other, &policy), 20049);
    }
}
