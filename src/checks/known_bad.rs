//! The known-bad list: one data file ([`known_bad.toml`](./known_bad.toml), compiled in)
//! with the public source of every entry, and the question the `known-bad-versions` check asks of
//! it — which entries match a package at a version on this node.
//!
//! An entry names a package and one or more conditions, all of which must hold: its release
//! (`versions` exactly, `below` one, or a `series` such as `4.0`), a running kernel newer than
//! `kernel_above` (major.minor), another package installed `beside` it, the machine's
//! `platform` (its DMI product name), or the rpcrdma hooks exported plain (`plain_export`, the
//! evidence of the module file or kallsyms). An entry may name its `fix`.
//!
//! The build reads the file (build.rs): a field it does not know, of the wrong type or missing
//! stops the build, and the entries are compiled in as statics, so a check parses no TOML.

use std::cmp::Ordering;

use crate::host::boot::version_order;

/// One entry of the list, as `known_bad.toml` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub package: &'static str,
    /// Exact releases.
    pub versions: &'static [&'static str],
    /// Every release older than this one.
    pub below: Option<&'static str>,
    /// Every release of this series (`4.0`: `4.0`, `4.0.33`, …).
    pub series: Option<&'static str>,
    /// Only on a running kernel newer than this major.minor.
    pub kernel_above: Option<&'static str>,
    /// Only while this other package is installed too.
    pub beside: Option<&'static str>,
    /// Only on a machine whose product name contains this.
    pub platform: Option<&'static str>,
    /// Only where the rpcrdma hooks are seen exported plain (`EXPORT_SYMBOL`).
    pub plain_export: bool,
    pub problem: &'static str,
    /// What fixes it, when the problem does not say.
    pub fix: Option<&'static str>,
    pub source: &'static str,
}

// `static ENTRIES: &[Entry]`, written by build.rs from known_bad.toml.
include!(concat!(env!("OUT_DIR"), "/known_bad.rs"));

/// What the node shows beyond the package's release.
#[derive(Clone, Copy, Default)]
pub struct Node<'a> {
    /// The running kernel's upstream major.minor.
    pub kernel: Option<(u32, u32)>,
    /// Whether another package is installed.
    pub installed: Option<&'a dyn Fn(&str) -> bool>,
    pub product_name: Option<&'a str>,
    /// The rpcrdma hooks are seen exported plain.
    pub plain_hooks: bool,
}

impl std::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("kernel", &self.kernel)
            .field("knows_installed", &self.installed.is_some())
            .field("product_name", &self.product_name)
            .field("plain_hooks", &self.plain_hooks)
            .finish()
    }
}

/// `6.12.0-55.el10` or `6.8` → `(6, 12)` / `(6, 8)`.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

impl Entry {
    fn has_release_rule(&self) -> bool {
        !self.versions.is_empty() || self.below.is_some() || self.series.is_some()
    }

    pub fn matches(&self, package: &str, version: &str, node: &Node) -> bool {
        let release = !self.has_release_rule()
            || self.versions.contains(&version)
            || self
                .below
                .is_some_and(|b| version_order::compare(version, b) == Ordering::Less)
            || self.series.is_some_and(|s| {
                version == s
                    || version
                        .strip_prefix(s)
                        .is_some_and(|r| r.starts_with('.') || r.starts_with('-'))
            });
        let kernel = self.kernel_above.is_none_or(
            |k| matches!((node.kernel, major_minor(k)), (Some(run), Some(limit)) if run > limit),
        );
        let beside = self
            .beside
            .is_none_or(|b| node.installed.is_some_and(|installed| installed(b)));
        let platform = self
            .platform
            .is_none_or(|p| node.product_name.is_some_and(|n| n.contains(p)));
        let plain = !self.plain_export || node.plain_hooks;
        self.package == package && release && kernel && beside && platform && plain
    }
}

/// The entries of the compiled-in list.
pub fn entries() -> &'static [Entry] {
    ENTRIES
}

