//! The mount table as the kernel shows it: `/proc/self/mountinfo` and `/proc/self/mountstats`.
//!
//! mountinfo has a mount id per line but no transport; mountstats has the transport (`xprt:`
//! lines) but no mount id. Both are produced by the same walk over the namespace's mount list,
//! so the n-th mount of a given mount point and device in one is the n-th in the other; that is
//! how [`MountTable`] pairs them. Paths in both are escaped by the kernel as 3-digit octal
//! (`\040` for a space, `\011` tab, `\012` newline, `\134` backslash) and are decoded here, byte
//! for byte, so mount points that are not UTF-8 still compare correctly.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::{HostError, Root};

pub const MOUNTINFO: &str = "proc/self/mountinfo";
pub const MOUNTSTATS: &str = "proc/self/mountstats";

/// A mount table file that could not be read or understood. Names the file and the line.
#[derive(Debug, thiserror::Error)]
pub enum MountsError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("{} does not exist (is /proc mounted?)", path.display())]
    Missing { path: PathBuf },
    #[error("{}:{line}: {reason}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// A line of mountinfo that does not have the documented shape, with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub reason: String,
}

/// Decodes the kernel's `\ooo` escapes. A backslash not followed by three octal digits is kept.
pub fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' && i + 3 < field.len() {
            let digits = &field[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = (u32::from(digits[0] - b'0') << 6)
                    | (u32::from(digits[1] - b'0') << 3)
                    | u32::from(digits[2] - b'0');
                if let Ok(b) = u8::try_from(v) {
                    out.push(b);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(field[i]);
        i += 1;
    }
    out
}

fn path_of(field: &[u8]) -> PathBuf {
    PathBuf::from(OsString::from_vec(unescape(field)))
}

fn text_of(field: &[u8]) -> String {
    String::from_utf8_lossy(&unescape(field)).into_owned()
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfoEntry {
    pub mount_id: u32,
    pub parent_id: u32,
    /// `major:minor` of the filesystem.
    pub device_number: String,
    /// The directory of the filesystem that forms the root of this mount.
    pub root: PathBuf,
    pub mount_point: PathBuf,
    /// Per-mount options (`rw,nosuid,relatime`).
    pub mount_options: String,
    /// Optional tagged fields (`shared:1`, `master:2`, …).
    pub tags: Vec<String>,
    pub fstype: String,
    /// The mount source (for NFS `server:/path`), unescaped.
    pub source: String,
    /// Per-superblock options; for NFS these include `vers=`, `proto=`, `port=` and `addr=`.
    pub super_options: String,
}

impl MountInfoEntry {
    /// The value of `key=` in the superblock options.
    pub fn super_option(&self, key: &str) -> Option<&str> {
        option_value(self.super_options.split(','), key)
    }
}

/// The value of `key=` in a list of `key=value` / `flag` options.
pub fn option_value<'a>(mut options: impl Iterator<Item = &'a str>, key: &str) -> Option<&'a str> {
    options.find_map(|o| o.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

/// Parses mountinfo. Every line must have the documented shape
/// `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS…] - FSTYPE SOURCE SUPEROPTS`.
pub fn parse_mountinfo(text: &[u8]) -> Result<Vec<MountInfoEntry>, LineError> {
    let mut entries = Vec::new();
    for (idx, line) in text.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let bad = |reason: &str| LineError {
            line: idx + 1,
            reason: reason.to_string(),
        };
        let fields: Vec<&[u8]> = line
            .split(|b| *b == b' ')
            .filter(|f| !f.is_empty())
            .collect();
        let sep = fields
            .iter()
            .position(|f| *f == b"-")
            .ok_or_else(|| bad("no ' - ' separator"))?;
        if sep < 6 || fields.len() < sep + 3 {
            return Err(bad("too few fields"));
        }
        let number = |f: &[u8], what: &str| -> Result<u32, LineError> {
            std::str::from_utf8(f)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(&format!("{what} is not a number")))
        };
        entries.push(MountInfoEntry {
            mount_id: number(fields[0], "the mount id")?,
            parent_id: number(fields[1], "the parent id")?,
            device_number: text_of(fields[2]),
            root: path_of(fields[3]),
            mount_point: path_of(fields[4]),
            mount_options: text_of(fields[5]),
            tags: fields[6..sep].iter().map(|f| text_of(f)).collect(),
            fstype: text_of(fields[sep + 1]),
            source: text_of(fields[sep + 2]),
            super_options: fields.get(sep + 3).map(|f| text_of(f)).unwrap_or_default(),
        });
    }
    Ok(entries)
}

