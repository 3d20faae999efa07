//! What is installed on the node, as far as the known-bad list asks: the Debian packages dpkg
//! records as installed (`/var/lib/dpkg/status`), the machine's product name
//! (`/sys/class/dmi/id/product_name`), and the release of VAST's NFS bundle when its sunrpc is
//! loaded (`/sys/module/sunrpc/parameters/nfs_bundle_version`).

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    /// `(package, version)` of every package dpkg records as installed; `None` without dpkg.
    pub debs: Option<Vec<(String, String)>>,
    pub product_name: Option<String>,
    pub vastnfs_version: Option<String>,
}

impl Inventory {
    pub fn read(root: &Root) -> Result<Self, HostError> {
        let line = |rel: &str| -> Result<Option<String>, HostError> {
            Ok(root
                .read_text_lossy(rel)?
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()))
        };
        Ok(Inventory {
            debs: root
                .read_text_lossy("var/lib/dpkg/status")?
                .map(|t| parse_dpkg_status(&t)),
            product_name: line("sys/class/dmi/id/product_name")?,
            vastnfs_version: line("sys/module/sunrpc/parameters/nfs_bundle_version")?,
        })
    }

    /// The installed version of Debian package `name`.
    pub fn deb(&self, name: &str) -> Option<&str> {
        self.debs
            .as_ref()?
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The installed packages of a dpkg status file: stanzas whose `Status:` ends in `installed`.
pub fn parse_dpkg_status(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
        };
        let installed = field("Status").is_some_and(|s| s.ends_with(" installed"));
        if let (true, Some(p), Some(v)) = (installed, field("Package"), field("Version")) {
            out.push((p.to_string(), v.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_installed_packages_count() {
        let text = "Package: nvidia-fs-dkms\nStatus: install ok installed\nVersion: 2.19.7~12.4.1-2\n\n\
                    Package: nvidia-kernel-dkms\nStatus: deinstall ok config-files\nVersion: 535.247.01-1\n\n\
                    Package: dkms\nStatus: install ok installed\nPriority: optional\nVersion: 3.0.10-8\n";
        assert_eq!(
            parse_dpkg_status(text),
            vec![
                ("nvidia-fs-dkms".to_string(), "2.19.7~12.4.1-2".to_string()),
                ("dkms".to_string(), "3.0.10-8".to_string()),
            ]
        );
    }
}
