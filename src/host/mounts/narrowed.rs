//! The NFS mounts that judging a few NFS mounts needs, read without the rest of the table:
//! those mounts, and every NFS mount that may be of the same server as one of them. Of the
//! checks of an NFS mount only the transport trap looks at other mounts, and only at those its
//! server cannot be told apart from (its suspects: the mounts whose server is not
//! [`Sameness::Different`] from the judged mount's); every other check looks at the mount
//! alone. So the verdicts on those mounts are the ones the whole table gives.
//!
//! What it saves is the parse of the rest: the container gates ask for the one or two mounts a
//! container's volumes lie on, on a node that may have 10,000 NFS mounts (some 3 MB of
//! mountinfo and tens of MB of mountstats). The other NFS lines of mountinfo are scanned for
//! their mount id, source and `addr=` only; of mountstats only the records of the mounts kept
//! are parsed, the others skipped to the next `device ` line unread. Mountinfo is read once
//! and its NFS lines looked at twice (where the mount point scan saw them): first for the
//! servers of the mounts asked for, then for the mounts to keep. Reading a mountinfo whole, for
//! its mount points alone or for both questions, is this module's too ([`MountInfoText`]).

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::errors::MountsError;
use super::escape::{lossy, unescaped};
use super::mountinfo::MountInfoEntry;
use super::mountinfo::MountInfoParser;
use super::mountstats::{MountStatsParser, MountStatsRecord};
use super::options::option_in;
use super::points::{MountPoints, NfsLine};
use super::read::{take_entry, InFlight, MOUNTINFO};
use super::table::{Mount, MountTable, Pairing};
use crate::host::io::reader::FileKind;
use crate::host::io::root::Root;
use crate::nfs::{NfsSource, Sameness, ServerHost};

/// A mountinfo read once, for the questions a gate asks of one table: which mount each path
/// lies on ([`MountInfoText::points`], scanned as it is read), then the NFS mounts of those it
/// judges ([`MountInfoText::nfs_mounts_of`], found where the scan saw their lines), both of the
/// same snapshot.
#[derive(Debug)]
pub struct MountInfoText {
    bytes: Vec<u8>,
    /// The file as errors name it.
    path: PathBuf,
    points: MountPoints,
}

/// The mountinfo at `rel` below `root`, read whole (a mount table, capped as one), and its
/// mount points.
pub fn read_mountinfo_text(root: &Root, rel: &str) -> Result<MountInfoText, MountsError> {
    read_mountinfo_text_into(root, rel, None)
}

/// [`read_mountinfo_text`] into the storage of `spare`, an earlier read (what it held is
/// dropped): a reader that reads the table again after each mount event — some 5 MB of text
/// and mount points on a node with 10,000 mounts — allocates nothing once the table stops
/// growing, and the allocator has no large blocks to place anew each time.
pub fn read_mountinfo_text_into(
    root: &Root,
    rel: &str,
    spare: Option<MountInfoText>,
) -> Result<MountInfoText, MountsError> {
    let (bytes, points) = spare.map_or_else(Default::default, |s| (s.bytes, s.points));
    let read = root
        .read_file_into(rel, FileKind::MountTable, bytes)?
        .ok_or_else(|| MountsError::Missing {
            path: root.join(rel),
        })?;
    let points = MountPoints::parse_into(&read.bytes, points).map_err(|e| MountsError::Parse {
        path: read.path.clone(),
        line: e.line,
        reason: e.reason,
    })?;
    Ok(MountInfoText {
        bytes: read.bytes,
        path: read.path,
        points,
    })
}

/// The mount points of this process's mountinfo below the root.
pub fn read_mount_points(root: &Root) -> Result<MountPoints, MountsError> {
    read_mount_points_at(root, MOUNTINFO)
}

/// The mount points of the mountinfo at `rel` below `root`.
pub fn read_mount_points_at(root: &Root, rel: &str) -> Result<MountPoints, MountsError> {
    Ok(read_mountinfo_text(root, rel)?.into_points())
}

