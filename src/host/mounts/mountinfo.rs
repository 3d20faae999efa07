//! `/proc/self/mountinfo`: one line a mount, with its mount id and parent, its mount point, its
//! filesystem type, source and superblock options.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::errors::LineError;
use super::escape::{lossy, unescaped};
use super::fields::Fields;
use super::options::{option_in, KeptMemo, KEPT_SUPER_OPTIONS};

/// One line of `/proc/self/mountinfo`. Its fields but the ids are kept one after another in
/// one buffer, unescaped (the text fields made text lossily), and read through the accessors:
/// one allocation a line, where a node has thousands of lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfoEntry {
    pub mount_id: u32,
    pub parent_id: u32,
    /// The fields in [`Field`] order; the root and mount point are here when both are UTF-8.
    text: Box<str>,
    /// The root and then the mount point when either is not UTF-8 (a path is bytes), with
    /// where the root ends; their spans in `text` are empty then.
    raw_paths: Option<(Box<[u8]>, u32)>,
    /// Where each field ends in `text`.
    ends: [u32; FIELDS],
}

/// A path of a mountinfo line, shown as [`Path::display`] shows it.
#[derive(Debug, Clone, Copy)]
pub enum ShownPath<'a> {
    Text(&'a str),
    Path(&'a Path),
}

impl std::fmt::Display for ShownPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShownPath::Text(t) => f.write_str(t),
            ShownPath::Path(p) => p.display().fmt(f),
        }
    }
}

/// The fields of a mountinfo line kept in [`MountInfoEntry::text`], in order.
#[derive(Debug, Clone, Copy)]
enum Field {
    DeviceNumber,
    Root,
    MountPoint,
    MountOptions,
    Tags,
    Fstype,
    Source,
    SuperOptions,
}

const FIELDS: usize = 8;

impl MountInfoEntry {
    fn text(&self, f: Field) -> &str {
        let i = f as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start as usize..self.ends[i] as usize]
    }

    fn path(&self, f: Field) -> &Path {
        match &self.raw_paths {
            None => Path::new(self.text(f)),
            Some((raw, root_end)) => {
                let (root, mount_point) = raw.split_at(*root_end as usize);
                Path::new(OsStr::from_bytes(match f {
                    Field::Root => root,
                    _ => mount_point,
                }))
            }
        }
    }

    /// `major:minor` of the filesystem.
    pub fn device_number(&self) -> &str {
        self.text(Field::DeviceNumber)
    }

    /// The directory of the filesystem that forms the root of this mount.
    pub fn root(&self) -> &Path {
        self.path(Field::Root)
    }

    pub fn mount_point(&self) -> &Path {
        self.path(Field::MountPoint)
    }

    /// The mount point for messages: as [`Path::display`] shows it, written straight when it is
    /// UTF-8 (as nearly every one is) rather than through the lossy conversion, which costs a
    /// check of a node with thousands of mounts more than the rest of its message.
    pub fn mount_point_shown(&self) -> ShownPath<'_> {
        match self.raw_paths {
            None => ShownPath::Text(self.text(Field::MountPoint)),
            Some(_) => ShownPath::Path(self.mount_point()),
        }
    }

    /// Per-mount options (`rw,nosuid,relatime`).
    pub fn mount_options(&self) -> &str {
        self.text(Field::MountOptions)
    }

    /// The optional tagged fields (`shared:1`, `master:2`, …), one by one.
    pub fn tags(&self) -> impl Iterator<Item = &str> {
        self.text(Field::Tags).split(' ').filter(|t| !t.is_empty())
    }

    pub fn fstype(&self) -> &str {
        self.text(Field::Fstype)
    }

    /// The mount source (for NFS `server:/path`), unescaped.
    pub fn source(&self) -> &str {
        self.text(Field::Source)
    }

    /// The [`KEPT_SUPER_OPTIONS`] of the per-superblock options, comma-separated, in the
    /// line's order (for NFS: `vers=`, `proto=`, `port=` and `addr=`).
    pub fn super_options(&self) -> &str {
        self.text(Field::SuperOptions)
    }

    /// The value of `key=` in the superblock options.
    pub fn super_option(&self, key: &str) -> Option<&str> {
        debug_assert!(
            KEPT_SUPER_OPTIONS.contains(&key),
            "super option {key} is not kept by the parser: add it to KEPT_SUPER_OPTIONS"
        );
        option_in(self.super_options(), key)
    }
}

