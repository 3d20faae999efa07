//! The mount table as the kernel shows it: `/proc/self/mountinfo` and `/proc/self/mountstats`.
//!
//! mountinfo has a mount id per line but no transport; mountstats has the transport (`xprt:`
//! lines) but no mount id. Both are produced by the same walk over the namespace's mount list,
//! so the n-th mount of a given mount point and device in one is the n-th in the other; that is
//! how [`MountTable`] pairs them. Paths in both are escaped by the kernel as 3-digit octal
//! (`\040` for a space, `\011` tab, `\012` newline, `\134` backslash) and are decoded here, byte
//! for byte, so mount points that are not UTF-8 still compare correctly.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::host::{HostError, Root};

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
    unescaped(field).into_owned()
}

/// [`unescape`], borrowing the field when it has no backslash (nearly every field).
fn unescaped(field: &[u8]) -> Cow<'_, [u8]> {
    let Some(first) = memchr::memchr(b'\\', field) else {
        return Cow::Borrowed(field);
    };
    let mut out = Vec::with_capacity(field.len());
    out.extend_from_slice(&field[..first]);
    let mut i = first;
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
    Cow::Owned(out)
}

fn path_of(field: &[u8]) -> PathBuf {
    PathBuf::from(OsString::from_vec(unescaped(field).into_owned()))
}

