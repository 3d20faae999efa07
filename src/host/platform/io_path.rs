//! The I/O path of each NFS server this node talks to: its address, the route to it, the
//! network device and RDMA device that route leaves by, that device's PCI function, and how far
//! it sits from each NVIDIA GPU ([`PcieDistance`]).
//!
//! The servers come from `/proc/fs/nfsfs/servers`, one line per NFS client (every mount of a
//! server over one transport shares it, and its connections): `v4 0a00020f 4e51   2 10.0.2.15`
//! (version, address and port in hex, users, the name mounted). IPv4 addresses are the hex of
//! the address in network order; IPv6 ones 32 hex digits. The file is a line per server, not
//! per mount, so reading it costs nothing on a node with thousands of mounts.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

use super::net_route::{Route, RouteTable};
use super::pcie_tree::{read_places, PcieDistance, PciePlace};
use super::rdma_netdev::NetDevice;
use crate::host::io::error::HostError;
use crate::host::io::root::Root;

pub const NFS_SERVERS: &str = "proc/fs/nfsfs/servers";

/// One line of `/proc/fs/nfsfs/servers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NfsServer {
    /// `v3`, `v4`.
    pub version: String,
    pub address: IpAddr,
    pub port: u16,
    pub hostname: String,
}

/// Parses `/proc/fs/nfsfs/servers`; the header and lines that do not parse are skipped.
pub fn parse_nfs_servers(text: &str) -> Vec<NfsServer> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (version, addr, port, host) = (f.first()?, f.get(1)?, f.get(2)?, f.get(4)?);
            if !version.starts_with('v') {
                return None;
            }
            let address = match addr.len() {
                8 => IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(addr, 16).ok()?)),
                32 => IpAddr::V6(Ipv6Addr::from(u128::from_str_radix(addr, 16).ok()?)),
                _ => addr.parse().ok()?,
            };
            Some(NfsServer {
                version: version.to_string(),
                address,
                port: u16::from_str_radix(port, 16).ok()?,
                hostname: host.to_string(),
            })
        })
        .collect()
}

/// A GPU and how far the server's NIC is from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuDistance {
    pub gpu: String,
    pub distance: PcieDistance,
}

/// The path to one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerPath {
    pub server: NfsServer,
    /// The route to it; `None` when no route matches.
    pub route: Option<Route>,
    /// The network device of that route.
    pub net: Option<NetDevice>,
    /// Where that device's PCI function sits, when sysfs shows it.
    pub nic: Option<PciePlace>,
    /// Each GPU's distance from that NIC, nearest first.
    pub gpus: Vec<GpuDistance>,
}

impl ServerPath {
    /// The NIC is SYS to every GPU there is (none nearer).
    pub fn only_across_sockets(&self) -> bool {
        !self.gpus.is_empty() && self.gpus.iter().all(|g| g.distance == PcieDistance::Sys)
    }

    /// `10.0.2.15 (port 20049) → route 10.0.0.0/16 dev ib0 → mlx5_0 → 0000:3e:00.0`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} (port {})", self.server.address, self.server.port);
        match &self.route {
            None => s.push_str(" → no route"),
            Some(r) => {
                s.push_str(&format!(
                    " → route {}/{} dev {}",
                    r.destination, r.prefix_len, r.device
                ));
                if let Some(gw) = r.gateway {
                    s.push_str(&format!(" via {gw}"));
                }
            }
        }
        if let Some(n) = &self.net {
            if n.rdma_devices.is_empty() {
                s.push_str(" → no RDMA device");
            } else {
                s.push_str(&format!(" → {}", n.rdma_devices.join("+")));
            }
            s.push_str(&format!(
                " → {}",
                n.pci.as_deref().unwrap_or("no PCI function")
            ));
        }
        s
    }

    /// `GPU 0000:3d:00.0 PIX, GPU 0000:af:00.0 SYS`.
    pub fn distances(&self) -> String {
        self.gpus
            .iter()
            .map(|g| format!("GPU {} {}", g.gpu, g.distance.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Every NFS server's path; `servers` is `None` when the node shows no NFS client state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IoPaths {
    pub servers: Option<Vec<ServerPath>>,
}

impl IoPaths {
    /// Reads the paths to every server, against the `gpus` (PCI addresses) of the node.
    pub fn read(root: &Root, gpus: &[String]) -> Result<Self, HostError> {
        let Some(text) = root.read_text_lossy(NFS_SERVERS)? else {
            return Ok(IoPaths::default());
        };
        let servers = parse_nfs_servers(&text);
        if servers.is_empty() {
            return Ok(IoPaths {
                servers: Some(Vec::new()),
            });
        }
        let routes = RouteTable::read(root)?;
        let mut nets: BTreeMap<String, NetDevice> = BTreeMap::new();
        let mut paths = Vec::new();
        for server in servers {
            let route = routes.lookup(server.address).cloned();
            let net = match &route {
                Some(r) => Some(match nets.get(&r.device) {
                    Some(n) => n.clone(),
                    None => {
                        let n = NetDevice::read(root, &r.device)?;
                        nets.insert(r.device.clone(), n.clone());
                        n
                    }
                }),
                None => None,
            };
            paths.push((server, route, net));
        }
        let mut wanted: Vec<&str> = gpus.iter().map(String::as_str).collect();
        wanted.extend(
            paths
                .iter()
                .filter_map(|(_, _, n)| n.as_ref()?.pci.as_deref()),
        );
        // The PCIe walk only matters where a server is reached by a device with RDMA.
        let any_rdma = paths
            .iter()
            .any(|(_, _, n)| n.as_ref().is_some_and(|n| !n.rdma_devices.is_empty()));
        let places = if gpus.is_empty() || !any_rdma {
            BTreeMap::new()
        } else {
            read_places(root, &wanted)?
        };
        let servers = paths
            .into_iter()
            .map(|(server, route, net)| {
                let nic = net
                    .as_ref()
                    .and_then(|n| n.pci.as_ref())
                    .and_then(|p| places.get(p))
                    .cloned();
                let mut gpu_distances: Vec<GpuDistance> = match &nic {
                    Some(nic) => gpus
                        .iter()
                        .filter_map(|g| places.get(g))
                        .map(|g| GpuDistance {
                            gpu: g.address.clone(),
                            distance: nic.distance(g),
                        })
                        .collect(),
                    None => Vec::new(),
                };
                gpu_distances.sort_by_key(|g| g.distance);
                ServerPath {
                    server,
                    route,
                    net,
                    nic,
                    gpus: gpu_distances,
                }
            })
            .collect();
        Ok(IoPaths {
            servers: Some(servers),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_file_in_both_address_families() {
        let t = "NV SERVER   PORT USE HOSTNAME\n\
                 v4 0a00020f 4e51   2 10.0.2.15\n\
                 v3 0a000210  801   1 filer\n\
                 v4 fd001234000000000000000000000007 4e51 1 fd00:1234::7\n\
                 garbage\n";
        let s = parse_nfs_servers(t);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].address, "10.0.2.15".parse::<IpAddr>().unwrap());
        assert_eq!(s[0].port, crate::nfs::NFS_RDMA_PORT);
        assert_eq!(s[0].version, "v4");
        assert_eq!(s[1].port, 2049);
        assert_eq!(s[1].hostname, "filer");
        assert_eq!(s[2].address, "fd00:1234::7".parse::<IpAddr>().unwrap());
    }
}