/// [`MountInfoText::nfs_mounts_of`] of the mountinfo at `mountinfo` below `root`.
pub fn read_nfs_mounts_of(
    root: &Root,
    mountinfo: &str,
    mountstats: &str,
    ids: &[u32],
) -> Result<MountTable, MountsError> {
    read_mountinfo_text(root, mountinfo)?.nfs_mounts_of(root, mountstats, ids)
}

impl MountInfoText {
    /// Its mount points.
    pub fn points(&self) -> &MountPoints {
        &self.points
    }

    /// Its mount points, the text dropped.
    pub fn into_points(self) -> MountPoints {
        self.points
    }

    /// Its NFS mounts whose id is in `ids`, and every NFS mount that may be of the same server
    /// as one of them (in the table's order), paired with their records of the mountstats at
    /// `mountstats` below `root`; mounts in flight below the helper's staging area left out.
    /// An id that names no NFS mount adds nothing.
    pub fn nfs_mounts_of(
        &self,
        root: &Root,
        mountstats: &str,
        ids: &[u32],
    ) -> Result<MountTable, MountsError> {
        // The mounts asked for first, for their servers.
        let asked = |l: &NfsLine| ids.contains(&l.id);
        let mut servers: Vec<ServerHost> = Vec::new();
        let mut found = 0;
        self.entries_where(asked, |e| {
            found += 1;
            servers.extend(Mount::unpaired(e).server().map(|(server, _)| server));
        })?;
        if found == 0 {
            return Ok(MountTable::default());
        }
        let mut mounts = Vec::new();
        self.entries_where(
            |l| asked(l) || may_share(l, &servers),
            |e| mounts.push(Mount::unpaired(e)),
        )?;
        let points: HashSet<&[u8], foldhash::fast::FixedState> = mounts
            .iter()
            .map(|m| m.info.mount_point().as_os_str().as_bytes())
            .collect();
        let mut pairing = Pairing::new(&mounts);
        if let Some(mut lines) = root.read_lines(mountstats)? {
            let mut parser = MountStatsParser::default();
            let mut offer = |rec: MountStatsRecord| {
                if matches!(rec.fstype.as_str(), "nfs" | "nfs4") {
                    pairing.offer(rec)
                }
            };
            while let Some(block) = lines.next_lines()? {
                parser.feed_lines_where(block, |mp| points.contains(mp), &mut offer);
            }
            if let Some(rec) = parser.finish() {
                offer(rec);
            }
        }
        let paired = pairing.into_paired();
        Ok(MountTable::of(mounts, paired))
    }

    /// The entries of the NFS mounts' lines `keep` takes (the others are not parsed), mounts
    /// in flight left out; a kept line that is not a mountinfo line is an error naming it.
    fn entries_where(
        &self,
        keep: impl Fn(&NfsLine) -> bool,
        mut each: impl FnMut(MountInfoEntry),
    ) -> Result<(), MountsError> {
        let mut parser = MountInfoParser::default();
        for (number, line, nfs) in self.points.nfs_lines(&self.bytes) {
            if !keep(&nfs) {
                continue;
            }
            let entry = parser.line(line).map_err(|reason| MountsError::Parse {
                path: self.path.clone(),
                line: number,
                reason,
            })?;
            take_entry(entry, InFlight::LeftOut, &mut each);
        }
        Ok(())
    }
}

/// Whether the NFS mount of `line` may be of the same server as one of `servers`, as the
/// transport trap's suspects are chosen: by its source's server and its `addr=`. A source
/// that names no server is nobody's suspect.
fn may_share(line: &NfsLine, servers: &[ServerHost]) -> bool {
    if servers.is_empty() {
        return false;
    }
    let source = unescaped(line.source);
    // The common form first, decided without the general parse: a server written as an
    // address is compared by it, whatever `addr=` says.
    if let Some(ip) = dotted_quad_server(&source) {
        let server = ServerHost::V4(ip);
        return servers
            .iter()
            .any(|s| s.sameness(&server, None) != Sameness::Different);
    }
    may_share_parsed(&source, line.super_options, servers)
}