/// Builds a [`MountInfoEntry`]'s buffer field by field, in [`Field`] order.
#[derive(Debug, Default)]
struct EntryText {
    text: String,
    ends: [u32; FIELDS],
    n: usize,
}

impl EntryText {
    fn end_field(&mut self) -> Result<(), String> {
        self.ends[self.n] = u32::try_from(self.text.len()).map_err(|_| "the line is too long")?;
        self.n += 1;
        Ok(())
    }

    fn push(&mut self, field: &str) -> Result<(), String> {
        self.text.push_str(field);
        self.end_field()
    }
}

/// Parses mountinfo. Every line must have the documented shape
/// `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS…] - FSTYPE SOURCE SUPEROPTS`.
pub fn parse_mountinfo(text: &[u8]) -> Result<Vec<MountInfoEntry>, LineError> {
    let mut entries = Vec::new();
    let mut parser = MountInfoParser::default();
    for (idx, line) in text.split(|b| *b == b'\n').enumerate() {
        let entry = parser.line(line).map_err(|reason| LineError {
            line: idx + 1,
            reason,
        })?;
        entries.extend(entry);
    }
    Ok(entries)
}

/// One line of mountinfo; `None` for a blank line.
pub fn parse_mountinfo_line(line: &[u8]) -> Result<Option<MountInfoEntry>, String> {
    MountInfoParser::default().line(line)
}

/// [`parse_mountinfo_line`] for the lines of one file, which remembers the last superblock
/// options it filtered: the thousands of PV mounts of a node mostly have the same.
#[derive(Debug, Default)]
pub(crate) struct MountInfoParser {
    super_options: KeptMemo,
}

impl MountInfoParser {
    pub(crate) fn line(&mut self, line: &[u8]) -> Result<Option<MountInfoEntry>, String> {
        parse_mountinfo_line_with(line, &mut self.super_options)
    }
}

