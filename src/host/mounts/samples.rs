//! Mount table texts the parsers' tests share, and the parser and pairing of before that the
//! streamed ones are checked against.

use super::*;

pub(super) const CAPTURE: &str = include_str!("../../../tests/fixtures/mountstats.txt");

pub(super) const CAPTURE_MOUNTINFO: &str = include_str!("../../../tests/fixtures/mountinfo.txt");

pub(super) const MOUNTINFO_TEXT: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
61 22 0:50 / /mnt/rdma rw,relatime shared:30 - nfs4 10.0.2.15:/export rw,vers=4.2,rsize=262144,proto=rdma,port=20049,addr=10.0.2.15
62 22 0:50 / /mnt/a\\040b rw,relatime - nfs4 10.0.2.15:/export rw,vers=4.2,proto=tcp,addr=10.0.2.15
";

pub(super) fn table(mountinfo: &str, mountstats: &str) -> MountTable {
    MountTable::join(
        parse_mountinfo(mountinfo.as_bytes()).unwrap(),
        parse_mountstats(mountstats.as_bytes()),
    )
}

/// The parser and pairing as they were when mountstats was read whole, kept to show that
/// the streamed table is the same table.
pub(super) mod before {
    use crate::host::mounts::escape::{path_of, text_of};
    use crate::host::mounts::MountInfoEntry;
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