/// [`may_share`] of any source, by the general parse.
fn may_share_parsed(source: &[u8], super_options: &[u8], servers: &[ServerHost]) -> bool {
    let Ok(source) = NfsSource::parse(&lossy(source)) else {
        return false;
    };
    let options = unescaped(super_options);
    let options = lossy(&options);
    let addr = option_in(&options, "addr").and_then(|a| a.parse().ok());
    servers
        .iter()
        .any(|s| s.sameness(&source.server, addr) != Sameness::Different)
}

/// The server of a source written `A.B.C.D:/export` (as the standard library reads a dotted
/// quad), which [`NfsSource::parse`] reads as that address; `None` for any other form.
fn dotted_quad_server(source: &[u8]) -> Option<Ipv4Addr> {
    let colon = memchr::memchr(b':', source)?;
    if source.get(colon + 1) != Some(&b'/') {
        return None;
    }
    std::str::from_utf8(&source[..colon]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::{read_mount_table, MOUNTINFO, MOUNTSTATS};

    const INFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/a rw - nfs4 10.0.2.15:/a rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
41 1 0:51 / /mnt/b rw - nfs4 10.0.2.15:/b rw,vers=4.2,proto=tcp,addr=10.0.2.15
42 1 0:52 / /mnt/c rw - nfs4 filer:/c rw,vers=4.2,proto=tcp,addr=10.0.2.15
43 1 0:53 / /mnt/d rw - nfs4 10.0.2.16:/d rw,vers=4.2,proto=tcp,addr=10.0.2.16
44 1 0:54 / /mnt/e rw - nfs4 other:/e rw,vers=4.2,proto=tcp,addr=10.0.2.17
45 1 0:55 / /mnt/f\\040g rw - nfs filer:/f rw,vers=3,proto=tcp,addr=10.0.2.15
46 1 0:56 / /mnt/h rw - tmpfs tmpfs rw
47 1 0:57 / /run/nfs-gds/stage/1/mnt rw - nfs4 10.0.2.15:/s rw,vers=4.2,proto=tcp,addr=10.0.2.15
";

    fn stats() -> String {
        let mut s = String::from("device /dev/vda mounted on / with fstype ext4\n");
        for (dev, mp, proto) in [
            ("10.0.2.15:/a", "/mnt/a", "rdma"),
            ("10.0.2.15:/b", "/mnt/b", "tcp"),
            ("filer:/c", "/mnt/c", "tcp"),
            ("10.0.2.16:/d", "/mnt/d", "tcp"),
            ("other:/e", "/mnt/e", "tcp"),
            ("filer:/f", "/mnt/f\\040g", "tcp"),
        ] {
            s.push_str(&format!(
                "device {dev} mounted on {mp} with fstype nfs4 statvers=1.1\n\
                 \topts:\trw,vers=4.2,proto={proto}\n\
                 \tper-op statistics\n\
                 \t        NULL: 1 1 0 40 24 43 4 49 0\n\
                 \txprt:\t{proto} 0 0 1 0\n\n"
            ));
        }
        s.push_str("no device mounted on /x with fstype none\n");
        s
    }

    fn root_with(info: &str, stats: &str) -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(dir.path().join(MOUNTINFO), info).unwrap();
        std::fs::write(dir.path().join(MOUNTSTATS), stats).unwrap();
        let root = Root::new(dir.path());
        (dir, root)
    }

    fn ids(t: &MountTable) -> Vec<u32> {
        t.mounts.iter().map(|m| m.info.mount_id).collect()
    }

    #[test]
    fn the_mounts_asked_for_and_those_of_a_server_that_may_be_theirs() {
        let (_d, root) = root_with(INFO, &stats());
        let of = |asked: &[u32]| read_nfs_mounts_of(&root, MOUNTINFO, MOUNTSTATS, asked).unwrap();
        // 10.0.2.15: itself, its other mount, the name that connects to it, and the name
        // whose address is 10.0.2.15; not the staged mount, 10.0.2.16, or `other`.
        assert_eq!(ids(&of(&[40])), [40, 41, 42, 45]);
        // A name: only the same name and addresses are undecidable against it.
        assert_eq!(ids(&of(&[44])), [40, 41, 43, 44]);
        assert_eq!(ids(&of(&[43, 46, 99])), [43]);
        assert!(of(&[46, 99]).mounts.is_empty(), "no NFS mount asked for");
    }

    #[test]
    fn the_short_way_for_a_dotted_quad_server_decides_as_the_general_parse() {
        let servers: Vec<ServerHost> = ["10.0.2.15", "filer", "[::ffff:10.0.2.16]", "10.0.2.17"]
            .iter()
            .map(|s| ServerHost::parse(s).unwrap())
            .collect();
        let sources = [
            "10.0.2.15:/a",
            "10.0.2.16:/b",
            "10.0.2.18:/c",
            "010.0.2.15:/d",
            "10.0.2.15:e",
            "10.0.2.15:",
            "10.0.2.15:/x:y",
            "10.0.2:/f",
            "1.2.3.4.5:/g",
            "[10.0.2.15]:/h",
            "filer:/i",
            "other:/j",
            "nfs://10.0.2.15/k",
            "",
        ];
        let mut shortened = 0;
        for source in sources {
            for options in ["", "rw,addr=10.0.2.15", "rw,addr=10.0.2.99"] {
                for n in 0..=servers.len() {
                    let line = NfsLine {
                        id: 1,
                        source: source.as_bytes(),
                        super_options: options.as_bytes(),
                    };
                    let want = !servers[..n].is_empty()
                        && may_share_parsed(source.as_bytes(), options.as_bytes(), &servers[..n]);
                    assert_eq!(
                        may_share(&line, &servers[..n]),
                        want,
                        "{source} {options} {n}"
                    );
                }
            }
            shortened += usize::from(dotted_quad_server(source.as_bytes()).is_some());
        }
        assert_eq!(shortened, 4, "the short way was taken");
    }

    #[test]
    fn what_is_kept_is_the_whole_tables_mount_for_mount() {
        let (_d, root) = root_with(INFO, &stats());
        let whole = read_mount_table(&root).unwrap();
        for asked in [&[40][..], &[41], &[42], &[43], &[44], &[45], &[40, 43]] {
            let t = read_nfs_mounts_of(&root, MOUNTINFO, MOUNTSTATS, asked).unwrap();
            assert!(!t.mounts.is_empty());
            for m in &t.mounts {
                let w = whole.by_id(m.info.mount_id).unwrap();
                assert_eq!(m, w, "{asked:?}");
                assert!(
                    m.stats.is_some(),
                    "{asked:?}: {} has its record",
                    m.info.mount_id
                );
            }
        }
    }

    #[test]
    fn without_mountstats_the_mounts_have_no_records_and_a_bad_kept_line_names_its_line() {
        let (dir, root) = root_with(INFO, "");
        std::fs::remove_file(dir.path().join(MOUNTSTATS)).unwrap();
        let t = read_nfs_mounts_of(&root, MOUNTINFO, MOUNTSTATS, &[43]).unwrap();
        assert_eq!(ids(&t), [43]);
        assert!(t.mounts[0].stats.is_none());
        // A line of 10.0.2.16 whose id is no number: kept to be parsed, and refused.
        let bad = format!("{INFO}4x 1 0:58 / /mnt/z rw - nfs4 10.0.2.16:/z rw\n");
        std::fs::write(dir.path().join(MOUNTINFO), bad).unwrap();
        let err = read_nfs_mounts_of(&root, MOUNTINFO, MOUNTSTATS, &[43])
            .map(|t| ids(&t))
            .unwrap_err()
            .to_string();
        assert!(err.contains("proc/self/mountinfo:10"), "{err}");
    }
}
