//! Where PCI functions sit on the PCIe tree, and how far apart two of them are, in the words of
//! `nvidia-smi topo -m` — from sysfs alone.
//!
//! Every PCI function is a directory under its host bridge, below each bridge it hangs from:
//! `/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:08.0/0000:3d:00.0` is a function
//! behind root port `3a:00.0` and switch ports `3b:00.0` (upstream) and `3c:08.0` (downstream).
//! The walk lists only those directories (names of PCI addresses), so it works on a fixture tree
//! or a collected bundle as on the node, without following `/sys/bus/pci/devices` links.
//!
//! Two functions are, like `nvidia-smi topo -m` says it:
//! - `PIX`: behind one PCIe switch (at most one bridge below the bridge they share);
//! - `PXB`: behind several switches, under one root port;
//! - `PHB`: under one host bridge, through different root ports;
//! - `NODE`: under different host bridges of one NUMA node;
//! - `SYS`: on different NUMA nodes (the CPU interconnect between sockets).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::{read_first_line, Root};

/// How deep the walk goes below a host bridge (nested switches rarely pass 6).
const MAX_DEPTH: usize = 16;

/// How many PCI directories the walk lists at most: a large node has a few hundred functions;
/// a tree of links that loop (a hostile bundle) stops here instead of multiplying.
const MAX_DIRS: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum PcieDistance {
    #[serde(rename = "PIX")]
    Pix,
    #[serde(rename = "PXB")]
    Pxb,
    #[serde(rename = "PHB")]
    Phb,
    #[serde(rename = "NODE")]
    Node,
    #[serde(rename = "SYS")]
    Sys,
}

impl PcieDistance {
    pub fn as_str(self) -> &'static str {
        match self {
            PcieDistance::Pix => "PIX",
            PcieDistance::Pxb => "PXB",
            PcieDistance::Phb => "PHB",
            PcieDistance::Node => "NODE",
            PcieDistance::Sys => "SYS",
        }
    }

    /// What the word means, for evidence.
    pub fn meaning(self) -> &'static str {
        match self {
            PcieDistance::Pix => "behind one PCIe switch",
            PcieDistance::Pxb => "behind several PCIe switches, under one root port",
            PcieDistance::Phb => "through the host bridge (different root ports)",
            PcieDistance::Node => "across host bridges of one NUMA node",
            PcieDistance::Sys => "across the CPU interconnect between NUMA nodes",
        }
    }
}

/// One function's place: its host bridge (`pci0000:3a`), the bridges above it from the root
/// port down, and its NUMA node (`None` when sysfs says -1 or nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciePlace {
    pub address: String,
    pub host_bridge: String,
    pub bridges: Vec<String>,
    pub numa_node: Option<u32>,
}

impl PciePlace {
    /// How far `self` is from `other`.
    pub fn distance(&self, other: &PciePlace) -> PcieDistance {
        if self.host_bridge != other.host_bridge {
            return match (self.numa_node, other.numa_node) {
                (Some(a), Some(b)) if a != b => PcieDistance::Sys,
                _ => PcieDistance::Node,
            };
        }
        let shared = self
            .bridges
            .iter()
            .zip(&other.bridges)
            .take_while(|(a, b)| a == b)
            .count();
        if shared == 0 {
            return PcieDistance::Phb;
        }
        // Bridges below the shared one on each side: a switch's downstream port each (PIX), or
        // more switches (PXB).
        let below = |b: &[String]| b.len() - shared;
        if below(&self.bridges) <= 1 && below(&other.bridges) <= 1 {
            PcieDistance::Pix
        } else {
            PcieDistance::Pxb
        }
    }
}

