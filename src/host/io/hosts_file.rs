//! A tree's `etc/hosts`: how NFS server names resolve below a fixture root or a collected bundle
//! (the tree's system answers with it), never through this machine's DNS, so a tree judges the
//! same wherever it is replayed. On the machine itself the system resolver answers
//! (`getaddrinfo`: `/etc/hosts`, then DNS, as nsswitch says, the same answer `mount.nfs` got).

use std::io;
use std::net::IpAddr;

use crate::host::io::root::Root;
use crate::nfs::source::parse_inet_aton;

/// The names of a tree's `etc/hosts`.
#[derive(Debug, Default)]
pub struct HostsFile {
    entries: Vec<(IpAddr, Vec<String>)>,
}

impl HostsFile {
    /// Reads `etc/hosts` below the root; a missing or unreadable file knows no name.
    pub fn read(root: &Root) -> Self {
        match root.read_text_lossy("etc/hosts") {
            Ok(Some(text)) => Self::parse(&text),
            Ok(None) => HostsFile::default(),
            Err(e) => {
                tracing::debug!("{e}; no server name is resolved below this root");
                HostsFile::default()
            }
        }
    }

    /// hosts(5): an address, then its names; `#` starts a comment.
    pub fn parse(text: &str) -> Self {
        let entries = text
            .lines()
            .filter_map(|line| {
                let line = line.split('#').next().unwrap_or("");
                let mut words = line.split_whitespace();
                let first = words.next()?;
                let addr = first
                    .parse::<IpAddr>()
                    .ok()
                    .or_else(|| parse_inet_aton(first).map(IpAddr::V4))?;
                let names: Vec<String> = words.map(|w| w.to_ascii_lowercase()).collect();
                (!names.is_empty()).then_some((addr, names))
            })
            .collect();
        HostsFile { entries }
    }
}

impl HostsFile {
    /// The addresses `host` has in the file (a trailing dot and case do not count).
    pub fn resolve(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let found: Vec<IpAddr> = self
            .entries
            .iter()
            .filter(|(_, names)| names.contains(&host))
            .map(|(a, _)| *a)
            .collect();
        if found.is_empty() {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host} is not in this tree's etc/hosts"),
            ))
        } else {
            Ok(found)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trees_hosts_file_resolves_its_names_and_no_other() {
        let hosts = HostsFile::parse(
            "127.0.0.1 localhost\n# filer 10.9.9.9\n10.0.2.15 nfs-gds-vm Filer # the server\n::1 ip6-localhost\n",
        );
        assert_eq!(
            hosts.resolve("filer.").unwrap(),
            ["10.0.2.15".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(
            hosts.resolve("ip6-localhost").unwrap(),
            ["::1".parse::<IpAddr>().unwrap()]
        );
        assert!(hosts.resolve("10.9.9.9").is_err());
        assert!(hosts.resolve("elsewhere").is_err());
    }

    #[test]
    fn below_a_tree_only_its_own_hosts_file_counts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/hosts"), "10.0.2.15 filer\n").unwrap();
        let r = HostsFile::read(&Root::new(dir.path()));
        assert_eq!(
            r.resolve("filer").unwrap(),
            ["10.0.2.15".parse::<IpAddr>().unwrap()]
        );
        // localhost is known to every machine, but not to a tree that does not name it.
        assert!(r.resolve("localhost").is_err());
    }
}