fn text_of(field: &[u8]) -> String {
    match unescaped(field) {
        Cow::Borrowed(b) => lossy(b).into_owned(),
        Cow::Owned(v) => String::from_utf8(v)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// `String::from_utf8_lossy`, with the check for valid text (nearly all of it) first: that
/// is several times cheaper on the short fields of a mount table.
fn lossy(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

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

/// The value of `key=` in a list of `key=value` / `flag` options.
pub fn option_value<'a>(mut options: impl Iterator<Item = &'a str>, key: &str) -> Option<&'a str> {
    options.find_map(|o| o.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

/// [`option_value`] of a comma-separated list, walked on its bytes (asked for every option of
/// every mount, several times a check).
fn option_in<'a>(list: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = list;
    loop {
        let comma = rest.as_bytes().iter().position(|&b| b == b',');
        let option = &rest[..comma.unwrap_or(rest.len())];
        if let Some(value) = option
            .strip_prefix(key)
            .and_then(|after| after.strip_prefix('='))
        {
            return Some(value);
        }
        rest = &rest[comma? + 1..];
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

/// The space-separated fields of a line: on the stack, unless there are more than a kernel's
/// lines have (a mountinfo line with many tags).
struct Fields<'l> {
    few: [&'l [u8]; 16],
    n: usize,
    many: Vec<&'l [u8]>,
}

impl<'l> Fields<'l> {
    fn of(line: &'l [u8]) -> Self {
        let mut f = Fields {
            few: [&[]; 16],
            n: 0,
            many: Vec::new(),
        };
        // Found with memchr: a mount point or an option list is a long field.
        let mut rest = line;
        while !rest.is_empty() {
            let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
            let field = &rest[..end];
            rest = rest.get(end + 1..).unwrap_or(&[]);
            if field.is_empty() {
                continue;
            }
            if f.n < f.few.len() {
                f.few[f.n] = field;
                f.n += 1;
            } else {
                if f.many.is_empty() {
                    f.many.extend_from_slice(&f.few);
                }
                f.many.push(field);
            }
        }
        f
    }

    fn as_slice(&self) -> &[&'l [u8]] {
        if self.many.is_empty() {
            &self.few[..self.n]
        } else {
            &self.many
        }
    }
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

/// One transport of an NFS mount: an `xprt:` line of mountstats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xprt {
    /// The whole line, trimmed, for evidence.
    pub line: String,
}

impl Xprt {
    /// `rdma`, `tcp`, `udp`, `local`, … (the word after `xprt:`).
    pub fn proto(&self) -> &str {
        self.line
            .strip_prefix("xprt:")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("")
    }

    pub fn is_rdma(&self) -> bool {
        is_rdma_netid(self.proto())
    }
}

/// Whether an RPC netid / `proto=` value is RDMA.
pub fn is_rdma_netid(netid: &str) -> bool {
    matches!(netid, "rdma" | "rdma6")
}

/// The superblock options of a mountinfo line that are kept: the ones nfs-gds reads (the
/// options the checks read, and `addr=`, the server address the kernel uses). A node with
/// thousands of NFS mounts would otherwise hold some 200 bytes more per mount; a reader of
/// another option adds it here.
pub const KEPT_SUPER_OPTIONS: [&str; 4] = ["vers", "proto", "port", "addr"];

/// The options of an `opts:` line that a mount keeps: the ones the checks read. The rest of
/// the line (a dozen more options) is dropped, for a node with thousands of NFS mounts.
pub const KEPT_OPTIONS: [&str; 3] = ["vers", "proto", "port"];

/// What a mount keeps of its mountstats record: the transports and the options the checks read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountStats {
    /// The [`KEPT_OPTIONS`] of the `opts:` line, comma-separated, in the line's order (NFS
    /// only).
    pub opts: String,
    /// Every `xprt:` line, in order (several with `nconnect=`).
    pub xprts: Vec<Xprt>,
}

impl MountStats {
    pub fn opt(&self, key: &str) -> Option<&str> {
        debug_assert!(
            KEPT_OPTIONS.contains(&key),
            "mountstats option {key} is not kept by the parser: add it to KEPT_OPTIONS"
        );
        option_in(&self.opts, key)
    }
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
    pub stats: MountStats,
}

impl MountStatsRecord {
    pub fn opt(&self, key: &str) -> Option<&str> {
        self.stats.opt(key)
    }
}

/// Parses mountstats. A record starts at each `device` (or `no device`) line; indented lines
/// belong to the record before them. Field counts after `xprt: <proto>` vary between kernels
/// and vendor stacks and are not interpreted.
pub fn parse_mountstats(text: &[u8]) -> Vec<MountStatsRecord> {
    let mut p = MountStatsParser::default();
    let mut records = Vec::new();
    p.feed_lines(text, |rec| records.push(rec));
    records.extend(p.finish());
    records
}

/// mountstats one line at a time, so a reader can stream the file: with thousands of NFS mounts
/// it runs to tens of megabytes (some 80 lines of per-operation counters per mount), of which
/// only the `device`, `opts:` and `xprt:` lines are kept. Each record is handed out as soon as
/// the next one starts.
#[derive(Debug, Default)]
pub struct MountStatsParser {
    current: Option<MountStatsRecord>,
    /// The last `opts:` line filtered: the PV mounts of a node mostly have the same.
    opts: KeptMemo,
}

impl MountStatsParser {
    /// Takes one line (without its newline); returns the record it completed, if it starts the
    /// next one.
    pub fn feed(&mut self, line: &[u8]) -> Option<MountStatsRecord> {
        // Only a record's first line starts unindented; the counters under it are most lines,
        // and are told apart by their first bytes.
        if matches!(line.first(), Some(b'd' | b'n'))
            && (line.starts_with(b"device ") || line.starts_with(b"no device "))
        {
            if let Some(next) = parse_device_line(line) {
                return self.current.replace(next).map(done);
            }
        }
        let current = self.current.as_mut()?;
        // The kernel indents with one tab: a line whose second byte is no space is decided by
        // it, without walking the run of spaces the counter lines have.
        let rest = match line {
            [b'\t', second, ..] if !second.is_ascii_whitespace() => &line[1..],
            _ => line.trim_ascii_start(),
        };
        match rest.first() {
            Some(b'o') => {
                if let Some(opts) = rest.strip_prefix(b"opts:") {
                    current.stats.opts = self.opts.kept(opts.trim_ascii(), &KEPT_OPTIONS);
                }
            }
            Some(b'x') if rest.starts_with(b"xprt:") => {
                let line = lossy(rest);
                let line = line.trim_end();
                if line["xprt:".len()..].split_whitespace().next().is_some() {
                    // Room for exactly one at first: most mounts have one transport.
                    current.stats.xprts.reserve_exact(1);
                    current.stats.xprts.push(Xprt {
                        line: line.to_string(),
                    });
                }
            }
            _ => {}
        }
        None
    }

    /// Takes whole lines (each ended by `\n`, the last one maybe not), handing `each` record
    /// they complete; the same as [`MountStatsParser::feed`] line by line, faster. A line that
    /// matters (`device …`, `no device …`, `opts:`, `xprt:`) has a `d`, `o` or `x`; the
    /// per-operation counters that make up most of the file (upper-case names and numbers)
    /// have none, so `memchr3` skips them by the kilobyte and only the lines with one of those
    /// bytes are fed.
    pub fn feed_lines(&mut self, text: &[u8], mut each: impl FnMut(MountStatsRecord)) {
        let mut pos = 0;
        while let Some(hit) = memchr::memchr3(b'd', b'o', b'x', &text[pos..]) {
            let hit = pos + hit;
            let start = memchr::memrchr(b'\n', &text[pos..hit]).map_or(pos, |i| pos + i + 1);
            let end = memchr::memchr(b'\n', &text[hit..]).map_or(text.len(), |i| hit + i);
            if let Some(rec) = self.feed(&text[start..end]) {
                each(rec);
            }
            pos = end + 1;
            if pos >= text.len() {
                break;
            }
        }
    }

    /// The last record, at the end of the file.
    pub fn finish(self) -> Option<MountStatsRecord> {
        self.current.map(done)
    }
}

/// A record complete: no room is kept for transports that never came (with `nconnect=`, the
/// vector grew by doubling).
fn done(mut rec: MountStatsRecord) -> MountStatsRecord {
    rec.stats.xprts.shrink_to_fit();
    rec
}

/// The last list of options [`kept`] filtered, and what it kept.
#[derive(Debug, Default)]
struct KeptMemo {
    input: Vec<u8>,
    output: String,
}

impl KeptMemo {
    /// [`kept`], reusing the last answer for the same list.
    fn kept(&mut self, options: &[u8], keys: &[&str]) -> String {
        self.kept_str(options, keys).to_string()
    }

    /// [`KeptMemo::kept`], borrowed.
    fn kept_str(&mut self, options: &[u8], keys: &[&str]) -> &str {
        if self.input != options {
            self.input.clear();
            self.input.extend_from_slice(options);
            self.output = kept(options, keys);
        }
        &self.output
    }
}

/// The options of a comma-separated list whose key is one of `keys`, in order, in one walk
/// over the bytes (the lists are long, their options short, and the kept ones few).
fn kept(options: &[u8], keys: &[&str]) -> String {
    let mut out = String::new();
    let mut start = 0;
    loop {
        let rest = &options[start..];
        let len = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
        let o = &rest[..len];
        let key = o.iter().position(|&b| b == b'=').map_or(o, |i| &o[..i]);
        if keys
            .iter()
            .any(|k| k.len() == key.len() && k.as_bytes() == key)
        {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&lossy(o));
        }
        if len == rest.len() {
            return out;
        }
        start += len + 1;
    }
}

/// `device DEV mounted on MNT with fstype TYPE [statvers=V]` or `no device mounted on …`.
fn parse_device_line(line: &[u8]) -> Option<MountStatsRecord> {
    let words = Fields::of(line);
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
                stats: MountStats::default(),
            })
        }
        _ => None,
    }
}

