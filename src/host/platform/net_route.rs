//! Which network device the kernel sends to an address by: the main routing tables as
//! `/proc/net/route` (IPv4) and `/proc/net/ipv6_route` (IPv6) print them, read below the root so
//! the answer is the same on a fixture tree or a collected bundle as on the node (no netlink).
//!
//! `/proc/net/route` prints each address as the hex of its 32-bit value in the host's byte
//! order (`0102A8C0` is 192.168.2.1 on the little-endian machines GDS runs on: x86_64 and
//! aarch64); `/proc/net/ipv6_route` prints addresses as 32 hex digits in network order and the
//! prefix length in hex. The lookup is the kernel's for one table: the longest matching prefix
//! among routes that are up, then the lowest metric. Policy routing (`ip rule`) is not in these
//! files; a node that routes by source address may send by another device.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

const RTF_UP: u32 = 0x1;
const RTF_REJECT: u32 = 0x200;

/// One route of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    pub device: String,
    pub destination: IpAddr,
    pub prefix_len: u8,
    /// The next hop; `None` for a directly connected network.
    pub gateway: Option<IpAddr>,
    pub metric: u32,
}

impl Route {
    fn matches(&self, addr: IpAddr) -> bool {
        match (self.destination, addr) {
            (IpAddr::V4(d), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u32::from(d) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(d), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u128::from(d) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// Both tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RouteTable {
    pub routes: Vec<Route>,
}

impl RouteTable {
    /// The route the kernel takes to `addr` (an IPv4-mapped IPv6 address is looked up as IPv4).
    pub fn lookup(&self, addr: IpAddr) -> Option<&Route> {
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
            v4 => v4,
        };
        self.routes
            .iter()
            .filter(|r| r.matches(addr))
            .min_by_key(|r| (std::cmp::Reverse(r.prefix_len), r.metric))
    }
}

/// `/proc/net/route`: a header line, then `Iface Destination Gateway Flags RefCnt Use Metric
/// Mask …` per route. Lines that do not parse are skipped (the header among them).
pub fn parse_route_v4(text: &str) -> Vec<Route> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let hex = |s: &str| u32::from_str_radix(s, 16).ok();
            let addr = |s: &str| hex(s).map(|v| Ipv4Addr::from(v.to_le_bytes()));
            let (device, dest, gw, flags, metric, mask) = (
                f.first()?,
                addr(f.get(1)?)?,
                addr(f.get(2)?)?,
                hex(f.get(3)?)?,
                f.get(6)?.parse().ok()?,
                addr(f.get(7)?)?,
            );
            if flags & RTF_UP == 0 || flags & RTF_REJECT != 0 {
                return None;
            }
            Some(Route {
                device: device.to_string(),
                destination: IpAddr::V4(dest),
                prefix_len: u32::from(mask).count_ones() as u8,
                gateway: (!gw.is_unspecified()).then_some(IpAddr::V4(gw)),
                metric,
            })
        })
        .collect()
}

/// `/proc/net/ipv6_route`: `dest plen src splen nexthop metric refcnt use flags iface`.
pub fn parse_route_v6(text: &str) -> Vec<Route> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let addr = |s: &str| {
                u128::from_str_radix(s, 16)
                    .ok()
                    .filter(|_| s.len() == 32)
                    .map(Ipv6Addr::from)
            };
            let hex = |s: &str| u32::from_str_radix(s, 16).ok();
            let (dest, plen, gw, metric, flags, device) = (
                addr(f.first()?)?,
                hex(f.get(1)?)?,
                addr(f.get(4)?)?,
                hex(f.get(5)?)?,
                hex(f.get(8)?)?,
                f.get(9)?,
            );
            if flags & RTF_UP == 0 || flags & RTF_REJECT != 0 || plen > 128 || *device == "lo" {
                return None;
            }
            Some(Route {
                device: device.to_string(),
                destination: IpAddr::V6(dest),
                prefix_len: plen as u8,
                gateway: (!gw.is_unspecified()).then_some(IpAddr::V6(gw)),
                metric,
            })
        })
        .collect()
}

impl RouteTable {
    pub fn read(root: &Root) -> Result<Self, HostError> {
        let mut routes = Vec::new();
        if let Some(t) = root.read_text_lossy("proc/net/route")? {
            routes.extend(parse_route_v4(&t));
        }
        if let Some(t) = root.read_text_lossy("proc/net/ipv6_route")? {
            routes.extend(parse_route_v6(&t));
        }
        Ok(RouteTable { routes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node with a default route on eth0 and the storage network on ib0 (x86 byte order).
    const V4: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0002A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
ib0\t0000140A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
ib1\t0000140A\t00000000\t0001\t0\t0\t50\t0000FFFF\t0\t0\t0
eth9\t0000150A\t00000000\t0200\t0\t0\t0\t0000FFFF\t0\t0\t0
";

    const V6: &str = "\
fd001234000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     ib0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
";

    fn table() -> RouteTable {
        let mut routes = parse_route_v4(V4);
        routes.extend(parse_route_v6(V6));
        RouteTable { routes }
    }

    #[test]
    fn the_longest_prefix_then_the_lowest_metric_wins() {
        let t = table();
        let dev = |a: &str| t.lookup(a.parse().unwrap()).map(|r| r.device.as_str());
        assert_eq!(dev("10.20.1.5"), Some("ib0"), "metric 0 beats 50");
        assert_eq!(dev("192.168.2.40"), Some("eth0"));
        assert_eq!(dev("8.8.8.8"), Some("eth0"), "the default route");
        assert_eq!(dev("10.21.0.1"), Some("eth0"), "a reject route is no route");
        assert_eq!(dev("::ffff:10.20.0.9"), Some("ib0"), "IPv4-mapped");
        assert_eq!(dev("fd00:1234::7"), Some("ib0"));
        assert_eq!(dev("2001:db8::1"), Some("eth0"));
        let gw = t.lookup("8.8.8.8".parse().unwrap()).unwrap().gateway;
        assert_eq!(gw, Some("192.168.2.1".parse().unwrap()));
        assert_eq!(
            t.lookup("10.20.1.5".parse().unwrap()).unwrap().prefix_len,
            16
        );
    }

    #[test]
    fn junk_lines_are_no_routes() {
        assert!(parse_route_v4("Iface\tDestination\nbogus line\n").is_empty());
        assert!(parse_route_v6("zz 40\n").is_empty());
        assert_eq!(
            RouteTable::default().lookup("10.0.0.1".parse().unwrap()),
            None
        );
    }
}
