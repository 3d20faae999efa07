//! The NFS mount source `SERVER:PATH` and what can be said about whether two server names
//! denote the same machine.
//!
//! `SERVER` is a host name, an IPv4 address, or an IPv6 address in brackets (`[fe80::1]:/export`,
//! optionally with a zone, `[fe80::1%eth0]`). Comparison is by address when both sides are
//! addresses and by lower-cased name when both are names; a name against an address cannot be
//! decided without DNS (two different names are taken as two servers, an alias would need DNS
//! too), and nfs-gds does not resolve names before a mount (at boot DNS may not be
//! up yet, and `mount.nfs` resolves them itself).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The server part of a mount source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerHost {
    V4(Ipv4Addr),
    V6 {
        addr: Ipv6Addr,
        zone: Option<String>,
    },
    /// A host name, lower-cased, without a trailing dot.
    Name(String),
}

/// Whether two servers are the same machine, as far as can be told without DNS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sameness {
    Same,
    Different,
    /// A name on one side and an address on the other.
    Undecidable,
}

/// An IPv4 address in any form `inet_aton(3)` accepts, as `mount.nfs` (through `getaddrinfo`)
/// does before it would ever ask DNS: one to four parts, each decimal, octal (leading `0`) or
/// hex (`0x`), the last part filling the remaining bytes (`167772687`, `0xa00020f`, `10.2.15`
/// and `012.0.2.017` are all addresses). Without this, such a server would count as a name and
/// escape every comparison by address.
pub fn parse_inet_aton(text: &str) -> Option<Ipv4Addr> {
    // The usual dotted quad first: std takes exactly four decimal parts without leading zeros,
    // which inet_aton reads the same way (`012` is octal to it, and refused by std).
    if let Ok(addr) = text.parse::<Ipv4Addr>() {
        return Some(addr);
    }
    let parts: Vec<u32> = text
        .split('.')
        .map(|p| {
            let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or(p.strip_prefix("0X")) {
                (h, 16)
            } else if p.len() > 1 && p.starts_with('0') {
                (&p[1..], 8)
            } else {
                (p, 10)
            };
            if digits.is_empty() && radix != 8 || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            u32::from_str_radix(digits, radix).ok()
        })
        .collect::<Option<_>>()?;
    let (init, last) = parts.split_last().map(|(l, i)| (i, *l))?;
    if init.len() > 3 || init.iter().any(|p| *p > 0xff) {
        return None;
    }
    let last_bits = 32 - 8 * init.len() as u32;
    if last_bits < 32 && last >> last_bits != 0 {
        return None;
    }
    let high = init
        .iter()
        .enumerate()
        .fold(0u32, |acc, (i, p)| acc | (p << (24 - 8 * i as u32)));
    Some(Ipv4Addr::from(high | last))
}

impl ServerHost {
    /// Parses a server as written in a source, brackets included for IPv6.
    pub fn parse(text: &str) -> Option<ServerHost> {
        if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            let (addr, zone) = match inner.split_once('%') {
                Some((a, z)) if !z.is_empty() => (a, Some(z.to_string())),
                Some(_) => return None,
                None => (inner, None),
            };
            return addr
                .parse::<Ipv6Addr>()
                .ok()
                .map(|addr| ServerHost::V6 { addr, zone });
        }
        if text.is_empty()
            || text.contains([':', '[', ']', '/'])
            || text.contains(char::is_whitespace)
        {
            return None;
        }
        if let Some(v4) = parse_inet_aton(text) {
            return Some(ServerHost::V4(v4));
        }
        let name = text.trim_end_matches('.').to_ascii_lowercase();
        (!name.is_empty()).then_some(ServerHost::Name(name))
    }

    pub fn is_ipv6(&self) -> bool {
        matches!(self, ServerHost::V6 { .. })
    }

    /// The address, when the server is written as one (IPv4-mapped IPv6 folds to IPv4).
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            ServerHost::V4(a) => Some(IpAddr::V4(*a)),
            ServerHost::V6 { addr, .. } => Some(
                addr.to_ipv4_mapped()
                    .map(IpAddr::V4)
                    .unwrap_or(IpAddr::V6(*addr)),
            ),
            ServerHost::Name(_) => None,
        }
    }

    /// Compares with another server, which may also be known by the address the kernel
    /// connected to (the `addr=` option of an existing mount).
    pub fn sameness(&self, other: &ServerHost, other_addr: Option<IpAddr>) -> Sameness {
        let fold = |ip: IpAddr| match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self, other) {
            // Two different names are taken as two servers; an alias would need DNS to see.
            (ServerHost::Name(a), ServerHost::Name(b)) => {
                if a == b {
                    Sameness::Same
                } else {
                    Sameness::Different
                }
            }
            _ => match (self.ip(), other.ip().or(other_addr.map(fold))) {
                (Some(a), Some(b)) => {
                    if a == b {
                        Sameness::Same
                    } else {
                        Sameness::Different
                    }
                }
                (None, None) => Sameness::Different,
                _ => Sameness::Undecidable,
            },
        }
    }
}

