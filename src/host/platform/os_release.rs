//! `/etc/os-release`: which distribution this is, and its package family, which decides the
//! commands a remediation plan gives.

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// `/etc/os-release`, the fields that matter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OsRelease {
    pub id: Option<String>,
    pub id_like: Vec<String>,
    pub version_id: Option<String>,
    pub pretty_name: Option<String>,
}

pub fn parse_os_release(text: &str) -> OsRelease {
    let mut os = OsRelease::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"').trim_matches('\'').to_string();
        match k.trim() {
            "ID" => os.id = Some(v),
            "ID_LIKE" => os.id_like = v.split_whitespace().map(str::to_string).collect(),
            "VERSION_ID" => os.version_id = Some(v),
            "PRETTY_NAME" => os.pretty_name = Some(v),
            _ => {}
        }
    }
    os
}

/// Package family, which decides the commands in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Debian,
    Rhel,
    Suse,
    Other,
}

impl OsRelease {
    /// `/etc/os-release`, else `/usr/lib/os-release`; empty when neither exists.
    pub fn read(root: &Root) -> Result<Self, HostError> {
        Ok(root
            .read_text_lossy("etc/os-release")?
            .or(root.read_text_lossy("usr/lib/os-release")?)
            .map(|t| parse_os_release(&t))
            .unwrap_or_default())
    }

    pub fn family(&self) -> Family {
        let ids = self.id.iter().chain(self.id_like.iter());
        for id in ids {
            match id.as_str() {
                "debian" | "ubuntu" => return Family::Debian,
                "rhel" | "centos" | "fedora" | "rocky" | "almalinux" | "ol" => return Family::Rhel,
                "sles" | "suse" | "opensuse" | "opensuse-leap" => return Family::Suse,
                _ => {}
            }
        }
        Family::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_families() {
        let u =
            parse_os_release("NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"22.04\"\n");
        assert_eq!(u.family(), Family::Debian);
        assert_eq!(u.version_id.as_deref(), Some("22.04"));
        let r = parse_os_release("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n");
        assert_eq!(r.family(), Family::Rhel);
        assert_eq!(parse_os_release("ID=arch\n").family(), Family::Other);
    }
}