/// A mount: its mountinfo line and, when one could be paired, what it keeps of its mountstats
/// record (whose device and mount point are the mountinfo line's: that is how they paired).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub info: MountInfoEntry,
    pub stats: Option<MountStats>,
}

impl Mount {
    /// A mountinfo line before mountstats is paired with it.
    fn unpaired(info: MountInfoEntry) -> Self {
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
    fn of(mut mounts: Vec<Mount>, paired: Vec<Option<MountStats>>) -> Self {
        for (m, stats) in mounts.iter_mut().zip(paired) {
            m.stats = stats;
        }
        MountTable { mounts }
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
            .filter(|m| m.info.mount_point() == path)
            .collect();
        at.iter()
            .rev()
            .find(|m| !at.iter().any(|o| o.info.parent_id == m.info.mount_id))
            .copied()
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
struct Pairing<'a> {
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
    fn new(mounts: &'a [Mount]) -> Self {
        Pairing {
            mounts,
            in_order: Some(0),
            index: None,
            paired: vec![None; mounts.len()],
        }
    }

    /// Gives `rec` to the first line of its mount point and source that has none; a record
    /// without one is dropped.
    fn offer(&mut self, rec: MountStatsRecord) {
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

    fn into_paired(self) -> Vec<Option<MountStats>> {
        self.paired
    }
}

/// Streams mountinfo below the root through `each` line's entry.
fn stream_mountinfo_at(
    root: &Root,
    rel: &str,
    mut each: impl FnMut(MountInfoEntry),
) -> Result<(), MountsError> {
    let mut lines = root.read_lines(rel)?.ok_or_else(|| MountsError::Missing {
        path: root.join(rel),
    })?;
    let mut parser = MountInfoParser::default();
    while let Some(line) = lines.next_line()? {
        match parser.line(line) {
            Ok(entry) => entry.into_iter().for_each(&mut each),
            Err(reason) => {
                return Err(MountsError::Parse {
                    path: lines.path().to_owned(),
                    line: lines.number(),
                    reason,
                })
            }
        }
    }
    Ok(())
}

/// Streams mountstats below the root through `each` record; an absent file gives none
/// (containers sometimes hide it), which leaves transports to the `proto=` options. Through the
/// root's reader: confined to the root, capped, never a FIFO, and recorded for `collect` like
/// every other read.
fn stream_mountstats_at(
    root: &Root,
    rel: &str,
    mut each: impl FnMut(MountStatsRecord),
) -> Result<(), MountsError> {
    let Some(mut lines) = root.read_lines(rel)? else {
        return Ok(());
    };
    let mut parser = MountStatsParser::default();
    while let Some(block) = lines.next_lines()? {
        parser.feed_lines(block, &mut each);
    }
    if let Some(rec) = parser.finish() {
        each(rec);
    }
    Ok(())
}

/// Reads and parses mountstats below the root (streamed; see [`read_mount_table`] for the
/// table, which keeps only what the mounts need).
pub fn read_mountstats(root: &Root) -> Result<Vec<MountStatsRecord>, MountsError> {
    let mut records = Vec::new();
    stream_mountstats_at(root, MOUNTSTATS, |rec| records.push(rec))?;
    Ok(records)
}

/// mountinfo, then mountstats streamed and paired record by record.
fn read_table_at(root: &Root, info: &str, stats: &str) -> Result<MountTable, MountsError> {
    let mut mounts = Vec::new();
    stream_mountinfo_at(root, info, |e| mounts.push(Mount::unpaired(e)))?;
    // Grown by doubling: up to half of it room for mounts that never came.
    mounts.shrink_to_fit();
    let mut pairing = Pairing::new(&mounts);
    stream_mountstats_at(root, stats, |rec| pairing.offer(rec))?;
    let paired = pairing.into_paired();
    Ok(MountTable::of(mounts, paired))
}

/// Both files, paired.
pub fn read_mount_table(root: &Root) -> Result<MountTable, MountsError> {
    read_table_at(root, MOUNTINFO, MOUNTSTATS)
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
        let table = read_table_at(root, INIT_MOUNTINFO, INIT_MOUNTSTATS)?;
        return Ok((table, root.join(INIT_MOUNTINFO)));
    }
    Ok((read_mount_table(root)?, root.join(MOUNTINFO)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::table;

    const CAPTURE: &str = include_str!("../../../tests/fixtures/mountstats.txt");

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
        assert!(recs[0].stats.opts.is_empty() && recs[0].stats.xprts.is_empty());
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
            assert_eq!(r.stats.xprts.len(), 1);
            assert!(r.stats.xprts[0].is_rdma());
            assert!(r.stats.xprts[0].line.starts_with("xprt:\trdma 0 0 1"));
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

    /// The parser and pairing as they were when mountstats was read whole, kept to show that
    /// the streamed table is the same table.
    mod before {
        use super::super::{path_of, text_of, MountInfoEntry};
        use std::collections::HashMap;
        use std::path::{Path, PathBuf};

        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Record {
            pub device: Option<String>,
            pub mount_point: PathBuf,
            pub opts: String,
            /// (proto, line) of each `xprt:` line.
            pub xprts: Vec<(String, String)>,
        }

        pub fn parse_mountstats(text: &[u8]) -> Vec<Record> {
            let mut records: Vec<Record> = Vec::new();
            for line in text.split(|b| *b == b'\n') {
                if line.starts_with(b"device ") || line.starts_with(b"no device ") {
                    if let Some(rec) = device_line(line) {
                        records.push(rec);
                        continue;
                    }
                }
                let Some(current) = records.last_mut() else {
                    continue;
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
                        current.xprts.push((proto.to_string(), trimmed.to_string()));
                    }
                }
            }
            records
        }

        fn device_line(line: &[u8]) -> Option<Record> {
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
                [b"mounted", b"on", mnt, b"with", b"fstype", _fstype, ..] => Some(Record {
                    device,
                    mount_point: path_of(mnt),
                    opts: String::new(),
                    xprts: Vec::new(),
                }),
                _ => None,
            }
        }

        /// The superblock options of each mountinfo line, whole, as they were kept.
        pub fn super_options(text: &[u8]) -> Vec<String> {
            text.split(|b| *b == b'\n')
                .filter(|l| !l.iter().all(|b| b.is_ascii_whitespace()))
                .map(|l| {
                    let fields: Vec<&[u8]> =
                        l.split(|b| *b == b' ').filter(|f| !f.is_empty()).collect();
                    let sep = fields.iter().position(|f| *f == b"-").unwrap();
                    fields.get(sep + 3).map(|f| text_of(f)).unwrap_or_default()
                })
                .collect()
        }

        pub fn join(
            infos: Vec<MountInfoEntry>,
            stats: Vec<Record>,
        ) -> Vec<(MountInfoEntry, Option<Record>)> {
            const NONE: usize = usize::MAX;
            let picks: Vec<usize> = {
                let mut head: HashMap<(&Path, Option<&str>), usize> = HashMap::new();
                let mut next = vec![NONE; stats.len()];
                for (i, s) in stats.iter().enumerate().rev() {
                    let key = (s.mount_point.as_path(), s.device.as_deref());
                    next[i] = head.insert(key, i).unwrap_or(NONE);
                }
                infos
                    .iter()
                    .map(|info| {
                        let key = (info.mount_point(), Some(info.source()));
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
            let mut stats: Vec<Option<Record>> = stats.into_iter().map(Some).collect();
            infos
                .into_iter()
                .zip(picks)
                .map(|(info, pick)| (info, stats.get_mut(pick).and_then(Option::take)))
                .collect()
        }
    }

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

    const CAPTURE_MOUNTINFO: &str = include_str!("../../../tests/fixtures/mountinfo.txt");

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
            "vers=4.2,proto=rdma,port=20049"
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

    /// Random mountstats-like text, line by line from pieces that matter and pieces that do
    /// not (with the letters the fast scan looks for in odd places).
    fn random_mountstats(seed: u64) -> Vec<u8> {
        const PIECES: &[&str] = &[
            "device srv:/e mounted on /mnt/a with fstype nfs4 statvers=1.1",
            "device srv:/e mounted on /mnt/b with fstype nfs4",
            "no device mounted on /x with fstype none",
            "device broken line",
            "\topts:\trw,vers=4.2,proto=rdma,port=20049",
            "\topts:\trw,vers=3,proto=tcp",
            "opts: vers=4.1,proto=rdma6",
            "\txprt:\trdma 0 0 1 0",
            "  \t xprt:\ttcp 0 0 2",
            "\txprt:",
            "\txprt:\t",
            "xprt:udp 1",
            "\t        NULL: 1 1 0 40 24 43 4 49 0",
            "\t        READ: 1 1 0 192 132 5 4 10 0",
            "\tper-op statistics",
            "\tcaps:\tcaps=0xdffbc0bf,wtmult=512,dtsize=262144",
            "\tnfsv4:\tbm0=0xfdffbfff,acl=0x3,sessions,pnfs=not configured",
            "\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)",
            "\t xopts: not an option line",
            "odd text with o, x and d",
            "",
            "   ",
            "\t",
        ];
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut text = Vec::new();
        for _ in 0..(next() % 60) {
            text.extend_from_slice(PIECES[(next() % PIECES.len() as u64) as usize].as_bytes());
            text.push(b'\n');
        }
        if next() % 2 == 0 {
            text.pop();
        }
        text
    }

    #[test]
    fn the_fast_scan_keeps_what_the_line_by_line_parser_of_before_kept() {
        let (mut xprts_seen, mut opts_seen) = (0, 0);
        for seed in 0..2000 {
            let text = random_mountstats(seed);
            let now: Vec<_> = parse_mountstats(&text)
                .into_iter()
                .map(|r| {
                    let xprts = r.stats.xprts.iter();
                    let xprts = xprts.map(|x| (x.proto().to_string(), x.line.clone()));
                    let opts: Vec<_> = KEPT_OPTIONS
                        .iter()
                        .map(|k| r.opt(k).map(str::to_string))
                        .collect();
                    (r.device, r.mount_point, opts, xprts.collect::<Vec<_>>())
                })
                .collect();
            let want: Vec<_> = before::parse_mountstats(&text)
                .into_iter()
                .map(|r| {
                    let opts: Vec<_> = KEPT_OPTIONS
                        .iter()
                        .map(|k| {
                            option_value(r.opts.split(',').filter(|o| !o.is_empty()), k)
                                .map(str::to_string)
                        })
                        .collect();
                    (r.device, r.mount_point, opts, r.xprts)
                })
                .collect();
            assert_eq!(now, want, "seed {seed}: {}", String::from_utf8_lossy(&text));
            xprts_seen += now.iter().map(|r| r.3.len()).sum::<usize>();
            opts_seen += now
                .iter()
                .filter(|r| r.2.iter().any(Option::is_some))
                .count();
        }
        // The inputs did exercise both.
        assert!(
            xprts_seen > 1000 && opts_seen > 1000,
            "{xprts_seen} {opts_seen}"
        );
    }

    #[test]
    fn streamed_mountinfo_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/1")).unwrap();
        let text = format!("{MOUNTINFO_TEXT}\n\n5 1 0:3 / /x rw nonsense without separator\n");
        std::fs::write(dir.path().join(INIT_MOUNTINFO), &text).unwrap();
        let err = read_init_mount_table(&root).unwrap_err().to_string();
        let whole = parse_mountinfo(text.as_bytes()).unwrap_err();
        assert_eq!(whole.line, 7);
        assert!(
            err.contains("proc/1/mountinfo:7: no ' - ' separator"),
            "{err}"
        );
        std::fs::write(
            dir.path().join(INIT_MOUNTINFO),
            "x 1 0:3 / /x rw - nfs4 s:/ rw",
        )
        .unwrap();
        let err = read_init_mount_table(&root).unwrap_err().to_string();
        assert!(
            err.contains("proc/1/mountinfo:1: the mount id is not a number"),
            "{err}"
        );
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
        let protos: Vec<_> = recs[0].stats.xprts.iter().map(Xprt::proto).collect();
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
