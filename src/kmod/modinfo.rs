//! The `.modinfo` section of a module: NUL-separated `key=value` strings written by
//! `MODULE_*()` macros and modpost (`name`, `vermagic`, `srcversion`, `version`, `license`,
//! `depends`, …). Keys may repeat (`alias`, `firmware`); all are kept in order.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Modinfo {
    pub name: Option<String>,
    pub vermagic: Option<String>,
    pub srcversion: Option<String>,
    pub version: Option<String>,
    pub license: Option<String>,
    pub depends: Vec<String>,
    /// Every pair, in section order.
    #[serde(skip)]
    pub all: Vec<(String, String)>,
}

impl Modinfo {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.all
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The kernel release the module was built for: the first word of its vermagic.
    pub fn vermagic_release(&self) -> Option<&str> {
        self.vermagic.as_deref()?.split_whitespace().next()
    }
}

/// Parses the raw bytes of a `.modinfo` section. Non-UTF-8 bytes are replaced; entries without
/// `=` and empty padding are skipped.
pub fn parse_modinfo(section: &[u8]) -> Modinfo {
    let mut info = Modinfo::default();
    for raw in section.split(|&b| b == 0) {
        if raw.is_empty() {
            continue;
        }
        let entry = String::from_utf8_lossy(raw);
        let Some((k, v)) = entry.split_once('=') else {
            continue;
        };
        info.all.push((k.to_string(), v.to_string()));
    }
    info.name = info.get("name").map(str::to_string);
    info.vermagic = info.get("vermagic").map(|v| v.trim_end().to_string());
    info.srcversion = info.get("srcversion").map(str::to_string);
    info.version = info.get("version").map(str::to_string);
    info.license = info.get("license").map(str::to_string);
    info.depends = info
        .get("depends")
        .map(|d| {
            d.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_repeats() {
        let raw = b"alias=rpcrdma6\0alias=xprtrdma\0license=Dual BSD/GPL\0depends=sunrpc,ib_core,rdma_cm\0\0\0name=rpcrdma\0vermagic=6.1.0-50-amd64 SMP preempt mod_unload modversions \0junk\0";
        let m = parse_modinfo(raw);
        assert_eq!(m.name.as_deref(), Some("rpcrdma"));
        assert_eq!(m.license.as_deref(), Some("Dual BSD/GPL"));
        assert_eq!(m.depends, vec!["sunrpc", "ib_core", "rdma_cm"]);
        assert_eq!(
            m.vermagic.as_deref(),
            Some("6.1.0-50-amd64 SMP preempt mod_unload modversions")
        );
        assert_eq!(m.srcversion, None);
        assert_eq!(m.all.iter().filter(|(k, _)| k == "alias").count(), 2);
    }

    #[test]
    fn empty_depends_is_empty() {
        assert!(parse_modinfo(b"depends=\0").depends.is_empty());
    }
}
