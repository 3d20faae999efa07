//! Which mount a path lies on, from mountinfo alone: the one answer for a caller that only asks
//! that (the container hook, on every container start, for each bind source). Each line gives
//! its mount id, parent id, mount point and filesystem type and nothing else is parsed, so a
//! node's thousands of kubelet mounts cost a scan, not the full parse of [`super::MountTable`].
//!
//! The mount a path lies on is the one whose mount point is the longest leading part of the path
//! (by whole components), and of the mounts on that point the one applications see: the last
//! one no other mount on the same point is stacked on (as [`super::MountTable::topmost_at`]).
//! Nothing is looked up on disk: a path below an NFS mount point is never `stat`ed, opened or
//! resolved, since a hard mount of a dead server would hang the caller. The path is taken as
//! written (cleaned lexically by the caller); a symbolic link in it is not followed.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::errors::LineError;
use super::escape::unescaped;

/// A mount, as far as this module reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    id: u32,
    parent: u32,
    /// Its mount point's span in [`MountPoints::paths`] (unescaped).
    start: u32,
    end: u32,
    nfs: bool,
}

/// The mount a path lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Under {
    pub mount_id: u32,
    /// Its filesystem type is `nfs` or `nfs4`.
    pub nfs: bool,
}

/// The mount points of a mountinfo text.
#[derive(Debug, Clone, Default)]
pub struct MountPoints {
    paths: Vec<u8>,
    points: Vec<Point>,
    /// The points by the hash of their mount point: the first (in the table's order) of each
    /// hash, then [`MountPoints::same_hash`] chains the others. [`MountPoints::under`] looks up
    /// each leading part of a path, rather than comparing it with every mount point: a bind
    /// source is resolved component by component, each asking which mount it lies on.
    by_hash: HashMap<u64, u32, foldhash::fast::FixedState>,
    same_hash: Vec<u32>,
    /// Where each NFS mount's line is in the text, in the table's order: a reader that wants
    /// a few NFS mounts of the same text finds their lines without scanning it again
    /// ([`MountPoints::nfs_lines`]).
    nfs_lines: Vec<NfsAt>,
}

/// An NFS mount's line in the text [`MountPoints::parse`] read.
#[derive(Debug, Clone, Copy)]
struct NfsAt {
    id: u32,
    /// The 1-based line number.
    number: u32,
    /// The line's span in the text.
    start: u32,
    end: u32,
    /// Where, in the line, its source starts.
    source: u32,
}

/// The end of a chain in [`MountPoints::same_hash`].
const NO_POINT: u32 = u32::MAX;

fn hash_of(path: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one(path)
}

/// Whether mount point `mp` is `path` or a leading part of it, by whole components.
fn covers(mp: &[u8], path: &[u8]) -> bool {
    if mp == b"/" {
        return path.starts_with(b"/");
    }
    path.starts_with(mp) && (path.len() == mp.len() || path[mp.len()] == b'/')
}

/// The `n`-th space-separated field of `line` and what follows it.
fn field(line: &[u8], n: usize) -> Option<(&[u8], &[u8])> {
    let mut rest = line;
    let mut i = 0;
    loop {
        let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
        if i == n {
            return Some((&rest[..end], rest.get(end + 1..).unwrap_or(&[])));
        }
        rest = rest.get(end + 1..)?;
        i += 1;
    }
}

fn number(f: &[u8], what: &str) -> Result<u32, String> {
    let digits = !f.is_empty() && f.iter().all(u8::is_ascii_digit);
    digits
        .then(|| {
            f.iter().try_fold(0u32, |n, d| {
                n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
            })
        })
        .flatten()
        .ok_or_else(|| format!("{what} is not a number"))
}

/// What follows the ` - ` separator in what follows a line's mount point (`OPTS [TAGS…] -
/// FSTYPE SOURCE SUPEROPTS`).
fn after_separator(mut rest: &[u8]) -> Option<&[u8]> {
    loop {
        let (f, after) = field(rest, 0)?;
        if f == b"-" {
            return Some(after);
        }
        if after.is_empty() {
            return None;
        }
        rest = after;
    }
}

/// The filesystem type in what follows a line's mount point.
fn fstype_after(rest: &[u8]) -> Option<&[u8]> {
    field(after_separator(rest)?, 0)
        .map(|(t, _)| t)
        .filter(|t| !t.is_empty())
}

/// What a caller that narrows a table by server reads of an NFS mountinfo line (`nfs` or
/// `nfs4`) before it is parsed: its mount id, its source and its superblock options, as
/// written (escaped).
pub(super) struct NfsLine<'l> {
    pub(super) id: u32,
    pub(super) source: &'l [u8],
    pub(super) super_options: &'l [u8],
}

