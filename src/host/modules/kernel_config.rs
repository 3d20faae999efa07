//! A kernel's build configuration (`/boot/config-<release>`), the options nfs-gds asks about.
//!
//! Distributions install the `.config` a kernel was built with as `/boot/config-<release>`
//! (Debian, Ubuntu, RHEL, SUSE) or `/lib/modules/<release>/config` (Fedora, Arch); a running
//! kernel built with `CONFIG_IKCONFIG_PROC` also shows it as `/proc/config.gz`. Lines are
//! `CONFIG_X=y|m|<value>` or `# CONFIG_X is not set`.
//!
//! A real configuration has some 10,000 options and the checks ask about eight, so the file is
//! never parsed whole: each reader declares the options it judges (a `CONFIG_OPTIONS` list
//! beside its judgement), and [`scan_kernel_config`] looks for just those lines, one
//! `memmem` pass per option, keeping the last line of each as `make` does. Asking a
//! [`KernelConfig`] about an option nobody declared is a programming error (a debug assertion),
//! so a list cannot fall behind the code that reads it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use memchr::memmem;
use serde::{Deserialize, Serialize};

use crate::host::io::error::HostError;
use crate::host::io::facts_cache::ReadFile;
use crate::host::io::reader::FileKind;
use crate::host::io::root::Root;

/// Refuse to decompress a `/proc/config.gz` beyond this (real ones are about 300 KB).
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// The value of one option.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// The asked-for options of a configuration and the file they came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelConfig {
    /// The host path it was read from.
    pub path: String,
    /// The options looked for (with their `CONFIG_` prefix).
    #[serde(skip)]
    pub asked: Vec<&'static str>,
    /// Those of them the file mentions.
    pub options: BTreeMap<String, ConfigValue>,
}

