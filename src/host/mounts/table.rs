//! The mounts of a namespace: mountinfo lines paired with the mountstats records of the same
//! mount. Both files are produced by the same walk over the namespace's mount list, so the n-th
//! mount of a given mount point and device in one is the n-th in the other.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::mountinfo::MountInfoEntry;
use super::mountstats::{is_rdma_netid, MountStats, MountStatsRecord, Xprt};
use super::options::KEPT_OPTIONS;
use crate::nfs::{NfsSource, ServerHost, ShownExport, NFS_PORT};

/// A mount: its mountinfo line and, when one could be paired, what it keeps of its mountstats
/// record (whose device and mount point are the mountinfo line's: that is how they paired).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub info: MountInfoEntry,
    pub stats: Option<MountStats>,
}

impl Mount {
    /// A mountinfo line before mountstats is paired with it.
    pub(super) fn unpaired(info: MountInfoEntry) -> Self {
        Mount { info, stats: None }
    }

    pub fn is_nfs(&self) -> bool {
        matches!(self.info.fstype(), "nfs" | "nfs4")
    }

    /// NFSv4 by filesystem type or by the `vers=` the kernel reports.
    pub fn is_nfs4(&self) -> bool {
        if self.info.fstype() == "nfs4" {
            return true;
        }
        self.is_nfs()
            && self
                .option("vers")
                .is_some_and(|v| v == "4" || v.starts_with("4."))
    }

    /// An option of the mount: mountstats `opts:` first (it includes defaults), else the
    /// superblock options of mountinfo.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.stats
            .as_ref()
            .filter(|_| KEPT_OPTIONS.contains(&key))
            .and_then(|s| s.opt(key))
            .or_else(|| self.info.super_option(key))
    }

    /// The port the mount talks to: its `port=`, else 2049 for NFSv4 (the kernel's default,
    /// which it then leaves out), else unknown (NFSv3 asks rpcbind). The one answer for every
    /// message and check that names a mount's port.
    pub fn port(&self) -> Option<u16> {
        match self.option("port") {
            Some(p) => p.parse().ok(),
            None if self.is_nfs4() => Some(NFS_PORT),
            None => None,
        }
    }

    /// The export as the kernel shows it: the source (a shared superblock's first name) and the
    /// server address it talks to (`addr=`), for [`crate::nfs::export_identity`].
    pub fn shown_export(&self) -> ShownExport<'_> {
        ShownExport {
            source: self.info.source(),
            addr: self.addr(),
        }
    }

    /// The address the kernel talks to (`addr=`), when it shows one.
    pub fn addr(&self) -> Option<std::net::IpAddr> {
        self.info.super_option("addr").and_then(|a| a.parse().ok())
    }

    /// The server as its source names it, with the address the kernel talks to: the one
    /// identity the checks and the judges compare a mount's server by (`None` when the source
    /// is not `server:/export`).
    pub fn server(&self) -> Option<(ServerHost, Option<std::net::IpAddr>)> {
        let src = NfsSource::parse(self.info.source()).ok()?;
        Some((src.server, self.addr()))
    }

    /// The `xprt:` lines of its mountstats record: the only proof of the transport the mount
    /// really runs over (empty when there is no record, or it has none).
    pub fn xprts(&self) -> &[Xprt] {
        self.stats
            .as_ref()
            .map(|s| s.xprts.as_slice())
            .unwrap_or(&[])
    }

    /// The transports the mount really uses: the `xprt:` lines when there are any, else the
    /// `proto=` option.
    pub fn transports(&self) -> Vec<String> {
        match &self.stats {
            Some(s) if !s.xprts.is_empty() => {
                s.xprts.iter().map(|x| x.proto().to_string()).collect()
            }
            _ => self
                .option("proto")
                .map(str::to_string)
                .into_iter()
                .collect(),
        }
    }

    /// Whether every transport is RDMA; `None` when nothing says which transport it is.
    pub fn runs_over_rdma(&self) -> Option<bool> {
        // What `transports` would list, without making the list.
        match &self.stats {
            Some(s) if !s.xprts.is_empty() => Some(s.xprts.iter().all(Xprt::is_rdma)),
            _ => self.option("proto").map(is_rdma_netid),
        }
    }
}

/// The mounts of the namespace, in the kernel's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountTable {
    pub mounts: Vec<Mount>,
}