/// One transport of an NFS mount: an `xprt:` line of mountstats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xprt {
    /// `rdma`, `tcp`, `udp`, `local`, … (the word after `xprt:`).
    pub proto: String,
    /// The whole line, trimmed, for evidence.
    pub line: String,
}

impl Xprt {
    pub fn is_rdma(&self) -> bool {
        is_rdma_netid(&self.proto)
    }
}

/// Whether an RPC netid / `proto=` value is RDMA.
pub fn is_rdma_netid(netid: &str) -> bool {
    matches!(netid, "rdma" | "rdma6")
}

/// One `device … mounted on … with fstype …` record of mountstats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountStatsRecord {
    /// The device as printed (`server:/export`), unescaped; `None` for `no device`.
    pub device: Option<String>,
    pub mount_point: PathBuf,
    pub fstype: String,
    /// `statvers=` of NFS records (`1.0`, `1.1`, …).
    pub statvers: Option<String>,
    /// The `opts:` line's comma-separated options, as printed (NFS only). Kept as one string:
    /// a node with thousands of NFS mounts would otherwise hold ~20 small strings per mount.
    pub opts: String,
    /// Every `xprt:` line, in order (several with `nconnect=`).
    pub xprts: Vec<Xprt>,
}

impl MountStatsRecord {
    pub fn opt(&self, key: &str) -> Option<&str> {
        option_value(self.opts.split(',').filter(|o| !o.is_empty()), key)
    }
}

/// Parses mountstats. A record starts at each `device` (or `no device`) line; indented lines
/// belong to the record before them. Field counts after `xprt: <proto>` vary between kernels
/// and vendor stacks and are not interpreted.
pub fn parse_mountstats(text: &[u8]) -> Vec<MountStatsRecord> {
    let mut p = MountStatsParser::default();
    for line in text.split(|b| *b == b'\n') {
        p.feed(line);
    }
    p.records
}

/// mountstats one line at a time, so a reader can stream the file: with thousands of NFS mounts
/// it runs to tens of megabytes (some 80 lines of per-operation counters per mount), of which
/// only the `device`, `opts:` and `xprt:` lines are kept.
#[derive(Debug, Default)]
struct MountStatsParser {
    records: Vec<MountStatsRecord>,
}

impl MountStatsParser {
    fn feed(&mut self, line: &[u8]) {
        // Only a record's first line starts unindented; the counters under it are most lines.
        if line.starts_with(b"device ") || line.starts_with(b"no device ") {
            if let Some(rec) = parse_device_line(line) {
                if let Some(done) = self.records.last_mut() {
                    // Most mounts have one transport: do not keep room for four.
                    done.xprts.shrink_to_fit();
                }
                self.records.push(rec);
                return;
            }
        }
        let Some(current) = self.records.last_mut() else {
            return;
        };
        let start = line
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(line.len());
        let rest = &line[start..];
        if let Some(opts) = rest.strip_prefix(b"opts:") {
            current.opts = String::from_utf8_lossy(opts).trim().to_string();
        } else if rest.starts_with(b"xprt:") {
            let line = String::from_utf8_lossy(rest);
            let trimmed = line.trim_end();
            if let Some(proto) = trimmed["xprt:".len()..].split_whitespace().next() {
                current.xprts.push(Xprt {
                    proto: proto.to_string(),
                    line: trimmed.to_string(),
                });
            }
        }
    }
}

