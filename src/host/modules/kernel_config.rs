//! A kernel's build configuration (`/boot/config-<release>`), the options nfs-gds asks about.
//!
//! Distributions install the `.config` a kernel was built with as `/boot/config-<release>`
//! (Debian, Ubuntu, RHEL, SUSE) or `/lib/modules/<release>/config` (Fedora, Arch); a running
//! kernel built with `CONFIG_IKCONFIG_PROC` also shows it as `/proc/config.gz`. Lines are
//! `CONFIG_X=y|m|<value>` or `# CONFIG_X is not set`.

use std::collections::BTreeMap;
use std::io::Read;

use serde::Serialize;

use crate::host::{HostError, Root};

/// Refuse to decompress a `/proc/config.gz` beyond this (real ones are about 300 KB).
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// The value of one option.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigValue {
    /// `=y`
    Yes,
    /// `=m`
    Module,
    /// `# CONFIG_X is not set`
    NotSet,
    /// Any other value (strings keep their quotes stripped).
    Value(String),
}

/// A parsed configuration and the file it came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelConfig {
    /// The host path it was read from.
    pub path: String,
    pub options: BTreeMap<String, ConfigValue>,
}

impl KernelConfig {
    /// The value of `name` (with its `CONFIG_` prefix); `None` when the file does not mention it,
    /// which for a complete `.config` means the option does not exist in that kernel.
    pub fn get(&self, name: &str) -> Option<&ConfigValue> {
        self.options.get(name)
    }

    /// `=y`.
    pub fn is_yes(&self, name: &str) -> bool {
        self.get(name) == Some(&ConfigValue::Yes)
    }
}

/// Parses `.config` text. Lines of neither form are ignored.
pub fn parse_kernel_config(text: &str) -> BTreeMap<String, ConfigValue> {
    let mut options = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some(name) = rest.strip_suffix(" is not set") {
                if name.starts_with("CONFIG_") && !name.contains(' ') {
                    options.insert(name.to_string(), ConfigValue::NotSet);
                }
            }
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if !name.starts_with("CONFIG_") || name.contains(' ') {
            continue;
        }
        let value = match value {
            "y" => ConfigValue::Yes,
            "m" => ConfigValue::Module,
            v => ConfigValue::Value(v.trim_matches('"').to_string()),
        };
        options.insert(name.to_string(), value);
    }
    options
}

/// The configuration of `release`: `/boot/config-<release>`, else the module tree's `config`.
/// `Ok(None)` when no file is installed.
pub fn read_kernel_config(root: &Root, release: &str) -> Result<Option<KernelConfig>, HostError> {
    for path in [
        format!("/boot/config-{release}"),
        format!("/lib/modules/{release}/config"),
        format!("/usr/lib/modules/{release}/config"),
    ] {
        if let Some(text) = root.read_text_lossy(&path)? {
            return Ok(Some(KernelConfig {
                options: parse_kernel_config(&text),
                path,
            }));
        }
    }
    Ok(None)
}

/// The running kernel's `/proc/config.gz`, when it has one.
pub fn read_proc_config(root: &Root) -> Result<Option<KernelConfig>, HostError> {
    const PATH: &str = "/proc/config.gz";
    let Some(bytes) = root.read_bytes(PATH)? else {
        return Ok(None);
    };
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .take(MAX_CONFIG_BYTES)
        .read_to_end(&mut text)
        .map_err(|source| HostError::Read {
            path: root.join(PATH),
            source,
        })?;
    Ok(Some(KernelConfig {
        options: parse_kernel_config(&String::from_utf8_lossy(&text)),
        path: PATH.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_line_forms_parse() {
        let o = parse_kernel_config(
            "#\n# Automatically generated file; DO NOT EDIT.\nCONFIG_MODULE_SIG=y\n# CONFIG_MODULE_SIG_FORCE is not set\nCONFIG_MODULE_SIG_HASH=\"sha512\"\nCONFIG_SUNRPC_XPRT_RDMA=m\nnot a line\n",
        );
        assert_eq!(o.get("CONFIG_MODULE_SIG"), Some(&ConfigValue::Yes));
        assert_eq!(o.get("CONFIG_MODULE_SIG_FORCE"), Some(&ConfigValue::NotSet));
        assert_eq!(
            o.get("CONFIG_MODULE_SIG_HASH"),
            Some(&ConfigValue::Value("sha512".into()))
        );
        assert_eq!(o.get("CONFIG_SUNRPC_XPRT_RDMA"), Some(&ConfigValue::Module));
        assert_eq!(o.len(), 4);
        let c = KernelConfig {
            path: "/boot/config-x".into(),
            options: o,
        };
        assert!(c.is_yes("CONFIG_MODULE_SIG"));
    }

    #[test]
    fn proc_config_gz_is_decompressed() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"CONFIG_MODULE_SIG_FORCE=y\n").unwrap();
        std::fs::write(dir.path().join("proc/config.gz"), gz.finish().unwrap()).unwrap();
        let root = Root::new(dir.path());
        let c = read_proc_config(&root).unwrap().unwrap();
        assert!(c.is_yes("CONFIG_MODULE_SIG_FORCE"));
        assert_eq!(c.path, "/proc/config.gz");
        std::fs::write(dir.path().join("proc/config.gz"), b"not gzip").unwrap();
        let e = read_proc_config(&root).unwrap_err().to_string();
        assert!(e.contains("proc/config.gz"), "{e}");
    }
}