impl KernelConfig {
    /// The configuration `text` (read from `path`) gives for the options `asked`.
    pub fn scan(path: impl Into<String>, text: &[u8], asked: &[&'static str]) -> Self {
        KernelConfig {
            path: path.into(),
            asked: asked.to_vec(),
            options: scan_kernel_config(text, asked),
        }
    }

    /// The value of `name` (with its `CONFIG_` prefix); `None` when the file does not mention it,
    /// which for a complete `.config` means the option does not exist in that kernel.
    pub fn get(&self, name: &str) -> Option<&ConfigValue> {
        debug_assert!(
            self.asked.contains(&name),
            "{name} is not in the CONFIG_OPTIONS the configuration was read for"
        );
        self.options.get(name)
    }

    /// `=y`.
    pub fn is_yes(&self, name: &str) -> bool {
        self.get(name) == Some(&ConfigValue::Yes)
    }
}

/// The values of the options `wanted` in `.config` text, without reading any other line: for
/// each option, every occurrence of its name is found with `memmem` and kept when it is a line
/// of one of the two forms (surrounding blanks allowed); the last such line wins. Other lines,
/// and options the text does not mention, are not in the map.
pub fn scan_kernel_config(text: &[u8], wanted: &[&str]) -> BTreeMap<String, ConfigValue> {
    let mut options = BTreeMap::new();
    for &name in wanted {
        let last = memmem::find_iter(text, name.as_bytes())
            .filter_map(|at| value_at(text, at, name.len()))
            .last();
        if let Some(value) = last {
            options.insert(name.to_string(), value);
        }
    }
    options
}

/// The value of the option whose name occupies `text[at..at + len]`, when that occurrence is
/// the name of a `CONFIG_X=…` or `# CONFIG_X is not set` line.
fn value_at(text: &[u8], at: usize, len: usize) -> Option<ConfigValue> {
    let start = memchr::memrchr(b'\n', &text[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
    let before = text[start..at].trim_ascii_start();
    let after = text[at + len..end].trim_ascii_end();
    match before {
        b"" => {
            let value = after.strip_prefix(b"=")?;
            Some(match value {
                b"y" => ConfigValue::Yes,
                b"m" => ConfigValue::Module,
                v => ConfigValue::Value(String::from_utf8_lossy(v).trim_matches('"').to_string()),
            })
        }
        b"# " => (after == b" is not set").then_some(ConfigValue::NotSet),
        _ => None,
    }
}

/// The options `asked` of `release`'s configuration: `/boot/config-<release>`, else the module
/// tree's `config`. `Ok(None)` when no file is installed. Answered from the facts cache while
/// the file is the one it was (its identity, [`facts_cache`](crate::host::io::facts_cache)),
/// without reading it.
pub fn read_kernel_config(
    root: &Root,
    release: &str,
    asked: &[&'static str],
) -> Result<Option<KernelConfig>, HostError> {
    let cache = crate::host::io::facts_cache::FactsCache::of(root);
    for path in [
        format!("/boot/config-{release}"),
        format!("/lib/modules/{release}/config"),
        format!("/usr/lib/modules/{release}/config"),
    ] {
        let known = cache
            .as_ref()
            .and_then(|c| Some((c, root.identity(Path::new(&path))?)));
        if let Some((cache, key)) = &known {
            if let Some(options) = cache.config_options(key, asked) {
                return Ok(Some(KernelConfig {
                    path,
                    asked: asked.to_vec(),
                    options,
                }));
            }
        }
        if let Some(file) = root.read_file(&path, FileKind::of(Path::new(&path)))? {
            let config = KernelConfig::scan(path, &file.bytes, asked);
            if let Some(cache) = &cache {
                let read = ReadFile::from(file);
                cache.store_config_options(&read.identity(), asked, &config.options);
            }
            return Ok(Some(config));
        }
    }
    Ok(None)
}

/// The options `asked` of the running kernel's `/proc/config.gz`, when it has one.
pub fn read_proc_config(
    root: &Root,
    asked: &[&'static str],
) -> Result<Option<KernelConfig>, HostError> {
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
    Ok(Some(KernelConfig::scan(PATH, &text, asked)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASKED: &[&str] = &[
        "CONFIG_MODULE_SIG",
        "CONFIG_MODULE_SIG_FORCE",
        "CONFIG_MODULE_SIG_HASH",
        "CONFIG_SUNRPC_XPRT_RDMA",
        "CONFIG_MODULES",
    ];

    #[test]
    fn both_line_forms_parse() {
        let o = scan_kernel_config(
            b"#\n# Automatically generated file; DO NOT EDIT.\nCONFIG_MODULE_SIG=y\n# CONFIG_MODULE_SIG_FORCE is not set\nCONFIG_MODULE_SIG_HASH=\"sha512\"\nCONFIG_SUNRPC_XPRT_RDMA=m\nnot a line\n",
            ASKED,
        );
        assert_eq!(o.get("CONFIG_MODULE_SIG"), Some(&ConfigValue::Yes));
        assert_eq!(o.get("CONFIG_MODULE_SIG_FORCE"), Some(&ConfigValue::NotSet));
        assert_eq!(
            o.get("CONFIG_MODULE_SIG_HASH"),
            Some(&ConfigValue::Value("sha512".into()))
        );
        assert_eq!(o.get("CONFIG_SUNRPC_XPRT_RDMA"), Some(&ConfigValue::Module));
        assert_eq!(o.len(), 4, "CONFIG_MODULES is not mentioned: {o:?}");
        let c = KernelConfig {
            path: "/boot/config-x".into(),
            asked: ASKED.to_vec(),
            options: o,
        };
        assert!(c.is_yes("CONFIG_MODULE_SIG"));
    }

    /// A name inside a longer one, inside a value or a comment, or spaced oddly is not its
    /// line; surrounding blanks and CRLF are; the last line of an option wins.
    #[test]
    fn only_whole_lines_of_an_option_count() {
        let text =
            b"CONFIG_MODULE_SIG_FORCE=y\nMY_CONFIG_MODULES=y\nCONFIG_X=\"CONFIG_MODULES=y\"\n\
                     # CONFIG_MODULE_SIG=y\n#  CONFIG_MODULES is not set\nCONFIG_MODULE_SIG =y\n\
                     CONFIG_SUNRPC_XPRT_RDMA=y\r\n  CONFIG_MODULE_SIG_HASH=sha256  \n\
                     CONFIG_SUNRPC_XPRT_RDMA=m\n";
        let o = scan_kernel_config(text, ASKED);
        assert_eq!(o.get("CONFIG_MODULE_SIG"), None, "{o:?}");
        assert_eq!(o.get("CONFIG_MODULES"), None, "{o:?}");
        assert_eq!(o.get("CONFIG_MODULE_SIG_FORCE"), Some(&ConfigValue::Yes));
        assert_eq!(
            o.get("CONFIG_MODULE_SIG_HASH"),
            Some(&ConfigValue::Value("sha256".into()))
        );
        assert_eq!(o.get("CONFIG_SUNRPC_XPRT_RDMA"), Some(&ConfigValue::Module));
        // The last line of the file, without a newline, and a file that is one line.
        let o = scan_kernel_config(b"# CONFIG_MODULES is not set", ASKED);
        assert_eq!(o.get("CONFIG_MODULES"), Some(&ConfigValue::NotSet));
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
        let c = read_proc_config(&root, ASKED).unwrap().unwrap();
        assert!(c.is_yes("CONFIG_MODULE_SIG_FORCE"));
        assert_eq!(c.path, "/proc/config.gz");
        std::fs::write(dir.path().join("proc/config.gz"), b"not gzip").unwrap();
        let e = read_proc_config(&root, ASKED).unwrap_err().to_string();
        assert!(e.contains("proc/config.gz"), "{e}");
    }
}
