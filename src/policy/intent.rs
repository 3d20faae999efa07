//! Which NFS mounts are meant for RDMA, why, and the port each must be on: the one answer the
//! agent, `doctor` and `verify` give for an existing mount.
//!
//! Four ways, strongest first: the helper made and verified the mount (its record, with the
//! port it verified); a `[[mount]]` table of the policy covers it ([`rule_of`]: its mount
//! point, its export or an export above it, by the export the helper recorded it was asked for,
//! or by the export the kernel shows, compared by server identity); an `nfs-gds` line of fstab
//! mounts it there; or its options say `proto=rdma|rdma6`. The first three survive the
//! transport trap, which leaves a mount asked for RDMA printing `proto=tcp`.
//!
//! The port a mount must be on is the one the helper recorded, else the policy's `[options]`
//! port: never the mount's own `port=`, which would pass every mount on a wrong port.
//!
//! What a mount asked for beyond that (its `nconnect=`) is declared by the same two sources
//! ([`Declared::asked`]: the options of the helper's record, of the fstab line); a `[[mount]]`
//! table sets levels, not mount options, so it declares no ask.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::MountRule;
use crate::checks::asked::{Asked, AskedBy};
use crate::host::mounts::fstab::{read_fstab, FstabEntry};
use crate::host::mounts::records::{read_records, MountRecord};
use crate::host::mounts::{is_rdma_netid, Mount};
use crate::host::{HostError, Root};
use crate::nfs::{ServerAddrs, ShownExport};

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
    /// The `nfs-gds` lines of fstab as read, in file order.
    entries: Vec<FstabEntry>,
}

/// What the helper recorded of one mount.
#[derive(Debug, Clone)]
struct Recorded {
    port: u16,
    /// The export the helper was asked to mount (empty in records older than the field): the
    /// kernel may show the mount under another name.
    spec: String,
    /// The options it passed to mount.nfs (empty in records older than the field).
    options: String,
}