impl MountTable {
    /// Pairs mountinfo lines with mountstats records: the k-th mountinfo line with a given
    /// (mount point, source) gets the k-th mountstats record with the same pair.
    pub fn join(infos: Vec<MountInfoEntry>, stats: Vec<MountStatsRecord>) -> Self {
        let mounts: Vec<Mount> = infos.into_iter().map(Mount::unpaired).collect();
        let mut pairing = Pairing::new(&mounts);
        for rec in stats {
            pairing.offer(rec);
        }
        let paired = pairing.into_paired();
        MountTable::of(mounts, paired)
    }

    /// The mounts with the records [`Pairing`] gave them.
    pub(super) fn of(mut mounts: Vec<Mount>, paired: Vec<Option<MountStats>>) -> Self {
        for (m, stats) in mounts.iter_mut().zip(paired) {
            m.stats = stats;
        }
        MountTable { mounts }
    }

    pub fn by_id(&self, id: u32) -> Option<&Mount> {
        self.mounts.iter().find(|m| m.info.mount_id == id)
    }

    /// The ids of the mounts another mount is stacked on (a child on the same mount point):
    /// what applications do not see. Every command that asks which mounts applications see
    /// leaves these out; [`MountTable::topmost_at`] is never one of them. Mount ids are unique
    /// in a namespace, so each child is compared with its one parent's mount point.
    pub fn stacked_over(&self) -> HashSet<u32> {
        let by_id: HashMap<u32, &Path> = self
            .mounts
            .iter()
            .map(|m| (m.info.mount_id, m.info.mount_point()))
            .collect();
        self.mounts
            .iter()
            .filter(|o| by_id.get(&o.info.parent_id) == Some(&o.info.mount_point()))
            .map(|o| o.info.parent_id)
            .collect()
    }

    /// The mount that is visible at `path`: of the mounts on that mount point, the last one no
    /// other mount on the same point is stacked on (see [`MountTable::stacked_over`]).
    pub fn topmost_at(&self, path: &Path) -> Option<&Mount> {
        let at: Vec<&Mount> = self
            .mounts
            .iter()
            .filter(|m| m.info.mount_point() == path)
            .collect();
        at.iter()
            .rev()
            .find(|m| !at.iter().any(|o| o.info.parent_id == m.info.mount_id))
            .copied()
    }

    /// The mount `path` (absolute, clean) lies on: the visible one ([`MountTable::topmost_at`])
    /// on the longest mount point that is `path` or a leading part of it, by whole components,
    /// as [`super::MountPoints::under`] answers it. Nothing is looked up on disk.
    pub fn under(&self, path: &Path) -> Option<&Mount> {
        let point = self
            .mounts
            .iter()
            .map(|m| m.info.mount_point())
            .filter(|mp| path.starts_with(mp))
            .max_by_key(|mp| mp.as_os_str().len())?;
        self.topmost_at(point)
    }
}

/// Pairs mountstats records with mountinfo lines as they come, so a streamed mountstats is
/// never held whole: the k-th record with a given (mount point, device) goes to the k-th line
/// with that (mount point, source), which is [`MountTable::join`]'s rule.
///
/// Both files come from one walk of the mount list, so records nearly always arrive in the
/// order of the lines: while they do, each goes to the line after the last one paired, which
/// then is the first line of its key without a record. The first record out of that order
/// builds an index of the lines by mount point, used from then on.
pub(super) struct Pairing<'a> {
    mounts: &'a [Mount],
    /// While every line before it has its record: the line the next record should be.
    in_order: Option<usize>,
    index: Option<LinesByMountPoint<'a>>,
    paired: Vec<Option<MountStats>>,
}

/// The mountinfo lines by mount point: for each, the first line on it that has no record yet;
/// `next` chains the lines on one mount point in order (nearly always one; a few when mounts
/// are stacked). Keyed by the bytes the kernel printed (hashing a `Path` hashes it component
/// by component, several times slower).
struct LinesByMountPoint<'a> {
    head: HashMap<&'a [u8], usize>,
    next: Vec<usize>,
}

const NONE: usize = usize::MAX;

impl<'a> LinesByMountPoint<'a> {
    fn new(mounts: &'a [Mount]) -> Self {
        let mut head = HashMap::with_capacity(mounts.len());
        let mut next = vec![NONE; mounts.len()];
        for (i, m) in mounts.iter().enumerate().rev() {
            next[i] = head
                .insert(m.info.mount_point().as_os_str().as_bytes(), i)
                .unwrap_or(NONE);
        }
        LinesByMountPoint { head, next }
    }
}

impl<'a> Pairing<'a> {
    pub(super) fn new(mounts: &'a [Mount]) -> Self {
        Pairing {
            mounts,
            in_order: Some(0),
            index: None,
            paired: vec![None; mounts.len()],
        }
    }