impl fmt::Display for ServerHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerHost::V4(a) => write_dotted_quad(f, a),
            ServerHost::V6 { addr, zone: None } => write!(f, "[{addr}]"),
            ServerHost::V6 {
                addr,
                zone: Some(z),
            } => write!(f, "[{addr}%{z}]"),
            ServerHost::Name(n) => f.write_str(n),
        }
    }
}

/// What `Ipv4Addr`'s `Display` writes, without its formatting machinery: the agent names a
/// server in a check summary for every mount, thousands a pass.
fn write_dotted_quad(f: &mut fmt::Formatter<'_>, a: &Ipv4Addr) -> fmt::Result {
    let mut text = [0u8; 15];
    let mut n = 0;
    for (i, octet) in a.octets().into_iter().enumerate() {
        if i > 0 {
            text[n] = b'.';
            n += 1;
        }
        for (div, always) in [(100, false), (10, false), (1, true)] {
            if always || octet >= div {
                text[n] = b'0' + octet / div % 10;
                n += 1;
            }
        }
    }
    f.write_str(std::str::from_utf8(&text[..n]).map_err(|_| fmt::Error)?)
}

/// A parsed `SERVER:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NfsSource {
    pub server: ServerHost,
    /// The server exactly as written (brackets included).
    pub server_text: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("mount source {0:?} is not SERVER:/PATH")]
    NoColon(String),
    #[error("mount source {0:?} has no export path after the ':'")]
    NoPath(String),
    #[error("mount source {0:?}: put an IPv6 server address in brackets, e.g. [fe80::1]:/export")]
    BareIpv6(String),
    #[error("mount source {0:?}: {1:?} is not a valid server name or address")]
    BadServer(String, String),
    #[error("mount source {0:?}: nfs:// URLs are not supported, write SERVER:/PATH")]
    Url(String),
}

impl NfsSource {
    pub fn parse(spec: &str) -> Result<NfsSource, SourceError> {
        let err_spec = || spec.to_string();
        if spec.starts_with("nfs://") {
            return Err(SourceError::Url(err_spec()));
        }
        let (server_text, path) = if spec.starts_with('[') {
            let close = spec
                .find(']')
                .ok_or_else(|| SourceError::BadServer(err_spec(), spec.to_string()))?;
            let rest = &spec[close + 1..];
            let path = rest
                .strip_prefix(':')
                .ok_or_else(|| SourceError::NoColon(err_spec()))?;
            (&spec[..=close], path)
        } else {
            let (server, path) = spec
                .split_once(':')
                .ok_or_else(|| SourceError::NoColon(err_spec()))?;
            let before_slash = &spec[..spec.find('/').unwrap_or(spec.len())];
            if before_slash.matches(':').count() > 1 {
                return Err(SourceError::BareIpv6(err_spec()));
            }
            (server, path)
        };
        if path.is_empty() {
            return Err(SourceError::NoPath(err_spec()));
        }
        let server = ServerHost::parse(server_text)
            .ok_or_else(|| SourceError::BadServer(err_spec(), server_text.to_string()))?;
        Ok(NfsSource {
            server,
            server_text: server_text.to_string(),
            path: path.to_string(),
        })
    }
}