/// `device DEV mounted on MNT with fstype TYPE [statvers=V]` or `no device mounted on …`.
fn parse_device_line(line: &[u8]) -> Option<MountStatsRecord> {
    let words: Vec<&[u8]> = line
        .split(|b| *b == b' ')
        .filter(|w| !w.is_empty())
        .collect();
    let (device, rest) = match words.as_slice() {
        [b"device", dev, rest @ ..] => (Some(text_of(dev)), rest),
        [b"no", b"device", rest @ ..] => (None, rest),
        _ => return None,
    };
    match rest {
        [b"mounted", b"on", mnt, b"with", b"fstype", fstype, more @ ..] => {
            let statvers = more.iter().find_map(|w| {
                std::str::from_utf8(w)
                    .ok()
                    .and_then(|w| w.strip_prefix("statvers="))
                    .map(str::to_string)
            });
            Some(MountStatsRecord {
                device,
                mount_point: path_of(mnt),
                fstype: text_of(fstype),
                statvers,
                opts: String::new(),
                xprts: Vec::new(),
            })
        }
        _ => None,
    }
}

/// A mount: its mountinfo line and, when one could be paired, its mountstats record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub info: MountInfoEntry,
    pub stats: Option<MountStatsRecord>,
}

impl Mount {
    pub fn is_nfs(&self) -> bool {
        matches!(self.info.fstype.as_str(), "nfs" | "nfs4")
    }