/// The entries that match `package` at `version` on `node`.
pub fn matching(package: &str, version: &str, node: &Node) -> Vec<&'static Entry> {
    entries()
        .iter()
        .filter(|e| e.matches(package, version, node))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file as serde reads it, every field declared: what build.rs compiled in must be
    /// the same, entry by entry.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Parsed {
        package: String,
        #[serde(default)]
        versions: Vec<String>,
        below: Option<String>,
        series: Option<String>,
        kernel_above: Option<String>,
        beside: Option<String>,
        platform: Option<String>,
        #[serde(default)]
        plain_export: bool,
        problem: String,
        fix: Option<String>,
        source: String,
    }

    impl From<&Entry> for Parsed {
        fn from(e: &Entry) -> Self {
            let owned = |s: Option<&str>| s.map(str::to_string);
            Parsed {
                package: e.package.to_string(),
                versions: e.versions.iter().map(|v| v.to_string()).collect(),
                below: owned(e.below),
                series: owned(e.series),
                kernel_above: owned(e.kernel_above),
                beside: owned(e.beside),
                platform: owned(e.platform),
                plain_export: e.plain_export,
                problem: e.problem.to_string(),
                fix: owned(e.fix),
                source: e.source.to_string(),
            }
        }
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct List {
        entry: Vec<Parsed>,
    }

    #[test]
    fn the_compiled_list_is_the_file() {
        let text = include_str!("known_bad.toml");
        let list: List = toml::from_str(text).expect("known_bad.toml parses");
        assert_eq!(list.entry.len(), entries().len());
        for (p, e) in list.entry.iter().zip(entries()) {
            assert_eq!(p, &Parsed::from(e));
        }
    }

    #[test]
    fn every_entry_has_a_source_and_a_condition() {
        assert!(!entries().is_empty());
        for e in entries() {
            assert!(e.source.starts_with("https://"), "{e:?}");
            assert!(
                e.has_release_rule() || e.beside.is_some() || e.platform.is_some(),
                "{e:?}"
            );
            assert!(!e.problem.is_empty(), "{e:?}");
        }
    }

    #[test]
    fn exact_and_below_rules() {
        let any = Node::default();
        assert_eq!(matching("nvidia-fs", "2.25.6", &any).len(), 2);
        assert_eq!(matching("nvidia-fs", "2.25.7", &any).len(), 1);
        assert!(matching("nvidia-fs", "2.28.4", &any).is_empty());
        assert!(matching("nvidia-fs", "2.29.1", &any).is_empty());
        // GPU Operator 26.7's release and the newest listed are not below 2.28.4.
        assert!(matching("nvidia-fs", "2.29.4", &any).is_empty());
        assert!(matching("nvidia-fs", "2.30", &any).is_empty());
        assert_eq!(matching("nvidia-fs", "2.28", &any).len(), 1);
        assert!(matching("mlnx-nfsrdma", "2.25.6", &any).is_empty());
    }

    #[test]
    fn vastnfs_4_0_only_on_kernels_newer_than_6_8() {
        let on = |kernel| Node {
            kernel: major_minor(kernel),
            ..Node::default()
        };
        assert_eq!(
            matching("vastnfs", "4.0.34", &on("6.12.0-55.el10")).len(),
            1
        );
        assert_eq!(matching("vastnfs", "4.0", &on("6.11.0")).len(), 1);
        assert!(matching("vastnfs", "4.0.34", &on("6.8.0-45-generic")).is_empty());
        assert!(matching("vastnfs", "4.5.8", &on("6.12.0")).is_empty());
        assert!(matching("vastnfs", "4.01", &on("6.12.0")).is_empty());
        // An unknown kernel says nothing.
        assert!(matching("vastnfs", "4.0.34", &Node::default()).is_empty());
    }

    #[test]
    fn debian_nvidia_fs_dkms_beside_the_proprietary_driver_and_dgx_spark() {
        fn proprietary(p: &str) -> bool {
            p == "nvidia-kernel-dkms"
        }
        fn open(p: &str) -> bool {
            p == "nvidia-open-kernel-dkms"
        }
        let with = |installed: &'static dyn Fn(&str) -> bool| Node {
            installed: Some(installed),
            ..Node::default()
        };
        assert_eq!(
            matching("nvidia-fs-dkms", "2.19.7~12.4.1-2", &with(&proprietary)).len(),
            1
        );
        assert!(matching("nvidia-fs-dkms", "2.19.7~12.4.1-2", &with(&open)).is_empty());
        let spark = Node {
            product_name: Some("NVIDIA DGX Spark"),
            ..Node::default()
        };
        assert_eq!(matching("nvidia-fs", "2.30.2", &spark).len(), 1);
        assert!(matching("nvidia-fs", "2.30.2", &Node::default()).is_empty());
    }

    #[test]
    fn doca_26_01_mlnx_nfsrdma_only_where_the_hooks_are_exported_plain() {
        let plain = Node {
            plain_hooks: true,
            ..Node::default()
        };
        for v in [
            "26.01.OFED.26.01.1.0.0.1",
            "26.01.OFED.26.01.1.0.0.1-1",
            "26.01-OFED.26.01.1.0.0.1.rhel9u4",
        ] {
            let hits = matching("mlnx-nfsrdma", v, &plain);
            assert_eq!(hits.len(), 1, "{v}");
            let fix = hits[0].fix.unwrap_or("");
            assert!(fix.contains("EXPORT_SYMBOL_GPL"), "{fix}");
            assert!(hits[0].source.contains("XinnorLab/xiNAS"), "{:?}", hits[0]);
        }
        // A GPL export of the same release, and other releases, are not this problem.
        assert!(matching("mlnx-nfsrdma", "26.01.OFED.26.01.1.0.0.1", &Node::default()).is_empty());
        assert!(matching("mlnx-nfsrdma", "26.04.OFED.26.04.0.6.0.1", &plain).is_empty());
        assert!(matching("mlnx-nfsrdma", "26.010", &plain).is_empty());
    }
}