/// Whether a directory name is a PCI address (`0000:3b:00.0`).
fn is_pci_address(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && name
            .bytes()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// One wanted function's place, read at `path` below its host bridge.
fn place_of(
    root: &Root,
    path: &str,
    address: &str,
    host_bridge: &str,
    bridges: &[String],
) -> Result<PciePlace, HostError> {
    let numa = read_first_line(root, &format!("{path}/numa_node"))?
        .and_then(|n| n.parse::<i64>().ok())
        .and_then(|n| u32::try_from(n).ok());
    Ok(PciePlace {
        address: address.to_string(),
        host_bridge: host_bridge.to_string(),
        bridges: bridges.to_vec(),
        numa_node: numa,
    })
}

/// The places of the functions in `wanted`, found by walking `sys/devices/pci*`; the walk ends
/// as soon as every one is found.
pub fn read_places(root: &Root, wanted: &[&str]) -> Result<BTreeMap<String, PciePlace>, HostError> {
    let wanted: BTreeSet<&str> = wanted.iter().copied().collect();
    let mut found = BTreeMap::new();
    let mut budget = MAX_DIRS;
    // A function appears once in the tree; a name seen again came through a link that loops.
    let mut seen = HashSet::new();
    for host_bridge in root.list_dir("sys/devices")?.unwrap_or_default() {
        if !host_bridge.starts_with("pci") {
            continue;
        }
        let mut stack: Vec<(String, Vec<String>)> =
            vec![(format!("sys/devices/{host_bridge}"), vec![])];
        while let Some((dir, chain)) = stack.pop() {
            if budget == 0 || found.len() == wanted.len() {
                return Ok(found);
            }
            budget -= 1;
            for name in root.list_dir(&dir)?.unwrap_or_default() {
                if !is_pci_address(&name) || !seen.insert(name.clone()) {
                    continue;
                }
                let path = format!("{dir}/{name}");
                if wanted.contains(name.as_str()) {
                    let place = place_of(root, &path, &name, &host_bridge, &chain)?;
                    found.insert(name.clone(), place);
                }
                if chain.len() < MAX_DEPTH {
                    let mut below = chain.clone();
                    below.push(name);
                    stack.push((path, below));
                }
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn place(
        host_bridge: &str,
        bridges: &[&str],
        addr: &str,
        numa: Option<u32>,
    ) -> PciePlace {
        PciePlace {
            address: addr.into(),
            host_bridge: host_bridge.into(),
            bridges: bridges.iter().map(|b| b.to_string()).collect(),
            numa_node: numa,
        }
    }

    #[test]
    fn distances_like_nvidia_smi_topo() {
        // A DGX-like switch: root port 3a:00.0, switch up 3b:00.0, downstream 3c:00.0 / 3c:08.0.
        let gpu = place(
            "pci0000:3a",
            &["0000:3a:00.0", "0000:3b:00.0", "0000:3c:00.0"],
            "0000:3d:00.0",
            Some(0),
        );
        let nic_same_switch = place(
            "pci0000:3a",
            &["0000:3a:00.0", "0000:3b:00.0", "0000:3c:08.0"],
            "0000:3e:00.0",
            Some(0),
        );
        assert_eq!(gpu.distance(&nic_same_switch), PcieDistance::Pix);
        // A second switch under the first downstream port.
        let nic_nested = place(
            "pci0000:3a",
            &[
                "0000:3a:00.0",
                "0000:3b:00.0",
                "0000:3c:10.0",
                "0000:40:00.0",
                "0000:41:00.0",
            ],
            "0000:42:00.0",
            Some(0),
        );
        assert_eq!(gpu.distance(&nic_nested), PcieDistance::Pxb);
        let nic_other_port = place("pci0000:3a", &["0000:3a:02.0"], "0000:50:00.0", Some(0));
        assert_eq!(gpu.distance(&nic_other_port), PcieDistance::Phb);
        let nic_other_bridge = place("pci0000:5d", &["0000:5d:00.0"], "0000:5e:00.0", Some(0));
        assert_eq!(gpu.distance(&nic_other_bridge), PcieDistance::Node);
        let nic_other_socket = place("pci0000:ae", &["0000:ae:00.0"], "0000:af:00.0", Some(1));
        assert_eq!(gpu.distance(&nic_other_socket), PcieDistance::Sys);
        assert_eq!(
            nic_other_socket.distance(&gpu),
            PcieDistance::Sys,
            "symmetric"
        );
        // One socket: sysfs says -1 and nothing tells the nodes apart.
        let single = place("pci0000:ae", &["0000:ae:00.0"], "0000:af:00.0", None);
        assert_eq!(gpu.distance(&single), PcieDistance::Node);
    }

    #[test]
    fn the_walk_finds_places_and_ends_on_links_that_loop() {
        let d = tempfile::tempdir().unwrap();
        let dev = d
            .path()
            .join("sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0");
        std::fs::create_dir_all(dev.join("power")).unwrap();
        std::fs::write(dev.join("numa_node"), "1\n").unwrap();
        // Two links back up, named like functions: without a bound the walk would multiply.
        std::os::unix::fs::symlink("..", dev.join("0000:3c:00.0")).unwrap();
        std::os::unix::fs::symlink("..", dev.join("0000:3c:01.0")).unwrap();
        let root = Root::new(d.path());
        let places = read_places(&root, &["0000:3b:00.0", "0000:99:00.0"]).unwrap();
        let p = &places["0000:3b:00.0"];
        assert_eq!(p.host_bridge, "pci0000:3a");
        assert_eq!(p.bridges, ["0000:3a:00.0"]);
        assert_eq!(p.numa_node, Some(1));
        assert!(!places.contains_key("0000:99:00.0"));
    }

    #[test]
    fn pci_addresses_are_told_from_other_names() {
        assert!(is_pci_address("0000:3b:00.0"));
        assert!(!is_pci_address("power"));
        assert!(!is_pci_address("0000:3b:00:0"));
        assert!(!is_pci_address("pci0000:3a"));
    }
}