    /// Gives `rec` to the first line of its mount point and source that has none; a record
    /// without one is dropped.
    pub(super) fn offer(&mut self, rec: MountStatsRecord) {
        let Some(device) = rec.device.as_deref() else {
            return;
        };
        let mount_point = rec.mount_point.as_os_str().as_bytes();
        if let Some(at) = self.in_order {
            let next = self.mounts.get(at);
            if next.is_some_and(|m| {
                m.info.source() == device
                    && m.info.mount_point().as_os_str().as_bytes() == mount_point
            }) {
                self.paired[at] = Some(rec.stats);
                self.in_order = Some(at + 1);
                return;
            }
            self.in_order = None;
        }
        let mounts = self.mounts;
        let index = self
            .index
            .get_or_insert_with(|| LinesByMountPoint::new(mounts));
        let Some(head) = index.head.get_mut(mount_point) else {
            return;
        };
        let mut i = *head;
        while i != NONE {
            if self.paired[i].is_none() && mounts[i].info.source() == device {
                self.paired[i] = Some(rec.stats);
                break;
            }
            i = index.next[i];
        }
        // Lines at the front that have their record are not looked at again.
        while *head != NONE && self.paired[*head].is_some() {
            *head = index.next[*head];
        }
    }

    pub(super) fn into_paired(self) -> Vec<Option<MountStats>> {
        self.paired
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::host::io::root::Root;

    use super::*;

    /// 2049 where NFSv4 leaves the port out, nothing for NFSv3 (rpcbind decides), else the
    /// option: what the helper's messages and mount-options both say.
    #[test]
    fn a_mounts_port_is_its_option_else_the_v4_default_else_unknown() {
        let t = MountTable::join(
            super::super::parse_mountinfo(
                b"40 1 0:50 / /a rw - nfs4 s:/e rw,vers=4.2,proto=tcp\n\
41 1 0:51 / /b rw - nfs s:/e rw,vers=3,proto=tcp\n\
42 1 0:52 / /c rw - nfs4 s:/e rw,vers=4.2,proto=rdma,port=20049\n",
            )
            .unwrap(),
            Vec::new(),
        );
        let ports: Vec<Option<u16>> = t.mounts.iter().map(Mount::port).collect();
        assert_eq!(ports, [Some(2049), None, Some(20049)]);
    }
    use crate::host::mounts::samples::*;
    use crate::host::mounts::*;
    use std::path::Path;

    /// What the checks can ask of a mount, the same way for the table of today and of before:
    /// its mountinfo line but the options, whether it has a record, the options as
    /// [`Mount::option`] and [`MountInfoEntry::super_option`] give them, and its transports.
    type Seen = (InfoFields, bool, Vec<Option<String>>, Vec<(String, String)>);

    /// A mountinfo line's fields but the superblock options.
    type InfoFields = (
        u32,
        u32,
        String,
        PathBuf,
        PathBuf,
        String,
        Vec<String>,
        String,
        String,
    );

    fn fields_of(e: &MountInfoEntry) -> InfoFields {
        (
            e.mount_id,
            e.parent_id,
            e.device_number().to_string(),
            e.root().to_path_buf(),
            e.mount_point().to_path_buf(),
            e.mount_options().to_string(),
            e.tags().map(str::to_string).collect(),
            e.fstype().to_string(),
            e.source().to_string(),
        )
    }

    fn seen_now(t: &MountTable) -> Vec<Seen> {
        t.mounts
            .iter()
            .map(|m| {
                let mut opts = Vec::new();
                for k in KEPT_SUPER_OPTIONS {
                    opts.push(m.option(k).map(str::to_string));
                    opts.push(m.info.super_option(k).map(str::to_string));
                }
                let xprts = m.stats.iter().flat_map(|s| &s.xprts);
                let xprts = xprts.map(|x| (x.proto().to_string(), x.line.clone()));
                (fields_of(&m.info), m.stats.is_some(), opts, xprts.collect())
            })
            .collect()
    }

    fn seen_before(mountinfo: &[u8], mountstats: &[u8]) -> Vec<Seen> {
        let infos = parse_mountinfo(mountinfo).unwrap();
        let supers = before::super_options(mountinfo);
        assert_eq!(supers.len(), infos.len());
        before::join(infos, before::parse_mountstats(mountstats))
            .into_iter()
            .zip(supers)
            .map(|((info, rec), sup)| {
                let sup_opt = |k| option_value(sup.split(','), k);
                let stats_opt = |k| {
                    rec.as_ref()
                        .and_then(|r| option_value(r.opts.split(',').filter(|o| !o.is_empty()), k))
                };
                let mut opts = Vec::new();
                for k in KEPT_SUPER_OPTIONS {
                    opts.push(stats_opt(k).or_else(|| sup_opt(k)).map(str::to_string));
                    opts.push(sup_opt(k).map(str::to_string));
                }
                let xprts = rec.as_ref().map(|r| r.xprts.clone()).unwrap_or_default();
                (fields_of(&info), rec.is_some(), opts, xprts)
            })
            .collect()
    }

    /// Writes both files below a fresh root and reads the table the streamed way.
    fn streamed(mountinfo: &[u8], mountstats: &[u8]) -> MountTable {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join(MOUNTINFO), mountinfo).unwrap();
        std::fs::write(dir.path().join(MOUNTSTATS), mountstats).unwrap();
        read_mount_table(&Root::new(dir.path())).unwrap()
    }