fn parse_mountinfo_line_with(
    line: &[u8],
    memo: &mut KeptMemo,
) -> Result<Option<MountInfoEntry>, String> {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(None);
    }
    let fields = Fields::of(line);
    let fields = fields.as_slice();
    let sep = fields
        .iter()
        .position(|f| *f == b"-")
        .ok_or("no ' - ' separator")?;
    if sep < 6 || fields.len() < sep + 3 {
        return Err("too few fields".into());
    }
    let number = |f: &[u8], what: &str| -> Result<u32, String> {
        std::str::from_utf8(f)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("{what} is not a number"))
    };
    let (mount_id, parent_id) = (
        number(fields[0], "the mount id")?,
        number(fields[1], "the parent id")?,
    );
    let mut t = EntryText {
        text: String::with_capacity(line.len()),
        ..EntryText::default()
    };
    t.push(&lossy(&unescaped(fields[2])))?;
    let (root, mount_point) = (unescaped(fields[3]), unescaped(fields[4]));
    let raw_paths = match (
        std::str::from_utf8(&root),
        std::str::from_utf8(&mount_point),
    ) {
        (Ok(root), Ok(mount_point)) => {
            t.push(root)?;
            t.push(mount_point)?;
            None
        }
        _ => {
            t.end_field()?;
            t.end_field()?;
            let root_end = u32::try_from(root.len()).map_err(|_| "the root is too long")?;
            Some(([&root[..], &mount_point[..]].concat().into(), root_end))
        }
    };
    t.push(&lossy(&unescaped(fields[5])))?;
    for (i, f) in fields[6..sep].iter().enumerate() {
        if i > 0 {
            t.text.push(' ');
        }
        t.text.push_str(&lossy(&unescaped(f)));
    }
    t.end_field()?;
    t.push(&lossy(&unescaped(fields[sep + 1])))?;
    t.push(&lossy(&unescaped(fields[sep + 2])))?;
    if let Some(f) = fields.get(sep + 3) {
        t.text
            .push_str(memo.kept_str(&unescaped(f), &KEPT_SUPER_OPTIONS));
    }
    t.end_field()?;
    Ok(Some(MountInfoEntry {
        mount_id,
        parent_id,
        text: t.text.into_boxed_str(),
        raw_paths,
        ends: t.ends,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::options::option_value;
    use crate::host::mounts::samples::*;
    use std::path::Path;

    #[test]
    fn options_are_found_as_in_a_split_list() {
        for list in [
            "",
            ",",
            "a=1",
            "rw,vers=4.2,proto=rdma,port=",
            "x,,port=1,port=2,=3",
            "vers",
        ] {
            for key in ["vers", "port", "proto", "a", "x", ""] {
                let want = option_value(list.split(','), key);
                assert_eq!(option_in(list, key), want, "{list:?} {key:?}");
                let filtered = option_value(list.split(',').filter(|o| !o.is_empty()), key);
                assert_eq!(option_in(list, key), filtered, "{list:?} {key:?}");
            }
        }
    }

    #[test]
    fn paths_that_are_not_utf8_are_kept_as_bytes_beside_the_text_fields() {
        let line = b"36 25 0:51 /r\\377 /mnt/\\376x\\040y rw shared:1 master:2 - nfs4 srv:/e\\377 rw,vers=4.2,proto=rdma";
        let e = parse_mountinfo_line(line).unwrap().unwrap();
        assert_eq!(e.root().as_os_str().as_bytes(), b"/r\xff");
        assert_eq!(e.mount_point().as_os_str().as_bytes(), b"/mnt/\xfex y");
        assert_eq!(
            (e.device_number(), e.mount_options(), e.fstype()),
            ("0:51", "rw", "nfs4")
        );
        assert_eq!(e.tags().collect::<Vec<_>>(), ["shared:1", "master:2"]);
        assert_eq!(e.source(), "srv:/e\u{fffd}");
        assert_eq!(e.super_options(), "vers=4.2,proto=rdma");
        // Only the mount point not UTF-8: the root is still read right.
        let e = parse_mountinfo_line(b"1 0 0:1 / /\\377 rw - tmpfs none rw")
            .unwrap()
            .unwrap();
        assert_eq!(
            (e.root(), e.mount_point().as_os_str().as_bytes()),
            (Path::new("/"), &b"/\xff"[..])
        );
    }

    #[test]
    fn mountinfo_lines_parse() {
        let e = parse_mountinfo(MOUNTINFO_TEXT.as_bytes()).unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].mount_id, 22);
        assert_eq!(e[0].tags().collect::<Vec<_>>(), ["shared:1"]);
        assert_eq!(e[2].fstype(), "nfs4");
        assert_eq!(e[2].source(), "10.0.2.15:/export");
        assert_eq!(e[2].super_option("addr"), Some("10.0.2.15"));
        assert_eq!(e[2].super_option("proto"), Some("rdma"));
        assert_eq!(e[3].mount_point(), Path::new("/mnt/a b"));
        assert_eq!(e[3].tags().count(), 0);
        let e = parse_mountinfo(b"7 1 0:3 / /x rw shared:4 master:2 - nfs4 s:/ rw").unwrap();
        assert_eq!(e[0].tags().collect::<Vec<_>>(), ["shared:4", "master:2"]);
        // More fields than fit on the stack.
        let tags: Vec<String> = (0..20).map(|i| format!("t:{i}")).collect();
        let line = format!(
            "8 1 0:3 / /x rw {} - nfs4 s:/ rw,addr=1.2.3.4",
            tags.join(" ")
        );
        let e = parse_mountinfo(line.as_bytes()).unwrap();
        assert_eq!(e[0].tags().collect::<Vec<_>>(), tags);
        assert_eq!(e[0].super_option("addr"), Some("1.2.3.4"));
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
}