impl MountPoints {
    /// Scans a mountinfo text (`ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS…] - FSTYPE …`).
    pub fn parse(text: &[u8]) -> Result<Self, LineError> {
        Self::parse_into(text, MountPoints::default())
    }

    /// [`MountPoints::parse`] into the storage of `spare` (what it held is dropped, its
    /// capacity kept): a reader that parses the table again after each mount event allocates
    /// nothing once the table stops growing.
    pub fn parse_into(text: &[u8], spare: MountPoints) -> Result<Self, LineError> {
        let mut out = spare;
        out.clear();
        out.paths.reserve(text.len() / 2);
        out.points.reserve(text.len() / 100);
        let mut start = 0;
        let ends = memchr::memchr_iter(b'\n', text).chain(std::iter::once(text.len()));
        for (idx, end) in ends.enumerate() {
            let line = &text[start..end];
            let err = |reason| LineError {
                line: idx + 1,
                reason,
            };
            let source = out.line(line).map_err(err)?;
            if let Some(source) = source {
                let at =
                    |n: usize| u32::try_from(n).map_err(|_| err("mountinfo is too large".into()));
                out.nfs_lines.push(NfsAt {
                    id: out.points.last().expect("an NFS line is a point").id,
                    number: at(idx + 1)?,
                    start: at(start)?,
                    end: at(end)?,
                    source: at(source)?,
                });
            }
            start = end + 1;
        }
        out.index();
        Ok(out)
    }

