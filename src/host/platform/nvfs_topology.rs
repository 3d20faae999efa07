//! What nvidia-fs saw of the PCIe topology: `/proc/driver/nvidia-fs/bridges` and `peer_distance`.
//!
//! Formats from nvidia-fs's `src/nvfs-proc.c` and `src/nvfs-pci.c`: `bridges` is one
//! `%04x:%02x:%02x.%d` line per ACS-enabled bridge. `peer_distance` has the header
//! `gpu peer peerrank p2pdist link gen numa np2p class` and one tab-separated row per GPU and
//! peer; `p2pdist` is hex, and nvidia-fs adds `BASE_PCI_DISTANCE_CROSSRP` (`S8_MAX`, 127) to it
//! when the two share no bridge (different root ports), twice that when they are not even
//! local to each other. The last column is the peer's class (`network`, `nvme`, `x`), not a
//! distance.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// nvidia-fs's `BASE_PCI_DISTANCE_CROSSRP`.
pub const CROSS_ROOT_PORT: u32 = 127;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PeerDistance {
    pub gpu: String,
    pub peer: String,
    pub p2pdist: u32,
    pub numa: Option<u32>,
    pub class: String,
}

impl PeerDistance {
    /// The GPU and the peer share no PCIe bridge: P2P DMA crosses the root complex.
    pub fn crosses_root_complex(&self) -> bool {
        self.p2pdist >= CROSS_ROOT_PORT
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct NvfsTopology {
    /// ACS-enabled bridges, when nvidia-fs publishes the file.
    pub acs_bridges: Option<Vec<String>>,
    /// `peer_distance` rows, when the file exists; `Err` names a line that does not parse.
    pub peer_distance: Option<Result<Vec<PeerDistance>, String>>,
}

pub fn parse_bridges(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// Parses `peer_distance`; `path` names the file in errors.
pub fn parse_peer_distance(path: &str, text: &str) -> Result<Vec<PeerDistance>, String> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.is_empty() || cols[0] == "gpu" {
            continue;
        }
        let bad = || {
            format!(
                "{path} line {}: `{}` is not a peer_distance row",
                n + 1,
                line.trim()
            )
        };
        if cols.len() < 9 {
            return Err(bad());
        }
        rows.push(PeerDistance {
            gpu: cols[0].to_string(),
            peer: cols[1].to_string(),
            p2pdist: hex(cols[3]).ok_or_else(bad)?,
            numa: hex(cols[6]),
            class: cols[8].to_string(),
        });
    }
    Ok(rows)
}

impl NvfsTopology {
    pub fn read(root: &Root) -> Result<Self, HostError> {
        const DISTANCE: &str = "proc/driver/nvidia-fs/peer_distance";
        let acs_bridges = root
            .read_text_lossy("proc/driver/nvidia-fs/bridges")?
            .map(|t| parse_bridges(&t));
        let peer_distance = root
            .read_text_lossy(DISTANCE)?
            .map(|t| parse_peer_distance(&root.join(DISTANCE).display().to_string(), &t));
        Ok(NvfsTopology {
            acs_bridges,
            peer_distance,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "gpu\t\tpeer\t\tpeerrank\tp2pdist\tlink\tgen\tnuma\tnp2p\tclass\n\
0000:3b:00.0 \t0000:3c:00.0 \t0x00000000\t0x0003\t0x10\t0x04\t0x00\t0\tnetwork\n\
0000:3b:00.0 \t0000:86:00.0 \t0x00000000\t0x0083\t0x10\t0x04\t0x01\t12\tnetwork\n";

    #[test]
    fn rows_and_root_complex() {
        let rows = parse_peer_distance("pd", SAMPLE).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].p2pdist, 3);
        assert!(!rows[0].crosses_root_complex());
        assert_eq!(rows[1].p2pdist, 0x83);
        assert!(rows[1].crosses_root_complex());
        assert_eq!(rows[1].numa, Some(1));
        assert_eq!(rows[1].class, "network");
    }

    #[test]
    fn a_short_row_names_its_line() {
        let e = parse_peer_distance("pd", "gpu peer\n0000:3b:00.0 0x3\n").unwrap_err();
        assert!(e.contains("pd line 2"), "{e}");
    }

    #[test]
    fn bridges_one_per_line() {
        assert_eq!(
            parse_bridges("0000:3a:00.0\n0000:85:02.0\n\n"),
            vec!["0000:3a:00.0", "0000:85:02.0"]
        );
    }
}
