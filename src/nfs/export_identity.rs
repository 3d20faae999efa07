//! Whether a mount the kernel shows is of a given export: the one rule for "the same server and
//! the same path" that the helper (which new mount is its own), `[[mount]]` tables, `verify`, the
//! agent and doctor follow.
//!
//! The kernel does not show a mount's source as it was given. NFS shares one superblock between
//! every mount of the same export of the same server (`sharecache`, the default), and mountinfo
//! shows each of them under the superblock's first `dev_name`: `10.0.2.15:/export` mounted while
//! `127.0.0.1:/export` or `filer:/export` of that machine is mounted is shown under the earlier
//! name, and the path is rebuilt (`/export/` is shown `/export`). What the kernel does keep is
//! the address it talks to, `addr=` among the mount's options. So an export is the same when
//!
//! - the paths are the same by their components, and
//! - the servers are: written the same (a name in any case, an address in any form), or one of
//!   the addresses the expected server's name resolves to is the mount's `addr=` or its shown
//!   server (for an export only written, with no `addr=`, what its name resolves to).
//!
//! What cannot be known from the mount table: a mount shown under *another address* of the same
//! machine (NFSv4 trunking merges the clients of two addresses of one server, and the mount then
//! shows the first address, as `addr=` too) is not the same server to this rule. The helper knows
//! its own mount by other evidence (`mount::identity`); for everyone else its record names the
//! export it was asked for.
//!
//! Names are resolved through the [`System`] only when the text and the addresses written in the
//! sources do not already decide, and each name at most once per [`ServerAddrs`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;

use super::source::{NfsSource, ServerHost};
use crate::system::System;

/// IPv4-mapped IPv6 folded to IPv4, as the kernel and `ServerHost::ip` compare.
fn fold(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// The addresses of servers, each name resolved at most once.
pub struct ServerAddrs<'r> {
    /// Who resolves names; `None`: no name resolves, only written addresses count.
    system: Option<&'r dyn System>,
    memo: RefCell<HashMap<String, Rc<[IpAddr]>>>,
}

impl std::fmt::Debug for ServerAddrs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAddrs")
            .field("resolved", &self.memo.borrow().len())
            .finish_non_exhaustive()
    }
}

impl<'r> ServerAddrs<'r> {
    /// Names resolved by `system` (the machine's resolver, or a tree's `etc/hosts`).
    pub fn new(system: &'r dyn System) -> Self {
        ServerAddrs {
            system: Some(system),
            memo: RefCell::new(HashMap::new()),
        }
    }

    /// No name resolves: only the addresses written in the sources count.
    pub fn blind() -> Self {
        ServerAddrs {
            system: None,
            memo: RefCell::new(HashMap::new()),
        }
    }

    /// The addresses `server` denotes: itself when written as an address, else what its name
    /// resolves to (none when it does not resolve).
    pub fn of(&self, server: &ServerHost) -> Rc<[IpAddr]> {
        match server {
            ServerHost::Name(name) => {
                if let Some(known) = self.memo.borrow().get(name) {
                    return known.clone();
                }
                let addrs: Rc<[IpAddr]> = self
                    .system
                    .and_then(|s| s.resolve(name).ok())
                    .map(|a| a.into_iter().map(fold).collect::<Vec<_>>())
                    .unwrap_or_default()
                    .into();
                tracing::debug!(
                    "resolved the server name {name:?} to [{}]",
                    addrs
                        .iter()
                        .map(IpAddr::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                self.memo.borrow_mut().insert(name.clone(), addrs.clone());
                addrs
            }
            other => other.ip().map(fold).into_iter().collect(),
        }
    }
}

/// A mount's export as the kernel shows it: its source, and the `addr=` the kernel connected to.
#[derive(Debug, Clone, Copy)]
pub struct ShownExport<'a> {
    pub source: &'a str,
    pub addr: Option<IpAddr>,
}

impl<'a> ShownExport<'a> {
    /// An export as written (a SPEC, a rule's source): no `addr=` beside what it names itself.
    pub fn written(source: &'a str) -> Self {
        ShownExport { source, addr: None }
    }
}

/// Whether the server of `expected` is the server of the shown mount (see the module text).
fn same_server(
    expected: &ServerHost,
    shown: &ServerHost,
    addr: Option<IpAddr>,
    addrs: &ServerAddrs,
) -> bool {
    match (expected, shown) {
        (ServerHost::Name(a), ServerHost::Name(b)) if a == b => return true,
        _ => {}
    }
    if let (Some(a), Some(b)) = (expected.ip(), shown.ip()) {
        if fold(a) == fold(b) {
            return true;
        }
    }
    // What the shown side talks to: the kernel's `addr=` and an address it is written as; an
    // export only written by name (a SPEC, `policy show --source`) by what that name resolves to.
    let mut seen: Vec<IpAddr> = addr.into_iter().chain(shown.ip()).map(fold).collect();
    if seen.is_empty() {
        seen = addrs.of(shown).to_vec();
    }
    if seen.is_empty() {
        return false;
    }
    addrs.of(expected).iter().any(|a| seen.contains(a))
}

/// The path's components: `/export/`, `//export` and `/export` are one path to the kernel.
fn components(path: &str) -> impl Iterator<Item = &str> + Clone {
    path.split('/').filter(|c| !c.is_empty())
}

/// Whether the shown mount is of exactly the export `expected` (same server, same path).
pub fn is_export(expected: &NfsSource, shown: ShownExport, addrs: &ServerAddrs) -> bool {
    let Ok(seen) = NfsSource::parse(shown.source) else {
        return false;
    };
    components(&expected.path).eq(components(&seen.path))
        && same_server(&expected.server, &seen.server, shown.addr, addrs)
}

/// Whether the shown mount is of the export `rule` or below it (`srv:/a` covers `srv:/a/b`, not
/// `srv:/ab`; `srv:/` covers every export of `srv`), by the same server rule.
pub fn export_covers(rule: &NfsSource, shown: ShownExport, addrs: &ServerAddrs) -> bool {
    let Ok(seen) = NfsSource::parse(shown.source) else {
        return false;
    };
    let mut below = components(&seen.path);
    components(&rule.path).all(|c| below.next() == Some(c))
        && same_server(&rule.server, &seen.server, shown.addr, addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::system::Fake;

    /// `/etc/hosts` of the tests: `filer` is 10.0.2.15.
    fn hosts() -> Fake {
        Fake::new().host("filer", &["10.0.2.15".parse().unwrap()])
    }

    fn shown<'a>(source: &'a str, addr: &str) -> ShownExport<'a> {
        ShownExport {
            source,
            addr: Some(addr.parse().unwrap()),
        }
    }