    /// NFSv4 by filesystem type or by the `vers=` the kernel reports.
    pub fn is_nfs4(&self) -> bool {
        if self.info.fstype == "nfs4" {
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
            .and_then(|s| s.opt(key))
            .or_else(|| self.info.super_option(key))
    }

    /// The transports the mount really uses: the `xprt:` lines when there are any, else the
    /// `proto=` option.
    pub fn transports(&self) -> Vec<String> {
        match &self.stats {
            Some(s) if !s.xprts.is_empty() => s.xprts.iter().map(|x| x.proto.clone()).collect(),
            _ => self
                .option("proto")
                .map(str::to_string)
                .into_iter()
                .collect(),
        }
    }

    /// Whether every transport is RDMA; `None` when nothing says which transport it is.
    pub fn runs_over_rdma(&self) -> Option<bool> {
        let t = self.transports();
        if t.is_empty() {
            None
        } else {
            Some(t.iter().all(|p| is_rdma_netid(p)))
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
        const NONE: usize = usize::MAX;
        // For each key, the first record not yet taken; `next` chains a key's records in order.
        // Indices rather than moved records keep this to a few bytes per mount.
        let picks: Vec<usize> = {
            let mut head: HashMap<(&Path, Option<&str>), usize> =
                HashMap::with_capacity(stats.len());
            let mut next = vec![NONE; stats.len()];
            for (i, s) in stats.iter().enumerate().rev() {
                let key = (s.mount_point.as_path(), s.device.as_deref());
                next[i] = head.insert(key, i).unwrap_or(NONE);
            }
            infos
                .iter()
                .map(|info| {
                    let key = (info.mount_point.as_path(), Some(info.source.as_str()));
                    match head.get_mut(&key) {
                        Some(h) if *h != NONE => {
                            let taken = *h;
                            *h = next[taken];
                            taken
                        }
                        _ => NONE,
                    }
                })
                .collect()
        };
        let mut stats: Vec<Option<MountStatsRecord>> = stats.into_iter().map(Some).collect();
        let mounts = infos
            .into_iter()
            .zip(picks)
            .map(|(info, pick)| Mount {
                info,
                stats: stats.get_mut(pick).and_then(Option::take),
            })
            .collect();
        MountTable { mounts }
    }

    pub fn ids(&self) -> Vec<u32> {
        self.mounts.iter().map(|m| m.info.mount_id).collect()
    }

    pub fn by_id(&self, id: u32) -> Option<&Mount> {
        self.mounts.iter().find(|m| m.info.mount_id == id)
    }

    /// The mount that is visible at `path`: of the mounts on that mount point, the one no other
    /// mount on the same point is stacked on.
    pub fn topmost_at(&self, path: &Path) -> Option<&Mount> {
        let at: Vec<&Mount> = self
            .mounts
            .iter()
            .filter(|m| m.info.mount_point == path)
            .collect();
        at.iter()
            .rev()
            .find(|m| !at.iter().any(|o| o.info.parent_id == m.info.mount_id))
            .copied()
    }
}

/// Reads and parses mountinfo below the root. A missing file is an error: without it nothing
/// can be verified.
pub fn read_mountinfo(root: &Root) -> Result<Vec<MountInfoEntry>, MountsError> {
    read_mountinfo_at(root, MOUNTINFO)
}

fn read_mountinfo_at(root: &Root, rel: &str) -> Result<Vec<MountInfoEntry>, MountsError> {
    let path = root.join(rel);
    let bytes = root
        .read_bytes(rel)?
        .ok_or_else(|| MountsError::Missing { path: path.clone() })?;
    parse_mountinfo(&bytes).map_err(|e| MountsError::Parse {
        path,
        line: e.line,
        reason: e.reason,
    })
}

/// Reads and parses mountstats below the root; an absent file gives no records (containers
/// sometimes hide it), which leaves transports to the `proto=` options.
pub fn read_mountstats(root: &Root) -> Result<Vec<MountStatsRecord>, MountsError> {
    read_mountstats_at(root, MOUNTSTATS)
}

fn read_mountstats_at(root: &Root, rel: &str) -> Result<Vec<MountStatsRecord>, MountsError> {
    // Through the root's one reader: confined to the root, capped, never a FIFO, and recorded
    // for `collect` like every other read.
    Ok(root
        .read_bytes(rel)?
        .map(|bytes| parse_mountstats(&bytes))
        .unwrap_or_default())
}

/// Both files, paired.
pub fn read_mount_table(root: &Root) -> Result<MountTable, MountsError> {
    let infos = read_mountinfo(root)?;
    let stats = read_mountstats(root)?;
    Ok(MountTable::join(infos, stats))
}

/// PID 1's mount table, the host's as seen from a container that has the host's `/proc`.
pub const INIT_MOUNTINFO: &str = "proc/1/mountinfo";
pub const INIT_MOUNTSTATS: &str = "proc/1/mountstats";

/// The mount table of PID 1's mount namespace when `proc/1/mountinfo` exists below the root,
/// else this process's; with the path of the mountinfo read. In a container `/proc/self` is the
/// container's own namespace, where kubelet's and the host's NFS mounts are not; PID 1 of the
/// host's `/proc` is in the host's. On a host the two are the same table. A `proc/1/mountinfo`
/// that exists but cannot be read is an error, not a quiet fall-back to a table without the
/// host's mounts.
pub fn read_init_mount_table(root: &Root) -> Result<(MountTable, PathBuf), MountsError> {
    if root.exists(INIT_MOUNTINFO) {
        let infos = read_mountinfo_at(root, INIT_MOUNTINFO)?;
        let stats = read_mountstats_at(root, INIT_MOUNTSTATS)?;
        return Ok((MountTable::join(infos, stats), root.join(INIT_MOUNTINFO)));
    }
    Ok((read_mount_table(root)?, root.join(MOUNTINFO)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = include_str!("../../tests/fixtures/mountstats.txt");

    #[test]
    fn octal_escapes_decode_byte_for_byte() {
        assert_eq!(unescape(br"/tmp/a\040b"), b"/tmp/a b");
        assert_eq!(
            unescape(br"src\040with\040space\134x"),
            b"src with space\\x"
        );
        assert_eq!(unescape(br"tab\011nl\012"), b"tab\tnl\n");
        assert_eq!(unescape(br"\377"), [0xff]);
        // Not an escape: kept as written.
        assert_eq!(unescape(br"a\09b"), br"a\09b");
        assert_eq!(unescape(br"end\04"), br"end\04");
        assert_eq!(unescape(br"\"), br"\");
        // \400 does not fit a byte.
        assert_eq!(unescape(br"\400"), br"\400");
    }

    #[test]
    fn the_captured_mountstats_has_two_rdma_records() {
        let recs = parse_mountstats(CAPTURE.as_bytes());
        assert_eq!(recs.len(), 10);
        assert_eq!(recs[0].device.as_deref(), Some("sysfs"));
        assert!(recs[0].opts.is_empty() && recs[0].xprts.is_empty());
        let nfs: Vec<_> = recs.iter().filter(|r| r.fstype == "nfs4").collect();
        assert_eq!(nfs.len(), 2);
        assert_eq!(nfs[0].mount_point, Path::new("/mnt/rdma"));
        assert_eq!(nfs[1].mount_point, Path::new("/mnt/tcp"));
        for r in nfs {
            assert_eq!(r.device.as_deref(), Some("10.0.2.15:/export"));
            assert_eq!(r.statvers.as_deref(), Some("1.1"));
            assert_eq!(r.opt("proto"), Some("rdma"));
            assert_eq!(r.opt("port"), Some("20049"));
            assert_eq!(r.opt("vers"), Some("4.2"));
            assert_eq!(r.xprts.len(), 1);
            assert!(r.xprts[0].is_rdma());
            assert!(r.xprts[0].line.starts_with("xprt:\trdma 0 0 1"));
        }
    }

    #[test]
    fn the_streamed_read_is_the_parse_of_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        // No trailing newline on the last line, and a CRLF-free capture.
        let text = CAPTURE.trim_end();
        std::fs::write(dir.path().join(MOUNTSTATS), text).unwrap();
        assert_eq!(
            read_mountstats(&root).unwrap(),
            parse_mountstats(text.as_bytes())
        );
        assert_eq!(read_mountstats(&root).unwrap().len(), 10);
    }

    #[test]
    fn several_xprt_lines_and_escaped_paths() {
        let text =
            b"device srv:/ex\\040port mounted on /mnt/a\\040b with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,nconnect=2,proto=rdma,port=20049\n\
\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n\
\txprt:\trdma 0 0 1 0 0 1 1 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
\txprt:\ttcp 0 0 2 0 0 57 57 0 57 0 2 0 0\n\
no device mounted on /x with fstype none\n";
        let recs = parse_mountstats(text);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].device.as_deref(), Some("srv:/ex port"));
        assert_eq!(recs[0].mount_point, Path::new("/mnt/a b"));
        let protos: Vec<_> = recs[0].xprts.iter().map(|x| x.proto.as_str()).collect();
        assert_eq!(protos, ["rdma", "tcp"]);
        assert_eq!(recs[1].device, None);
        assert_eq!(recs[1].fstype, "none");
    }

    const MOUNTINFO_TEXT: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
61 22 0:50 / /mnt/rdma rw,relatime shared:30 - nfs4 10.0.2.15:/export rw,vers=4.2,rsize=262144,proto=rdma,port=20049,addr=10.0.2.15
62 22 0:50 / /mnt/a\\040b rw,relatime - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
";

    #[test]
    fn mountinfo_lines_parse() {
        let e = parse_mountinfo(MOUNTINFO_TEXT.as_bytes()).unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].mount_id, 22);
        assert_eq!(e[0].tags, ["shared:1"]);
        assert_eq!(e[2].fstype, "nfs4");
        assert_eq!(e[2].source, "10.0.2.15:/export");
        assert_eq!(e[2].super_option("addr"), Some("10.0.2.15"));
        assert_eq!(e[2].super_option("proto"), Some("rdma"));
        assert_eq!(e[3].mount_point, Path::new("/mnt/a b"));
        assert!(e[3].tags.is_empty());
    }

    #[test]
    fn malformed_mountinfo_names_the_line() {
        let err =
            parse_mountinfo(b"22 1 254:0 / / rw - ext4 /dev/vda rw\nnonsense here\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = parse_mountinfo(b"x 1 254:0 / / rw - ext4 /dev/vda rw\n").unwrap_err();
        assert!(err.reason.contains("mount id"), "{err:?}");
        let err = parse_mountinfo(b"22 1 254:0 / / rw -\n").unwrap_err();
        assert!(err.reason.contains("too few"), "{err:?}");
    }

    fn table(mountinfo: &str, mountstats: &str) -> MountTable {
        MountTable::join(
            parse_mountinfo(mountinfo.as_bytes()).unwrap(),
            parse_mountstats(mountstats.as_bytes()),
        )
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
    }

    #[test]
    fn missing_mountinfo_is_an_error_missing_mountstats_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert!(matches!(
            read_mount_table(&root),
            Err(MountsError::Missing { .. })
        ));
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join(MOUNTINFO), MOUNTINFO_TEXT).unwrap();
        let t = read_mount_table(&root).unwrap();
        assert_eq!(t.mounts.len(), 4);
        std::fs::write(dir.path().join(MOUNTINFO), "garbage\n").unwrap();
        let err = read_mount_table(&root).unwrap_err().to_string();
        assert!(err.contains("proc/self/mountinfo:1:"), "{err}");
    }
}
