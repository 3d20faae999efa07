//! The I/O counters of one mount's mountstats record, for `watch`: READ and WRITE operations
//! (the per-op lines, `READ: ops trans timeouts bytes_sent bytes_recv …`), the bytes the server
//! sent and received (`bytes:` fields 5 and 6, `server_read` and `server_write`), and the RDMA
//! transport's chunk counters summed over every `xprt: rdma` line.
//!
//! xprtrdma prints, after `xprt: rdma`, ten generic counters (port, binds, connects, connect
//! time, idle time, sends, receives, bad xids, request and backlog utilisation) and then its own:
//! `read_chunk_count` (the server RDMA-reads the payload: WRITEs), `write_chunk_count` (the
//! server RDMA-writes the payload into client memory: READs — the chunks nvidia-fs's hooks map
//! to GPU memory), `reply_chunk_count`, `total_rdma_request`, `total_rdma_reply`,
//! `pullup_copy_count` and `fixup_copy_count` (payload copied by the CPU). A line shorter than
//! that (another kernel or stack) gives no chunk counters rather than misread ones. The whole
//! record is read, not just what the mount table keeps: this is one mount, sampled twice.

use std::path::Path;

use serde::Serialize;

use super::escape::{path_of, text_of};

/// The chunk counters of the RDMA transports of a mount, summed over its connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RdmaCounters {
    pub read_chunks: u64,
    pub write_chunks: u64,
    pub reply_chunks: u64,
    pub pullup_copies: u64,
    pub fixup_copies: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MountCounters {
    pub read_ops: u64,
    pub write_ops: u64,
    /// `server_read` of the `bytes:` line: READ payload the server sent.
    pub read_bytes: u64,
    /// `server_write`: WRITE payload sent to the server.
    pub write_bytes: u64,
    /// The transports of the record (`rdma`, `tcp`), one per `xprt:` line.
    pub transports: Vec<String>,
    /// `None` when no `xprt: rdma` line is long enough to carry them.
    pub rdma: Option<RdmaCounters>,
}

/// Where xprtrdma's own counters start after `xprt: rdma`.
const RDMA_FIRST: usize = 10;

fn numbers(s: &str) -> Vec<u64> {
    s.split_whitespace()
        .map(|w| w.parse().unwrap_or(0))
        .collect()
}

fn add_rdma(into: &mut Option<RdmaCounters>, fields: &[u64]) {
    let Some(f) = fields.get(RDMA_FIRST..RDMA_FIRST + 7) else {
        return;
    };
    let c = into.get_or_insert_with(RdmaCounters::default);
    c.read_chunks += f[0];
    c.write_chunks += f[1];
    c.reply_chunks += f[2];
    c.pullup_copies += f[5];
    c.fixup_copies += f[6];
}

/// The counters of the `nth` record (from 0) of `device` mounted on `mount_point`; `None` when
/// there is no such record.
pub fn parse_mount_counters(
    text: &[u8],
    mount_point: &Path,
    device: &str,
    nth: usize,
) -> Option<MountCounters> {
    let mut seen = 0;
    let mut inside = false;
    let mut out: Option<MountCounters> = None;
    for line in text.split(|&b| b == b'\n') {
        if line.starts_with(b"device ") || line.starts_with(b"no device ") {
            if out.is_some() {
                break;
            }
            let words: Vec<&[u8]> = line
                .split(|&b| b == b' ')
                .filter(|w| !w.is_empty())
                .collect();
            inside = matches!(words.as_slice(),
                [b"device", dev, b"mounted", b"on", mnt, ..]
                    if text_of(dev) == device && path_of(mnt) == mount_point);
            if inside {
                if seen == nth {
                    out = Some(MountCounters::default());
                }
                seen += 1;
            }
            continue;
        }
        let Some(c) = out.as_mut().filter(|_| inside) else {
            continue;
        };
        let line = String::from_utf8_lossy(line);
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("bytes:") {
            let f = numbers(rest);
            c.read_bytes = f.get(4).copied().unwrap_or(0);
            c.write_bytes = f.get(5).copied().unwrap_or(0);
        } else if let Some(rest) = t.strip_prefix("xprt:") {
            let mut words = rest.split_whitespace();
            let proto = words.next().unwrap_or_default().to_string();
            if super::mountstats::is_rdma_netid(&proto) {
                add_rdma(&mut c.rdma, &numbers(&words.collect::<Vec<_>>().join(" ")));
            }
            c.transports.push(proto);
        } else if let Some(rest) = t.strip_prefix("READ:") {
            c.read_ops = numbers(rest).first().copied().unwrap_or(0);
        } else if let Some(rest) = t.strip_prefix("WRITE:") {
            c.write_ops = numbers(rest).first().copied().unwrap_or(0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = include_str!("../../../tests/fixtures/mountstats.txt");

    #[test]
    fn the_captured_rdma_mount() {
        let c = parse_mount_counters(
            CAPTURE.as_bytes(),
            Path::new("/mnt/rdma"),
            "10.0.2.15:/export",
            0,
        )
        .unwrap();
        assert_eq!((c.read_ops, c.write_ops), (1, 64));
        assert_eq!((c.read_bytes, c.write_bytes), (26, 16777216));
        assert_eq!(c.transports, ["rdma"]);
        let r = c.rdma.unwrap();
        assert_eq!(
            (r.read_chunks, r.write_chunks, r.reply_chunks),
            (131, 1, 11)
        );
        assert_eq!((r.pullup_copies, r.fixup_copies), (0, 0));
        assert_eq!(
            parse_mount_counters(CAPTURE.as_bytes(), Path::new("/mnt/none"), "x:/y", 0),
            None
        );
    }

    #[test]
    fn connections_sum_and_short_lines_carry_no_chunks() {
        let t = "device s:/e mounted on /m with fstype nfs statvers=1.1\n\
                 \txprt:\trdma 0 0 1 0 0 1 1 0 1 0 10 20 1 0 0 2 0 0 0 0 0 0 0 0 0 0 0\n\
                 \txprt:\trdma 0 0 1 0 0 1 1 0 1 0 5 7 1 0 0 0 3 0 0 0 0 0 0 0 0 0 0\n\
                 device s:/e mounted on /m with fstype nfs statvers=1.1\n\
                 \txprt:\trdma 0 0 1\n";
        let c = parse_mount_counters(t.as_bytes(), Path::new("/m"), "s:/e", 0).unwrap();
        let r = c.rdma.unwrap();
        assert_eq!(
            (
                r.read_chunks,
                r.write_chunks,
                r.pullup_copies,
                r.fixup_copies
            ),
            (15, 27, 2, 3)
        );
        let c = parse_mount_counters(t.as_bytes(), Path::new("/m"), "s:/e", 1).unwrap();
        assert_eq!(c.rdma, None);
        assert_eq!(c.transports, ["rdma"]);
    }
}
