//! The package manager's records: which package owns a file, per `dpkg -S` or `rpm -qf`.

use super::os_release::Family;
use crate::system::System;

/// `dpkg -S` answers `pkg: /path`; `rpm -qf` answers the package name or "… not owned …".
pub fn parse_owner(family: Family, stdout: &str) -> Option<String> {
    let line = stdout.lines().next()?.trim();
    if line.is_empty() || line.contains("not owned") || line.contains("no path found") {
        return None;
    }
    match family {
        Family::Debian => line.split_once(": ").map(|(p, _)| p.to_string()),
        _ => Some(line.to_string()),
    }
}

/// The package that owns `path` (a path on the host), when the family's package manager knows.
pub fn owner_package(system: &dyn System, family: Family, path: &str) -> Option<String> {
    let out = match family {
        Family::Debian => system.run("dpkg", &["-S", path]),
        Family::Rhel | Family::Suse => system.run("rpm", &["-qf", path]),
        Family::Other => return None,
    };
    out.ok_stdout().and_then(|s| parse_owner(family, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners() {
        assert_eq!(
            parse_owner(
                Family::Debian,
                "linux-image-6.1.0-50-amd64: /lib/modules/x/rpcrdma.ko\n"
            )
            .as_deref(),
            Some("linux-image-6.1.0-50-amd64")
        );
        assert_eq!(
            parse_owner(
                Family::Debian,
                "dpkg-query: no path found matching pattern /x\n"
            ),
            None
        );
        assert_eq!(
            parse_owner(
                Family::Rhel,
                "kmod-mlnx-nfsrdma-24.10-OFED.24.10.1.1.4.1.rhel9u4.x86_64\n"
            )
            .as_deref(),
            Some("kmod-mlnx-nfsrdma-24.10-OFED.24.10.1.1.4.1.rhel9u4.x86_64")
        );
        assert_eq!(
            parse_owner(Family::Rhel, "file /x is not owned by any package\n"),
            None
        );
    }
}