    /// The NFS mounts' lines of `text`, which must be the text these points were parsed from:
    /// each with its line number and what a narrowing reader reads of it.
    pub(super) fn nfs_lines<'t>(
        &self,
        text: &'t [u8],
    ) -> impl Iterator<Item = (usize, &'t [u8], NfsLine<'t>)> + use<'_, 't> {
        self.nfs_lines.iter().map(move |at| {
            let line = &text[at.start as usize..at.end as usize];
            let (source, rest) = field(&line[at.source as usize..], 0).unwrap_or_default();
            let super_options = field(rest, 0).map_or(&[][..], |(o, _)| o);
            let nfs = NfsLine {
                id: at.id,
                source,
                super_options,
            };
            (at.number as usize, line, nfs)
        })
    }

    /// Empties it, keeping the capacity of its storage.
    fn clear(&mut self) {
        // Every field named: a field added later cannot be left holding the last table.
        let MountPoints {
            paths,
            points,
            by_hash,
            same_hash,
            nfs_lines,
        } = self;
        paths.clear();
        points.clear();
        by_hash.clear();
        same_hash.clear();
        nfs_lines.clear();
    }

    /// Builds [`MountPoints::by_hash`], each chain in the table's order.
    fn index(&mut self) {
        self.same_hash.clear();
        self.same_hash.resize(self.points.len(), NO_POINT);
        self.by_hash.reserve(self.points.len());
        for i in (0..self.points.len()).rev() {
            let hash = hash_of(self.path_of(&self.points[i]));
            // Fewer than u32::MAX points: their paths' spans are u32 too.
            let i = i as u32;
            if let Some(next) = self.by_hash.insert(hash, i) {
                self.same_hash[i as usize] = next;
            }
        }
    }

    /// The points whose mount point is exactly `path`, in the table's order.
    fn at<'a>(&'a self, path: &'a [u8]) -> impl Iterator<Item = &'a Point> + 'a {
        let mut i = self
            .by_hash
            .get(&hash_of(path))
            .copied()
            .unwrap_or(NO_POINT);
        std::iter::from_fn(move || loop {
            if i == NO_POINT {
                return None;
            }
            let p = &self.points[i as usize];
            i = self.same_hash[i as usize];
            if self.path_of(p) == path {
                return Some(p);
            }
        })
    }

    /// Takes one line; for an NFS mount's, where in it its source starts.
    fn line(&mut self, line: &[u8]) -> Result<Option<usize>, String> {
        // Every line starts with its mount id; anything else is blank or an error below.
        if !line.first().is_some_and(u8::is_ascii_digit) && line.iter().all(u8::is_ascii_whitespace)
        {
            return Ok(None);
        }
        let (id, rest) = field(line, 0).ok_or("too few fields")?;
        let (parent, rest) = field(rest, 0).ok_or("too few fields")?;
        let (mount_point, rest) = field(rest, 2).ok_or("too few fields")?;
        let fstype = fstype_after(rest).ok_or("no ' - ' separator")?;
        let nfs = matches!(fstype, b"nfs" | b"nfs4");
        let start = u32::try_from(self.paths.len()).map_err(|_| "mountinfo is too large")?;
        self.paths.extend_from_slice(&unescaped(mount_point));
        let end = u32::try_from(self.paths.len()).map_err(|_| "mountinfo is too large")?;
        self.points.push(Point {
            id: number(id, "the mount id")?,
            parent: number(parent, "the parent id")?,
            start,
            end,
            nfs,
        });
        // The source is the field after the filesystem type, which is a part of `line`.
        let source = fstype.as_ptr() as usize - line.as_ptr() as usize + fstype.len() + 1;
        Ok(nfs.then_some(source.min(line.len())))
    }

    fn path_of(&self, p: &Point) -> &[u8] {
        &self.paths[p.start as usize..p.end as usize]
    }

    /// Whether any mount is NFS.
    pub fn any_nfs(&self) -> bool {
        self.points.iter().any(|p| p.nfs)
    }

    /// The mount `path` (absolute, clean) lies on, or `None` when no mount point covers it.
    pub fn under(&self, path: &Path) -> Option<Under> {
        let path = path.as_os_str().as_bytes();
        // The leading parts of the path that a mount point covering it can be, longest first
        // (see `covers`): the path, each part before a `/`, then `/` and the empty one.
        let cuts = memchr::memrchr_iter(b'/', path)
            .filter(|i| *i > 0)
            .map(|i| &path[..i]);
        let roots: &[&[u8]] = if path.starts_with(b"/") {
            &[b"/", b""]
        } else {
            &[]
        };
        let at: Vec<&Point> = std::iter::once(path)
            .chain(cuts)
            .chain(roots.iter().copied())
            .map(|part| self.at(part).collect::<Vec<_>>())
            .find(|at| !at.is_empty())?;
        debug_assert!(at.iter().all(|p| covers(self.path_of(p), path)));
        at.iter()
            .rev()
            .find(|p| !at.iter().any(|o| o.parent == p.id))
            .map(|p| Under {
                mount_id: p.id,
                nfs: p.nfs,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::{parse_mountinfo, MountTable};

    const INFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/nfs rw shared:40 - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp
41 40 0:51 / /mnt/nfs/inner rw - tmpfs tmpfs rw
42 1 0:52 / /mnt/nfsx rw - tmpfs tmpfs rw
43 1 0:53 / /mnt/stack rw - nfs4 10.0.2.15:/a rw,vers=4.2,proto=tcp
44 43 0:54 / /mnt/stack rw - nfs 10.0.2.20:/b rw,vers=3,proto=rdma
45 1 0:55 / /mnt/with\\040space rw - nfs4 s:/e rw
";

    fn under(path: &str) -> (u32, bool) {
        let u = MountPoints::parse(INFO.as_bytes())
            .unwrap()
            .under(Path::new(path))
            .unwrap();
        (u.mount_id, u.nfs)
    }

    /// Parsed into the storage of an earlier, larger table, the points are exactly the fresh
    /// parse's: nothing of the earlier table is left to be found.
    #[test]
    fn points_parsed_into_an_earlier_tables_storage_are_a_fresh_parse() {
        let earlier =
            format!("{INFO}50 1 0:60 / /mnt/gone rw - nfs4 10.0.2.9:/g rw,vers=4.2,proto=rdma\n");
        let spare = MountPoints::parse(earlier.as_bytes()).unwrap();
        assert_eq!(spare.under(Path::new("/mnt/gone/x")).unwrap().mount_id, 50);
        let small = "1 0 254:0 / / rw - ext4 /dev/vda rw\n40 1 0:50 / /mnt/nfs rw - nfs4 s:/e rw\n";
        let reused = MountPoints::parse_into(small.as_bytes(), spare).unwrap();
        let fresh = MountPoints::parse(small.as_bytes()).unwrap();
        for path in ["/mnt/gone/x", "/mnt/nfs/a", "/mnt/stack", "/"] {
            assert_eq!(
                reused.under(Path::new(path)),
                fresh.under(Path::new(path)),
                "{path}"
            );
        }
        assert_eq!(reused.under(Path::new("/mnt/gone/x")).unwrap().mount_id, 1);
        let ids = |p: &MountPoints| -> Vec<u32> { p.nfs_lines.iter().map(|l| l.id).collect() };
        assert_eq!(ids(&reused), ids(&fresh));
        assert_eq!(reused.same_hash, fresh.same_hash);
    }

    #[test]
    fn the_longest_mount_point_by_whole_components_and_the_mount_on_top_of_it() {
        assert_eq!(under("/mnt/nfs/a/b"), (40, true));
        assert_eq!(under("/mnt/nfs"), (40, true));
        assert_eq!(under("/mnt/nfs/inner/x"), (41, false));
        // A look-alike name is not below /mnt/nfs.
        assert_eq!(under("/mnt/nfsx/y"), (42, false));
        assert_eq!(under("/mnt/nfsy"), (1, false));
        // Two mounts stacked on one point: the one on top.
        assert_eq!(under("/mnt/stack/d"), (44, true));
        // Escaped mount points compare as the kernel's paths.
        assert_eq!(under("/mnt/with space/d"), (45, true));
    }

    #[test]
    fn the_answer_is_the_mount_tables_topmost_mount() {
        let table = MountTable::join(parse_mountinfo(INFO.as_bytes()).unwrap(), Vec::new());
        let points = MountPoints::parse(INFO.as_bytes()).unwrap();
        for m in &table.mounts {
            let top = table.topmost_at(m.info.mount_point()).unwrap();
            let u = points.under(m.info.mount_point()).unwrap();
            assert_eq!((u.mount_id, u.nfs), (top.info.mount_id, top.is_nfs()));
        }
        // Below a mount point too: the table's `under` gives the same mount.
        for path in [
            "/mnt/nfs/a/b",
            "/mnt/nfs/inner/x",
            "/mnt/nfsy",
            "/mnt/stack/d",
        ] {
            let u = points.under(Path::new(path)).unwrap();
            let m = table.under(Path::new(path)).unwrap();
            assert_eq!(u.mount_id, m.info.mount_id, "{path}");
        }
        assert!(points.any_nfs());
        let nfs: Vec<(u32, &[u8])> = points
            .nfs_lines(INFO.as_bytes())
            .map(|(_, line, l)| {
                assert!(line.ends_with(l.super_options) && l.super_options.starts_with(b"rw"));
                (l.id, l.source)
            })
            .collect();
        let want: Vec<(u32, &[u8])> = table
            .mounts
            .iter()
            .filter(|m| m.is_nfs())
            .map(|m| (m.info.mount_id, m.info.source().as_bytes()))
            .collect();
        assert_eq!(nfs, want);
    }

    /// The answer by looking up each leading part of the path is the answer of comparing the
    /// path with every mount point: the longest that covers it, the topmost there.
    #[test]
    fn the_looked_up_mount_is_the_longest_covering_one_of_all() {
        let linear = |p: &MountPoints, path: &[u8]| {
            let longest = p
                .points
                .iter()
                .filter(|x| covers(p.path_of(x), path))
                .map(|x| x.end - x.start)
                .max()?;
            let at: Vec<&Point> = p
                .points
                .iter()
                .filter(|x| x.end - x.start == longest && covers(p.path_of(x), path))
                .collect();
            at.iter()
                .rev()
                .find(|x| !at.iter().any(|o| o.parent == x.id))
                .map(|x| x.id)
        };
        let text = format!(
            "{INFO}50 1 0:60 / /a rw - ext4 /dev/x rw\n51 50 0:61 / /a/b rw - nfs4 s:/e rw\n52 1 0:62 / /a/b/ rw - tmpfs t rw\n53 51 0:63 / /a/b rw - tmpfs t rw\n"
        );
        let p = MountPoints::parse(text.as_bytes()).unwrap();
        let mut asked = 0;
        for path in [
            "/",
            "",
            "/a",
            "/a/",
            "/a/b",
            "/a/b/",
            "/a/b/c",
            "/a/bc",
            "/mnt/nfs/inner",
            "/mnt/nfs/inner/x",
            "/mnt/stack",
            "/mnt/stack/d",
            "/mnt/with space/d",
            "/mnt/nfsx",
            "mnt/nfs",
            "//a",
        ] {
            let got = p.under(Path::new(path)).map(|u| u.mount_id);
            assert_eq!(got, linear(&p, path.as_bytes()), "{path:?}");
            asked += usize::from(got.is_some());
        }
        assert!(asked > 10);
        // With no root mount, and with a line whose mount point is empty.
        let p =
            MountPoints::parse(b"40 1 0:50 / /m rw - nfs4 s:/e rw\n41 1 0:51 /  rw - tmpfs t rw\n")
                .unwrap();
        for path in ["/m/x", "/x", "", "x"] {
            let got = p.under(Path::new(path)).map(|u| u.mount_id);
            assert_eq!(got, linear(&p, path.as_bytes()), "{path:?}");
        }
    }

    #[test]
    fn a_table_without_a_root_mount_covers_nothing_else_and_bad_lines_are_errors() {
        let p = MountPoints::parse(b"40 1 0:50 / /mnt/nfs rw - nfs4 s:/e rw\n").unwrap();
        assert!(p.under(Path::new("/srv/x")).is_none());
        let e = MountPoints::parse(
            b"1 0 254:0 / / rw - ext4 /dev/vda rw\nx 1 0:50 / /m rw - nfs4 s:/e rw\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(MountPoints::parse(b"1 0 254:0 / / rw ext4 /dev/vda rw\n").is_err());
    }
}