/// One mount the helper recorded, as [`Declared::record`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct RecordedMount<'a> {
    pub device: &'a str,
    /// The source as the kernel showed it.
    pub source: &'a str,
    pub target: &'a str,
    pub port: u16,
    /// The export the helper was asked for ("" when the record predates the field).
    pub spec: &'a str,
    pub options: &'a str,
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
    /// That the helper verified the mount shown as `source` with device `device` on `target`
    /// on `port`, having been asked for `spec` and passed `options` to mount.nfs.
    pub fn record(&mut self, mount: RecordedMount) {
        self.records.insert(
            (
                mount.device.into(),
                mount.source.into(),
                mount.target.into(),
            ),
            Recorded {
                port: mount.port,
                spec: mount.spec.into(),
                options: mount.options.into(),
            },
        );
    }

    /// Whether the node declares any mount for GDS: a mount the helper recorded, or an
    /// `nfs-gds` line of fstab (mounted now or not).
    pub fn declares_any(&self) -> bool {
        !self.records.is_empty() || !self.fstab.is_empty()
    }

    /// The `nfs-gds` lines of fstab as read, in file order.
    pub fn fstab_entries(&self) -> &[FstabEntry] {
        &self.entries
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

/// The records as declarations.
pub fn of_records(records: &[MountRecord]) -> Declared {
    let mut d = Declared::default();
    for r in records {
        d.record(RecordedMount {
            device: &r.device,
            source: &r.source,
            target: &r.target,
            port: r.port,
            spec: &r.spec,
            options: &r.options,
        });
    }
    d
}

/// What the node declares below the root: the helper's records and the `nfs-gds` lines of
/// `/etc/fstab`, the one reader every command asks (the helper's remount path, `verify`, the
/// agent, the gates). A record that cannot be used is logged and left out (it never stops a
/// command); so is an fstab that cannot be read.
pub fn read_declared(root: &Root) -> Result<Declared, HostError> {
    let fstab = read_fstab(root).unwrap_or_else(|e| {
        tracing::warn!("{e}");
        Vec::new()
    });
    declared_with(root, fstab)
}

/// [`read_declared`] for `doctor` and `collect`, which judge the fstab lines themselves: an
/// fstab that cannot be read is their error.
pub fn read_declared_strict(root: &Root) -> Result<Declared, HostError> {
    declared_with(root, read_fstab(root)?)
}

fn declared_with(root: &Root, fstab: Vec<FstabEntry>) -> Result<Declared, HostError> {
    let (records, bad) = read_records(root)?;
    for b in &bad {
        tracing::warn!("ignoring mount record {}: {}", b.path.display(), b.reason);
    }
    let mut d = of_records(&records);
    for e in &fstab {
        d.fstab_line(e.target.clone(), e.line, &e.options.join(","));
    }
    d.entries = fstab;
    Ok(d)
}

/// The `[[mount]]` table that covers `m`, if any: the one answer for every command about an
/// existing mount. The export the helper recorded it was asked for is the first evidence (the
/// kernel may show the mount under a shared superblock's first name), then the export the
/// kernel shows, by server identity ([`MountRule::matches`]).
pub fn rule_of(
    m: &Mount,
    declared: &Declared,
    rules: &[MountRule],
    addrs: &ServerAddrs,
) -> Option<usize> {
    if rules.is_empty() {
        return None;
    }
    let asked = declared
        .recorded(m)
        .map(|r| r.spec.as_str())
        .filter(|s| !s.is_empty());
    let point = m.info.mount_point();
    rules.iter().position(|r| {
        asked.is_some_and(|spec| r.matches(point, ShownExport::written(spec), addrs))
            || r.matches(point, m.shown_export(), addrs)
    })
}

/// Why `m` is meant for RDMA, or `None` when it is not.
pub fn intent_of(
    m: &Mount,
    declared: &Declared,
    rules: &[MountRule],
    addrs: &ServerAddrs,
) -> Option<Intent> {
    if !m.is_nfs() {
        return None;
    }
    if let Some(port) = declared.recorded_port(m) {
        return Some(Intent::Recorded { port });
    }
    if let Some(i) = rule_of(m, declared, rules, addrs) {
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

/// The port an existing mount must be on: the one the helper recorded for it, else
/// `configured` (the policy's `[options]` port; for the helper, the port its request carries,
/// which is that port unless `-o port=` named another).
pub fn expected_port(m: &Mount, declared: &Declared, configured: u16) -> u16 {
    declared.recorded_port(m).unwrap_or(configured)
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

    fn recorded<'a>(
        device: &'a str,
        source: &'a str,
        target: &'a str,
        port: u16,
    ) -> RecordedMount<'a> {
        RecordedMount {
            device,
            source,
            target,
            port,
            spec: "",
            options: "",
        }
    }

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
        let addrs = ServerAddrs::blind();
        // Only the options: the proto=rdma mount.
        let got: Vec<_> = t
            .mounts
            .iter()
            .map(|m| intent_of(m, &none, &[], &addrs))
            .collect();
        assert_eq!(got, [None, Some(Intent::Options), None, None, None]);
        // A rule for the export covers the kubelet mount below it, not a look-alike name.
        let rules = [rule(None, Some("filer:/datasets"))];
        assert_eq!(
            intent_of(m(32), &none, &rules, &addrs),
            Some(Intent::Policy(0))
        );
        assert_eq!(intent_of(m(33), &none, &rules, &addrs), None);
        assert_eq!(
            intent_of(m(31), &none, &rules, &addrs),
            Some(Intent::Policy(0))
        );
        // A record of the helper beats both, and only for its own mount.
        let mut rec = Declared::default();
        rec.record(recorded("0:40", "home:/users", "/mnt/home", 20049));
        assert_eq!(
            intent_of(m(30), &rec, &rules, &addrs),
            Some(Intent::Recorded { port: 20049 })
        );
        assert_eq!(intent_of(m(33), &rec, &rules, &addrs), None);
        // An fstab line for the mount point, and nothing else.
        let mut fstab = Declared::default();
        fstab.fstab_line("/mnt/ab", 4, "_netdev");
        assert_eq!(intent_of(m(33), &fstab, &[], &addrs), Some(Intent::Fstab));
        assert_eq!(intent_of(m(30), &fstab, &[], &addrs), None);
        // A target rule; and a non-NFS mount is never meant for RDMA.
        let rules = [rule(Some("/mnt/home"), None), rule(Some("/data"), None)];
        assert_eq!(
            intent_of(m(30), &none, &rules, &addrs),
            Some(Intent::Policy(0))
        );
        assert_eq!(intent_of(m(34), &none, &rules, &addrs), None);
        // Both criteria must hold when both are given.
        let rules = [rule(Some("/mnt/home"), Some("filer:/"))];
        assert_eq!(intent_of(m(30), &none, &rules, &addrs), None);
    }

    #[test]
    fn the_expected_port_is_the_recorded_one_else_the_policys_never_the_mounts_own() {
        let t = mounts(TABLE);
        let gds = t.by_id(31).unwrap();
        let policy = crate::policy::Policy::default();
        // The mount says port=20050; the policy wants 20049.
        assert_eq!(
            expected_port(gds, &Declared::default(), policy.options.port),
            20049
        );
        let mut rec = Declared::default();
        rec.record(recorded("0:41", "filer:/datasets", "/mnt/gds", 20050));
        assert_eq!(expected_port(gds, &rec, policy.options.port), 20050);
        // A record of another mount on the same point says nothing about this one.
        let mut other = Declared::default();
        other.record(recorded("0:99", "filer:/datasets", "/mnt/gds", 20050));
        assert_eq!(expected_port(gds, &other, policy.options.port), 20049);
    }

    /// With a shared superblock the kernel shows a mount under the first mount's name: a rule
    /// written with the address still covers the mount shown by the name (its `addr=`), and
    /// the export the helper recorded being asked for covers a mount shown under another
    /// address of the same machine, which the table alone cannot tie to the rule.
    #[test]
    fn a_rule_covers_a_mount_shown_under_a_shared_superblocks_first_name() {
        let t = mounts(
            "40 1 0:50 / /mnt/a rw - nfs4 nfs-gds-vm:/export rw,proto=rdma,addr=10.0.2.15\n\
             41 1 0:50 / /mnt/b rw - nfs4 nfs-gds-vm:/export rw,proto=rdma,addr=10.0.2.15\n\
             42 1 0:51 / /mnt/c rw - nfs4 127.0.0.1:/export rw,proto=tcp,addr=127.0.0.1\n",
        );
        let m = |id| t.by_id(id).unwrap();
        let hosts = crate::system::Fake::new().host("nfs-gds-vm", &["10.0.2.15".parse().unwrap()]);
        let addrs = ServerAddrs::new(&hosts);
        let none = Declared::default();
        let by_address = [rule(None, Some("10.0.2.15:/export"))];
        assert_eq!(rule_of(m(40), &none, &by_address, &addrs), Some(0));
        assert_eq!(rule_of(m(41), &none, &by_address, &addrs), Some(0));
        let by_name = [rule(None, Some("nfs-gds-vm:/export/"))];
        assert_eq!(rule_of(m(40), &none, &by_name, &addrs), Some(0));
        // 127.0.0.1 is not 10.0.2.15 to the table.
        assert_eq!(rule_of(m(42), &none, &by_address, &addrs), None);
        let mut rec = Declared::default();
        rec.record(RecordedMount {
            spec: "10.0.2.15:/export",
            ..recorded("0:51", "127.0.0.1:/export", "/mnt/c", 20049)
        });
        assert_eq!(rule_of(m(42), &rec, &by_address, &addrs), Some(0));
        // Without a resolver a name matches only itself.
        let blind = ServerAddrs::blind();
        assert_eq!(rule_of(m(40), &none, &by_address, &blind), Some(0));
        assert_eq!(
            rule_of(m(40), &none, &[rule(None, Some("filer:/export"))], &blind),
            None
        );
    }

    #[test]
    fn records_and_fstab_lines_below_the_root_declare_their_mounts() {
        let t = MountTable::join(
            parse_mountinfo(
                b"30 1 0:40 / /mnt/home rw - nfs4 home:/users rw,vers=4.2,proto=tcp\n\
31 1 0:41 / /mnt/fast rw - nfs4 filer:/f rw,vers=4.2,proto=tcp\n",
            )
            .unwrap(),
            Vec::new(),
        );
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(
            dir.path().join("etc/fstab"),
            "# data\nfiler:/f /mnt/fast nfs-gds _netdev,nconnect=8 0 0\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("run/nfs-gds/mounts")).unwrap();
        std::fs::write(
            dir.path().join("run/nfs-gds/mounts/30-0.40.json"),
            r#"{"source":"home:/users","target":"/mnt/home","device":"0:40","mount_id":30,"port":20050,"options":"rw,nconnect=4"}"#,
        )
        .unwrap();
        let d = read_declared(&root).unwrap();
        assert_eq!(
            intent_of(
                t.by_id(30).unwrap(),
                &d,
                &[],
                &crate::nfs::ServerAddrs::blind()
            ),
            Some(Intent::Recorded { port: 20050 })
        );
        assert_eq!(
            intent_of(
                t.by_id(31).unwrap(),
                &d,
                &[],
                &crate::nfs::ServerAddrs::blind()
            ),
            Some(Intent::Fstab)
        );
        // What each asked, from the record's options and the fstab line's.
        let asked = d.asked(t.by_id(30).unwrap());
        assert_eq!(asked, [Asked::new(AskedBy::Record, "rw,nconnect=4")]);
        let asked = d.asked(t.by_id(31).unwrap());
        assert_eq!(
            asked,
            [Asked::new(AskedBy::Fstab { line: 2 }, "_netdev,nconnect=8")]
        );
    }
}