    /// Odd but possible inputs: escaped paths, a record without `xprt:`, one without `opts:`,
    /// non-NFS records, two mounts stacked on one point, a record nobody claims, garbage lines,
    /// and a last record cut off in its counters without a final newline.
    const ODD_MOUNTINFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/a\\040b rw - nfs4 srv:/ex\\040port rw,vers=4.2,proto=rdma,port=20049,addr=10.0.0.1
41 1 0:51 / /mnt/noxprt rw - nfs4 srv:/ex rw,vers=4.2,rsize=1048576,proto=tcp,hard,addr=10.0.0.1,proto=rdma,clientaddr=10.0.0.2
42 1 0:52 / /mnt/stack rw - nfs4 srv:/one rw,vers=4.2,proto=rdma,addr=10.0.0.1
43 42 0:53 / /mnt/stack rw - nfs4 srv:/two rw,vers=4.2,proto=tcp,addr=10.0.0.1
44 1 0:54 / /mnt/stack rw - nfs4 srv:/one rw,vers=4.2,proto=rdma,addr=10.0.0.1
45 1 0:55 / /mnt/v3 rw - nfs srv:/v3 rw,vers=3,proto=tcp,addr=10.0.0.1
46 1 0:56 / /mnt/cut rw - nfs4 srv:/cut rw,vers=4.1,proto=rdma6,addr=fe80::1
";

    const ODD_MOUNTSTATS: &str = "\
device /dev/vda mounted on / with fstype ext4
garbage that is no record
device srv:/ex\\040port mounted on /mnt/a\\040b with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,rsize=1048576,nconnect=2,proto=rdma,port=20049,timeo=600
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
\txprt:\ttcp 0 0 2 0 0 57 57 0 57 0 2 0 0\t
\tper-op statistics
\t        NULL: 1 1 0 40 24 43 4 49 0
device srv:/ex mounted on /mnt/noxprt with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\tage:\t1
device srv:/gone mounted on /mnt/gone with fstype nfs4 statvers=1.1
\txprt:\ttcp 0 0 2
device srv:/two mounted on /mnt/stack with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=tcp
\txprt:\ttcp 0 0 2
device srv:/one mounted on /mnt/stack with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,proto=rdma,port=20049
\txprt:\trdma 0 0 1
no device mounted on /x with fstype none
\txprt:\trdma not ours
device srv:/one mounted on /mnt/stack with fstype nfs4 statvers=1.1
\txprt:\trdma 0 0 2
device srv:/v3 mounted on /mnt/v3 with fstype nfs statvers=1.1
\topts:\trw,vers=3,proto=tcp,port=2049
\txprt:
\txprt:\ttcp 0 0 3
device srv:/cut mounted on /mnt/cut with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.1,proto=rdma6,port=20049
\txprt:\trdma6 0 0 1
\tper-op statistics
\t        NULL: 1 1";

    /// MOUNTINFO_TEXT's records in order, then one out of it, then the rest.
    const OUT_OF_ORDER: &str = "\
device /dev/vda mounted on / with fstype ext4
device 10.0.2.15:/export mounted on /mnt/a\\040b with fstype nfs4 statvers=1.1
\txprt:\ttcp 0
device proc mounted on /proc with fstype proc
device 10.0.2.15:/export mounted on /mnt/rdma with fstype nfs4 statvers=1.1
\txprt:\trdma 0
device 10.0.2.15:/export mounted on /mnt/rdma with fstype nfs4 statvers=1.1
\txprt:\ttcp 1
";

