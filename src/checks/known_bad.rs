//! The known-bad release list: one data file ([`known_bad.toml`](./known_bad.toml), compiled in)
//! with the public source of every entry, and the question the `known-bad-versions` check asks of
//! it — which entries match a package at a version.

use std::cmp::Ordering;

use serde::Deserialize;

use crate::host::boot::version_order;

const DATA: &str = include_str!("known_bad.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub package: String,
    /// Exact releases.
    #[serde(default)]
    pub versions: Vec<String>,
    /// Every release older than this one.
    pub below: Option<String>,
    pub problem: String,
    pub source: String,
}

impl Entry {
    pub fn matches(&self, package: &str, version: &str) -> bool {
        self.package == package
            && (self.versions.iter().any(|v| v == version)
                || self
                    .below
                    .as_deref()
                    .is_some_and(|b| version_order::compare(version, b) == Ordering::Less))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct List {
    entry: Vec<Entry>,
}

/// The entries of the compiled-in list.
pub fn entries() -> Vec<Entry> {
    // The file is part of the build and tested below: a parse failure is a bug of this crate.
    toml::from_str::<List>(DATA)
        .map(|l| l.entry)
        .unwrap_or_default()
}

/// The entries that match `package` at `version`.
pub fn matching(package: &str, version: &str) -> Vec<Entry> {
    entries()
        .into_iter()
        .filter(|e| e.matches(package, version))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_parses_and_every_entry_has_a_source_and_a_version_rule() {
        let list: List = toml::from_str(DATA).expect("known_bad.toml parses");
        assert!(!list.entry.is_empty());
        for e in &list.entry {
            assert!(e.source.starts_with("https://"), "{e:?}");
            assert!(!e.versions.is_empty() || e.below.is_some(), "{e:?}");
            assert!(!e.problem.is_empty(), "{e:?}");
        }
    }

    #[test]
    fn exact_and_below_rules() {
        assert_eq!(matching("nvidia-fs", "2.25.6").len(), 2);
        assert_eq!(matching("nvidia-fs", "2.25.7").len(), 1);
        assert!(matching("nvidia-fs", "2.28.4").is_empty());
        assert!(matching("nvidia-fs", "2.29.1").is_empty());
        assert!(matching("mlnx-nfsrdma", "2.25.6").is_empty());
    }
}