    fn src(s: &str) -> NfsSource {
        NfsSource::parse(s).unwrap()
    }

    #[test]
    fn a_mount_shown_under_the_name_of_its_shared_superblock_is_the_export_by_its_address() {
        let hosts = hosts();
        let addrs = ServerAddrs::new(&hosts);
        // Mounted as 10.0.2.15:/export while filer:/export/ was mounted: shown as filer:/export.
        assert!(is_export(
            &src("10.0.2.15:/export"),
            shown("filer:/export", "10.0.2.15"),
            &addrs
        ));
        // The other way round: the rule names the server, the mount shows its address.
        assert!(is_export(
            &src("filer:/export/"),
            shown("10.0.2.15:/export", "10.0.2.15"),
            &addrs
        ));
        assert!(is_export(
            &src("FILER://export"),
            shown("filer:/export", "10.0.2.15"),
            &addrs
        ));
    }

    #[test]
    fn another_server_or_another_path_is_not_the_export() {
        let hosts = hosts();
        let addrs = ServerAddrs::new(&hosts);
        assert!(!is_export(
            &src("10.0.2.15:/export"),
            shown("10.0.2.99:/export", "10.0.2.99"),
            &addrs
        ));
        assert!(!is_export(
            &src("10.0.2.15:/export"),
            shown("10.0.2.15:/export/sub", "10.0.2.15"),
            &addrs
        ));
        // Another address of the same machine cannot be told from the table (see the module).
        assert!(!is_export(
            &src("10.0.2.15:/export"),
            shown("127.0.0.1:/export", "127.0.0.1"),
            &addrs
        ));
        // A name that does not resolve is only ever itself.
        assert!(!is_export(
            &src("nas:/export"),
            shown("10.0.2.15:/export", "10.0.2.15"),
            &addrs
        ));
    }

    #[test]
    fn a_rule_covers_exports_below_it_on_the_same_server() {
        let hosts = hosts();
        let addrs = ServerAddrs::new(&hosts);
        let rule = src("filer:/export");
        assert!(export_covers(
            &rule,
            shown("10.0.2.15:/export/pvc-1", "10.0.2.15"),
            &addrs
        ));
        assert!(!export_covers(
            &rule,
            shown("10.0.2.15:/exportX", "10.0.2.15"),
            &addrs
        ));
        assert!(export_covers(
            &src("10.0.2.15:/"),
            shown("filer:/a/b", "10.0.2.15"),
            &addrs
        ));
    }

    /// A SPEC or `policy show --source` has no `addr=`: a name there is resolved too.
    #[test]
    fn an_export_written_by_name_is_the_export_of_the_address_it_resolves_to() {
        let hosts = hosts();
        let addrs = ServerAddrs::new(&hosts);
        assert!(is_export(
            &src("10.0.2.15:/export"),
            ShownExport::written("filer:/export"),
            &addrs
        ));
        assert!(export_covers(
            &src("10.0.2.15:/export"),
            ShownExport::written("filer:/export/pvc-1"),
            &addrs
        ));
        assert!(!is_export(
            &src("10.0.2.99:/export"),
            ShownExport::written("filer:/export"),
            &addrs
        ));
    }

    #[test]
    fn each_name_is_resolved_once() {
        let r = hosts();
        let addrs = ServerAddrs::new(&r);
        for _ in 0..3 {
            assert!(is_export(
                &src("filer:/e"),
                shown("10.0.2.15:/e", "10.0.2.15"),
                &addrs
            ));
        }
        assert_eq!(r.calls(), ["resolve filer"]);
    }
}