    #[test]
    fn the_streamed_table_is_the_table_of_before() {
        for (info, stats) in [
            (CAPTURE_MOUNTINFO, CAPTURE),
            (CAPTURE_MOUNTINFO, CAPTURE.trim_end()),
            (MOUNTINFO_TEXT, CAPTURE),
            (ODD_MOUNTINFO, ODD_MOUNTSTATS),
            (MOUNTINFO_TEXT, OUT_OF_ORDER),
            (ODD_MOUNTINFO, ""),
            (ODD_MOUNTINFO, "\n\n"),
        ] {
            let want = seen_before(info.as_bytes(), stats.as_bytes());
            let streamed = streamed(info.as_bytes(), stats.as_bytes());
            assert_eq!(seen_now(&streamed), want, "{info}");
            let whole = table(info, stats);
            assert_eq!(streamed, whole);
        }
        // The odd records paired as they should: a record per mount of the stack, in order.
        let t = streamed(ODD_MOUNTINFO.as_bytes(), ODD_MOUNTSTATS.as_bytes());
        let by = |id| t.by_id(id).unwrap();
        assert_eq!(by(40).info.mount_point(), Path::new("/mnt/a b"));
        assert_eq!(by(40).transports(), ["rdma", "tcp"]);
        assert_eq!(
            by(40).stats.as_ref().unwrap().opts,
            "vers=4.2,nconnect=2,proto=rdma,port=20049"
        );
        assert_eq!(by(41).stats.as_ref().unwrap().xprts, []);
        assert_eq!(by(41).transports(), ["tcp"]);
        assert_eq!(
            by(41).info.super_options(),
            "vers=4.2,proto=tcp,addr=10.0.0.1,proto=rdma"
        );
        assert_eq!(by(42).transports(), ["rdma"]);
        assert_eq!(by(43).transports(), ["tcp"]);
        assert_eq!(
            by(44).stats.as_ref().unwrap().xprts[0].line,
            "xprt:\trdma 0 0 2"
        );
        assert_eq!(by(45).transports(), ["tcp"]);
        assert_eq!(by(46).runs_over_rdma(), Some(true));
        assert_eq!(by(1).stats.as_ref().unwrap(), &MountStats::default());
        let t = streamed(MOUNTINFO_TEXT.as_bytes(), OUT_OF_ORDER.as_bytes());
        let protos: Vec<_> = t.mounts.iter().map(Mount::transports).collect();
        assert_eq!(protos, [vec![], vec![], vec!["rdma"], vec!["tcp"]]);
    }

    #[test]
    fn records_pair_by_mount_point_and_device_in_order() {
        let stats = "device /dev/vda mounted on / with fstype ext4\n\
device proc mounted on /proc with fstype proc\n\
device 10.0.2.15:/export mounted on /mnt/rdma with fstype nfs4 statvers=1.1\n\
\txprt:\trdma 0\n\
device 10.0.2.15:/export mounted on /mnt/a\\040b with fstype nfs4 statvers=1.1\n\
\txprt:\ttcp 0\n";
        let t = table(MOUNTINFO_TEXT, stats);
        let rdma = t.by_id(61).unwrap();
        assert_eq!(rdma.runs_over_rdma(), Some(true));
        let tcp = t.by_id(62).unwrap();
        assert_eq!(tcp.transports(), ["tcp"]);
        assert_eq!(tcp.runs_over_rdma(), Some(false));
        assert!(tcp.is_nfs4());
        // Without mountstats the proto= option still tells.
        let t = table(MOUNTINFO_TEXT, "");
        assert_eq!(t.by_id(61).unwrap().runs_over_rdma(), Some(true));
        assert_eq!(t.by_id(62).unwrap().runs_over_rdma(), Some(false));
        assert_eq!(t.by_id(22).unwrap().runs_over_rdma(), None);
    }

    #[test]
    fn stacked_mounts() {
        let before = table(MOUNTINFO_TEXT, "");
        let after_text =
            format!("{MOUNTINFO_TEXT}70 61 0:51 / /mnt/rdma rw - nfs4 srv:/other rw,proto=rdma\n");
        let after = table(&after_text, "");
        assert_eq!(
            before
                .topmost_at(Path::new("/mnt/rdma"))
                .unwrap()
                .info
                .mount_id,
            61
        );
        assert_eq!(
            after
                .topmost_at(Path::new("/mnt/rdma"))
                .unwrap()
                .info
                .mount_id,
            70
        );
        assert!(before.topmost_at(Path::new("/nowhere")).is_none());
        // The one stacked over is the one topmost_at passes by.
        assert!(before.stacked_over().is_empty());
        assert_eq!(after.stacked_over(), HashSet::from([61]));
    }
}