impl fmt::Display for NfsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.server_text, self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dotted_quad_is_written_as_std_writes_it() {
        for o in 0..=255u8 {
            for a in [
                Ipv4Addr::new(o, 0, 0, 0),
                Ipv4Addr::new(10, o, 2, o),
                Ipv4Addr::new(255, 255, o, 255),
            ] {
                assert_eq!(ServerHost::V4(a).to_string(), a.to_string());
            }
        }
    }

    #[test]
    fn sources_parse() {
        let s = NfsSource::parse("10.0.2.15:/export").unwrap();
        assert_eq!(s.server, ServerHost::V4("10.0.2.15".parse().unwrap()));
        assert_eq!(s.path, "/export");
        let s = NfsSource::parse("[fe80::1]:/export").unwrap();
        assert!(s.server.is_ipv6());
        assert_eq!(s.server_text, "[fe80::1]");
        assert_eq!(s.to_string(), "[fe80::1]:/export");
        let s = NfsSource::parse("[fe80::1%eth0]:/a").unwrap();
        assert_eq!(
            s.server,
            ServerHost::V6 {
                addr: "fe80::1".parse().unwrap(),
                zone: Some("eth0".into())
            }
        );
        let s = NfsSource::parse("Filer.Example.COM.:/ex port").unwrap();
        assert_eq!(s.server, ServerHost::Name("filer.example.com".into()));
        assert_eq!(s.path, "/ex port");
        // A colon inside the path is fine.
        assert_eq!(NfsSource::parse("srv:/a:b").unwrap().path, "/a:b");
    }

    #[test]
    fn bad_sources_say_why() {
        assert_eq!(
            NfsSource::parse("srv"),
            Err(SourceError::NoColon("srv".into()))
        );
        assert_eq!(
            NfsSource::parse("srv:"),
            Err(SourceError::NoPath("srv:".into()))
        );
        assert_eq!(
            NfsSource::parse("fe80::1:/export"),
            Err(SourceError::BareIpv6("fe80::1:/export".into()))
        );
        assert!(matches!(
            NfsSource::parse("[fe80::1:/export"),
            Err(SourceError::BadServer(..))
        ));
        assert!(matches!(
            NfsSource::parse("[nonsense]:/x"),
            Err(SourceError::BadServer(..))
        ));
        assert!(matches!(
            NfsSource::parse("[::1]/x"),
            Err(SourceError::NoColon(..))
        ));
        assert!(matches!(
            NfsSource::parse(":/x"),
            Err(SourceError::BadServer(..))
        ));
        assert!(matches!(
            NfsSource::parse("nfs://srv/x"),
            Err(SourceError::Url(..))
        ));
    }

    #[test]
    fn every_inet_aton_form_is_an_address() {
        let v4 = |s: &str| ServerHost::V4(s.parse().unwrap());
        for (text, addr) in [
            ("167772687", "10.0.2.15"),
            ("0xa00020f", "10.0.2.15"),
            ("0XA00020F", "10.0.2.15"),
            ("012.0.2.017", "10.0.2.15"),
            ("10.2.15", "10.2.0.15"),
            ("10.131087", "10.2.0.15"),
            ("10.0.2.15", "10.0.2.15"),
            ("0", "0.0.0.0"),
            ("4294967295", "255.255.255.255"),
        ] {
            assert_eq!(ServerHost::parse(text), Some(v4(addr)), "{text}");
        }
        for name in [
            "4294967296",
            "256.0.0.1",
            "1.2.3.4.5",
            "08.1.1.1",
            "1e3",
            "10..2",
            "0x",
        ] {
            assert!(
                matches!(ServerHost::parse(name), Some(ServerHost::Name(_))),
                "{name}"
            );
        }
        // The trap's comparison sees through the spelling.
        let one_number = NfsSource::parse("167772687:/export").unwrap().server;
        assert_eq!(
            one_number.sameness(&ServerHost::parse("10.0.2.15").unwrap(), None),
            Sameness::Same
        );
    }

    #[test]
    fn sameness_without_dns() {
        let ip = ServerHost::parse("10.0.2.15").unwrap();
        let mapped = ServerHost::parse("[::ffff:10.0.2.15]").unwrap();
        let other_ip = ServerHost::parse("10.0.2.16").unwrap();
        let name = ServerHost::parse("filer").unwrap();
        let name_upper = ServerHost::parse("FILER.").unwrap();
        let v6a = ServerHost::parse("[fe80:0::1]").unwrap();
        let v6b = ServerHost::parse("[fe80::1]").unwrap();
        assert_eq!(ip.sameness(&mapped, None), Sameness::Same);
        assert_eq!(ip.sameness(&other_ip, None), Sameness::Different);
        assert_eq!(v6a.sameness(&v6b, None), Sameness::Same);
        assert_eq!(name.sameness(&name_upper, None), Sameness::Same);
        assert_eq!(
            name.sameness(&ServerHost::parse("other").unwrap(), None),
            Sameness::Different
        );
        assert_eq!(name.sameness(&ip, None), Sameness::Undecidable);
        assert_eq!(ip.sameness(&name, None), Sameness::Undecidable);
        // The kernel's addr= of an existing mount settles a name against an address.
        assert_eq!(
            ip.sameness(&name, Some("10.0.2.15".parse().unwrap())),
            Sameness::Same
        );
        assert_eq!(
            ip.sameness(&name, Some("10.9.9.9".parse().unwrap())),
            Sameness::Different
        );
        // But not when our side is the name: that needs DNS.
        assert_eq!(
            name.sameness(&other_ip, Some("10.0.2.16".parse().unwrap())),
            Sameness::Undecidable
        );
        assert_eq!(
            name.sameness(
                &ServerHost::parse("other").unwrap(),
                Some("10.0.2.16".parse().unwrap())
            ),
            Sameness::Different
        );
    }
}
