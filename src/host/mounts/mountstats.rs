//! `/proc/self/mountstats`: a record per mount, with the transports it really uses (`xprt:`
//! lines) and the options the kernel settled on (`opts:`), but no mount id.

use std::path::PathBuf;

use super::escape::{lossy, path_of, text_of, unescaped};
use super::fields::Fields;
use super::options::{option_in, KeptMemo, KEPT_OPTIONS};

/// One transport of an NFS mount: an `xprt:` line of mountstats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xprt {
    /// The whole line, trimmed, for evidence.
    pub line: String,
}

impl Xprt {
    /// `rdma`, `tcp`, `udp`, `local`, … (the word after `xprt:`).
    pub fn proto(&self) -> &str {
        // The first word after `xprt:`, found without an iterator over the words: the checks ask
        // each mount's transports several times a pass.
        let Some(rest) = self.line.strip_prefix("xprt:") else {
            return "";
        };
        let rest = rest.trim_start();
        &rest[..rest.find(char::is_whitespace).unwrap_or(rest.len())]
    }

    pub fn is_rdma(&self) -> bool {
        is_rdma_netid(self.proto())
    }
}

pub use crate::nfs::is_rdma_netid;

/// What a mount keeps of its mountstats record: the transports and the options the checks read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountStats {
    /// The [`KEPT_OPTIONS`] of the `opts:` line, comma-separated, in the line's order (NFS
    /// only).
    pub opts: String,
    /// The pNFS layout type of the `nfsv4:` line (`LAYOUT_FLEX_FILES`), when it names one.
    pub pnfs: Option<Box<str>>,
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
    /// Inside a record [`MountStatsParser::feed_lines_where`] does not want.
    skipping: bool,
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
            // `nfsv4:` lines always carry an `x` (`bm0=0x…`), so `feed_lines` hands them here.
            Some(b'n') => {
                if let Some(v4) = rest.strip_prefix(b"nfsv4:") {
                    current.stats.pnfs = super::pnfs::parse_pnfs_layout(v4);
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
    pub fn feed_lines(&mut self, text: &[u8], each: impl FnMut(MountStatsRecord)) {
        self.feed_lines_with(text, None, each);
    }

    /// [`MountStatsParser::feed_lines`] for the records whose mount point (unescaped) `want`
    /// takes; the others are skipped unparsed, from their `device` line to the next record's
    /// (a search for `device `), so a reader that wants a few records of a file of tens of
    /// megabytes looks at the rest only to find where each record starts. Called on
    /// consecutive pieces of one file, each a run of whole lines.
    pub fn feed_lines_where(
        &mut self,
        text: &[u8],
        want: impl Fn(&[u8]) -> bool,
        each: impl FnMut(MountStatsRecord),
    ) {
        self.feed_lines_with(text, Some(&want), each);
    }

    fn feed_lines_with(
        &mut self,
        text: &[u8],
        want: Option<&WantMountPoint>,
        mut each: impl FnMut(MountStatsRecord),
    ) {
        let mut pos = 0;
        loop {
            if self.skipping {
                let Some(next) = next_record(text, pos) else {
                    return;
                };
                self.skipping = false;
                pos = next;
            }
            let Some(hit) = memchr::memchr3(b'd', b'o', b'x', &text[pos..]) else {
                return;
            };
            let hit = pos + hit;
            let start = memchr::memrchr(b'\n', &text[pos..hit]).map_or(pos, |i| pos + i + 1);
            let end = memchr::memchr(b'\n', &text[hit..]).map_or(text.len(), |i| hit + i);
            let line = &text[start..end];
            let unwanted = want.is_some_and(|want| {
                kernel_form_mount_point(line)
                    .or_else(|| device_line(line).map(|d| d.mount_point))
                    .is_some_and(|mp| !want(&unescaped(mp)))
            });
            if unwanted {
                if let Some(rec) = self.current.take() {
                    each(done(rec));
                }
                self.skipping = true;
            } else if let Some(rec) = self.feed(line) {
                each(rec);
            }
            pos = end + 1;
            if pos >= text.len() {
                return;
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

/// Whether a record is wanted, by its mount point (unescaped).
type WantMountPoint<'w> = dyn Fn(&[u8]) -> bool + 'w;

/// Where the next record starts in `text` at or after `pos` (a line start): the next line
/// that starts with `device ` or `no device `.
fn next_record(text: &[u8], pos: usize) -> Option<usize> {
    static DEVICE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"device "));
    let mut from = pos;
    loop {
        let hit = from + DEVICE.find(&text[from..])?;
        let line_start = |at: usize| at == 0 || text[at - 1] == b'\n';
        if line_start(hit) {
            return Some(hit);
        }
        if hit >= 3 && &text[hit - 3..hit] == b"no " && line_start(hit - 3) {
            return Some(hit - 3);
        }
        from = hit + 1;
    }
}

/// The mount point of a record's first line written as the kernel writes it (`device DEV
/// mounted on MNT with fstype TYPE…` or `no device mounted on …`, one space between the
/// words), found without splitting the line into words; `None` for any other line, which
/// [`device_line`] then decides. A line of this form is one [`device_line`] reads the same.
fn kernel_form_mount_point(line: &[u8]) -> Option<&[u8]> {
    let word = |rest: &[u8]| -> Option<usize> {
        let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
        (end > 0).then_some(end)
    };
    let rest = match line.strip_prefix(b"device ") {
        Some(rest) => &rest[word(rest)?..],
        None => line.strip_prefix(b"no device")?,
    };
    let rest = rest.strip_prefix(b" mounted on ")?;
    let mount_point = &rest[..word(rest)?];
    let rest = rest[mount_point.len()..].strip_prefix(b" with fstype ")?;
    word(rest)?;
    Some(mount_point)
}

/// The words of a record's first line, as written (escaped).
struct DeviceLine<'l> {
    /// `None` for `no device`.
    device: Option<&'l [u8]>,
    mount_point: &'l [u8],
    fstype: &'l [u8],
    statvers: Option<&'l [u8]>,
}

/// `device DEV mounted on MNT with fstype TYPE [statvers=V]` or `no device mounted on …`.
fn device_line(line: &[u8]) -> Option<DeviceLine<'_>> {
    if !(line.starts_with(b"device ") || line.starts_with(b"no device ")) {
        return None;
    }
    let words = Fields::of(line);
    let (device, rest) = match words.as_slice() {
        [b"device", dev, rest @ ..] => (Some(*dev), rest),
        [b"no", b"device", rest @ ..] => (None, rest),
        _ => return None,
    };
    match rest {
        [b"mounted", b"on", mnt, b"with", b"fstype", fstype, more @ ..] => Some(DeviceLine {
            device,
            mount_point: mnt,
            fstype,
            statvers: more.iter().find_map(|w| {
                w.strip_prefix(b"statvers=")
                    .filter(|v| std::str::from_utf8(v).is_ok())
            }),
        }),
        _ => None,
    }
}

fn parse_device_line(line: &[u8]) -> Option<MountStatsRecord> {
    let d = device_line(line)?;
    Some(MountStatsRecord {
        device: d.device.map(text_of),
        mount_point: path_of(d.mount_point),
        fstype: text_of(d.fstype),
        statvers: d
            .statvers
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::to_string),
        stats: MountStats::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::mounts::samples::*;
    use crate::host::mounts::*;
    use std::path::Path;

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

    /// Skipping the records not wanted keeps exactly the wanted records of the whole parse,
    /// whatever lines are in between and wherever the text is cut into pieces of whole lines.
    #[test]
    fn the_records_wanted_are_the_whole_parses_records_of_their_mount_points() {
        let mut skipped = 0;
        for seed in 0..2000 {
            let text = random_mountstats(seed);
            let want = |mp: &[u8]| mp == b"/mnt/a" || mp == b"/x";
            let whole: Vec<_> = parse_mountstats(&text)
                .into_iter()
                .filter(|r| want(r.mount_point.as_os_str().as_encoded_bytes()))
                .collect();
            skipped += parse_mountstats(&text).len() - whole.len();
            let lines: Vec<usize> = memchr::memchr_iter(b'\n', &text).collect();
            let cut = lines
                .get(seed as usize % lines.len().max(1))
                .map_or(0, |i| i + 1);
            let mut p = MountStatsParser::default();
            let mut some = Vec::new();
            for piece in [&text[..cut], &text[cut..]] {
                p.feed_lines_where(piece, want, |r| some.push(r));
            }
            some.extend(p.finish());
            assert_eq!(
                some,
                whole,
                "seed {seed}: {}",
                String::from_utf8_lossy(&text)
            );
        }
        assert!(skipped > 1000, "records were skipped: {skipped}");
    }

    #[test]
    fn a_first_line_in_the_kernels_form_is_read_as_the_word_by_word_parse_reads_it() {
        for line in [
            "device s:/e mounted on /mnt/a with fstype nfs4 statvers=1.1",
            "device s:/e mounted on /mnt/a with fstype nfs4",
            "no device mounted on /x with fstype none",
            "device s:/e mounted on /mnt/a with fstype ",
            "device s:/e  mounted on /mnt/a with fstype nfs4",
            "device  mounted on /mnt/a with fstype nfs4",
            "device s:/e mounted on  /mnt/a with fstype nfs4",
            "device s:/e mounted on /mnt/a with  fstype nfs4",
            "device s:/e mounted at /mnt/a with fstype nfs4",
            "no device mounted on /x",
            "no devices mounted on /x with fstype none",
            "device",
            "",
        ] {
            let quick = kernel_form_mount_point(line.as_bytes());
            let words = device_line(line.as_bytes()).map(|d| d.mount_point);
            assert!(quick.is_none() || quick == words, "{line:?}");
        }
        assert_eq!(
            kernel_form_mount_point(b"no device mounted on /x with fstype none"),
            Some(&b"/x"[..])
        );
        assert_eq!(
            kernel_form_mount_point(
                b"device s:/e mounted on /m\\040n with fstype nfs4 statvers=1.1"
            ),
            Some(&b"/m\\040n"[..])
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
}
