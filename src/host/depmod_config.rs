//! depmod's configuration: which copy of a module `modules.dep` should point at.
//!
//! When a tree holds several files for one module (`kernel/…/rpcrdma.ko` and
//! `updates/dkms/rpcrdma.ko`), depmod keeps one, chosen by `depmod.d` (kmod `tools/depmod.c`,
//! `depmod_module_is_higher_priority`): an `override MODULE KERNEL SUBDIR` line wins outright;
//! otherwise the directory listed earliest in `search` lines wins (earlier files and earlier
//! words first), `built-in` standing for every directory not listed; with no `search` line at
//! all, `updates` comes first. Kernel patterns of `override` and `external` lines are POSIX
//! regular expressions (or `*`), searched anywhere in the release.
//!
//! [`DepmodConfig::preferred`] answers which of the candidate paths depmod keeps, so a check can
//! tell a `modules.dep` that depmod has not regenerated since a DKMS install.

use serde::Serialize;

use super::conf_dirs::{list_conf_files, ConfFile, DEPMOD_DIRS};
use super::modprobe_config::Origin;
use super::modules::module_name_of_path;
use super::{HostError, Root};

/// One `search` word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SearchDir {
    /// `built-in`: every directory not named.
    BuiltIn,
    /// `external`: the directories of `external` lines.
    External,
    Path {
        path: String,
    },
}

/// Whether a kernel pattern matches a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelMatch {
    Yes,
    No,
    /// A regular expression beyond what is evaluated here (only `*` and literal text with `.`).
    NotEvaluated,
}

/// `override MODULE KERNEL SUBDIR`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Override {
    pub module: String,
    pub kernel: String,
    pub subdir: String,
    pub origin: Origin,
}

/// The parsed `depmod.d`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DepmodConfig {
    /// `search` words in priority order (highest first), each with its line.
    pub search: Vec<(SearchDir, Origin)>,
    pub overrides: Vec<Override>,
    /// `external KERNEL DIR`.
    pub externals: Vec<(String, String, Origin)>,
    pub excludes: Vec<(String, Origin)>,
    pub bad_lines: Vec<(Origin, String)>,
    pub files: Vec<ConfFile>,
}

/// Parses one file into `config` (files must be given in reading order).
pub fn parse_depmod_conf(config: &mut DepmodConfig, text: &str, file: &str) {
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.split('\n').enumerate() {
        let (n, mut line) = pending.take().unwrap_or((i + 1, String::new()));
        if let Some(head) = raw.strip_suffix('\\') {
            line.push_str(head);
            pending = Some((n, line));
            continue;
        }
        line.push_str(raw);
        let origin = Origin {
            file: file.to_string(),
            line: n,
        };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut w = line.split([' ', '\t']).filter(|w| !w.is_empty());
        let Some(cmd) = w.next() else { continue };
        let words: Vec<&str> = w.collect();
        match (cmd, words.as_slice()) {
            ("search", dirs) => {
                for d in dirs {
                    let dir = match *d {
                        "built-in" => SearchDir::BuiltIn,
                        "external" => SearchDir::External,
                        p => SearchDir::Path {
                            path: p.trim_end_matches('/').to_string(),
                        },
                    };
                    config.search.push((dir, origin.clone()));
                }
            }
            ("override", [module, kernel, subdir, ..]) => config.overrides.push(Override {
                module: module.to_string(),
                kernel: kernel.to_string(),
                subdir: subdir.trim_end_matches('/').to_string(),
                origin,
            }),
            ("external", [kernel, dir, ..]) => {
                config
                    .externals
                    .push((kernel.to_string(), dir.to_string(), origin))
            }
            ("exclude", dirs) => {
                for d in dirs {
                    config.excludes.push((d.to_string(), origin.clone()));
                }
            }
            ("include" | "make_map_files", _) => {}
            _ => config.bad_lines.push((origin, line.clone())),
        }
    }
}

/// Reads `depmod.d` below the root.
pub fn read_depmod_config(root: &Root) -> Result<DepmodConfig, HostError> {
    let files = list_conf_files(root, &DEPMOD_DIRS)?;
    let mut config = DepmodConfig::default();
    for f in &files {
        if let Some(text) = root.read_text_lossy(&f.path)? {
            parse_depmod_conf(&mut config, &text, &f.path);
        }
    }
    config.files = files;
    Ok(config)
}

/// Whether depmod's kernel pattern matches `release` (unanchored, as `regexec` searches).
pub fn kernel_matches(pattern: &str, release: &str) -> KernelMatch {
    if pattern == "*" {
        return KernelMatch::Yes;
    }
    if !pattern
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '~'))
    {
        return KernelMatch::NotEvaluated;
    }
    let p: Vec<char> = pattern.chars().collect();
    let r: Vec<char> = release.chars().collect();
    let hit = (0..=r.len().saturating_sub(p.len()))
        .any(|s| r.len() >= p.len() && p.iter().zip(&r[s..]).all(|(a, b)| *a == '.' || a == b));
    if hit {
        KernelMatch::Yes
    } else {
        KernelMatch::No
    }
}

/// Which of several paths of one module depmod keeps, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preference {
    /// The path kept (as given, relative to the module tree).
    pub path: String,
    /// The line that decided, when one did.
    pub origin: Option<Origin>,
    pub reason: String,
    /// Other candidates of the same rank: depmod then keeps whichever its directory walk meets
    /// first, which the listing order of the file system decides, so `path` is not certain.
    pub tied_with: Vec<String>,
}

impl DepmodConfig {
    /// The search words in effect: as configured, or `updates` alone when no `search` line exists.
    fn effective_search(&self) -> Vec<(SearchDir, Option<Origin>)> {
        if self.search.is_empty() {
            vec![(
                SearchDir::Path {
                    path: "updates".into(),
                },
                None,
            )]
        } else {
            self.search
                .iter()
                .map(|(d, o)| (d.clone(), Some(o.clone())))
                .collect()
        }
    }

    /// Rank of `rel` (a path relative to the tree): lower wins. Unlisted directories get
    /// `built-in`'s rank, or the lowest when `built-in` is not listed either.
    fn rank(&self, rel: &str) -> (usize, Option<Origin>) {
        let search = self.effective_search();
        let builtin = search
            .iter()
            .position(|(d, _)| *d == SearchDir::BuiltIn)
            .map(|i| (i, search[i].1.clone()));
        for (i, (dir, origin)) in search.iter().enumerate() {
            if let SearchDir::Path { path } = dir {
                if rel.starts_with(&format!("{path}/")) {
                    return (i, origin.clone());
                }
            }
        }
        builtin.unwrap_or((search.len(), None))
    }

    /// Which of `candidates` (paths relative to the module tree, all of one module) depmod
    /// keeps for kernel `release`. `None` when there are none or the configuration cannot be
    /// evaluated for them (an override with an unevaluated kernel pattern).
    pub fn preferred(&self, release: &str, candidates: &[&str]) -> Option<Preference> {
        let first = candidates.first()?;
        let module = module_name_of_path(first);
        for o in &self.overrides {
            if module_name_of_path(&o.module) != module {
                continue;
            }
            match kernel_matches(&o.kernel, release) {
                KernelMatch::No => continue,
                KernelMatch::NotEvaluated => return None,
                KernelMatch::Yes => {}
            }
            if let Some(c) = candidates.iter().find(|c| {
                let stem = c.find(".ko").map_or(**c, |i| &c[..i]);
                stem == format!("{}/{}", o.subdir, o.module)
            }) {
                return Some(Preference {
                    path: c.to_string(),
                    origin: Some(o.origin.clone()),
                    reason: format!("override {} {} {}", o.module, o.kernel, o.subdir),
                    tied_with: Vec::new(),
                });
            }
        }
        let mut best: Option<(usize, &str, Option<Origin>)> = None;
        for c in candidates {
            let (rank, origin) = self.rank(c);
            if best.as_ref().is_none_or(|(r, _, _)| rank < *r) {
                best = Some((rank, c, origin));
            }
        }
        let (best_rank, path, origin) = best?;
        let tied_with: Vec<String> = candidates
            .iter()
            .filter(|c| **c != path && self.rank(c).0 == best_rank)
            .map(|c| c.to_string())
            .collect();
        let reason = match (&origin, self.search.is_empty()) {
            (_, true) => "no search line: updates/ first, as depmod does by default".to_string(),
            (Some(_), false) => "the earliest matching search directory".to_string(),
            (None, false) => "no search directory matches; all rank as built-in".to_string(),
        };
        Some(Preference {
            path: path.to_string(),
            origin,
            reason,
            tied_with,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(files: &[(&str, &str)]) -> DepmodConfig {
        let mut c = DepmodConfig::default();
        for (name, text) in files {
            parse_depmod_conf(&mut c, text, name);
        }
        c
    }

    const CANDIDATES: [&str; 3] = [
        "kernel/net/sunrpc/xprtrdma/rpcrdma.ko.xz",
        "extra/mlnx-nfsrdma/rpcrdma.ko.xz",
        "updates/dkms/rpcrdma.ko.zst",
    ];

    #[test]
    fn default_search_puts_updates_first() {
        let c = config(&[]);
        let p = c.preferred("6.1.0-50-amd64", &CANDIDATES).unwrap();
        assert_eq!(p.path, "updates/dkms/rpcrdma.ko.zst");
        assert!(p.reason.contains("default"));
        assert!(p.tied_with.is_empty());
        let p = c.preferred("6.1.0-50-amd64", &CANDIDATES[..2]).unwrap();
        assert_eq!(
            p.tied_with,
            vec![CANDIDATES[1]],
            "kernel/ and extra/ rank alike"
        );
    }

    /// Each configuration given to kmod 30's `depmod -b ROOT -C CONF` on a tree holding the
    /// three candidates; the kept path of its `modules.dep` is the expected value. Where
    /// candidates tie, depmod kept whichever its directory walk met first, so the answer must
    /// then name the tie and include depmod's pick.
    #[test]
    fn preferences_agree_with_depmod() {
        let cases = [
            ("", CANDIDATES[2], 0),
            ("search built-in extra\n", CANDIDATES[0], 1),
            ("search updates built-in\n", CANDIDATES[2], 0),
            ("search extra updates built-in\n", CANDIDATES[1], 0),
            (
                "override rpcrdma * extra/mlnx-nfsrdma\nsearch updates built-in\n",
                CANDIDATES[1],
                0,
            ),
            (
                "override rpcrdma 6.1.0-50-amd64 extra/mlnx-nfsrdma\n",
                CANDIDATES[1],
                0,
            ),
            (
                "override rpcrdma 5.14 extra/mlnx-nfsrdma\n",
                CANDIDATES[2],
                0,
            ),
            ("search updates\n", CANDIDATES[2], 0),
            ("search built-in\n", CANDIDATES[1], 2),
        ];
        for (text, depmod_kept, ties) in cases {
            let c = config(&[("/etc/depmod.d/t.conf", text)]);
            let p = c.preferred("6.1.0-50-amd64", &CANDIDATES).unwrap();
            assert_eq!(p.tied_with.len(), ties, "{text:?}: {p:?}");
            assert!(
                p.path == depmod_kept || p.tied_with.iter().any(|t| t == depmod_kept),
                "{text:?}: {p:?}"
            );
        }
    }

    #[test]
    fn search_order_is_earliest_word_first() {
        let c = config(&[(
            "/etc/depmod.d/ubuntu.conf",
            "search updates ubuntu built-in\n",
        )]);
        assert_eq!(
            c.preferred("6.8.0-45-generic", &CANDIDATES).unwrap().path,
            "updates/dkms/rpcrdma.ko.zst"
        );
        let c = config(&[("/lib/depmod.d/x.conf", "search built-in extra\n")]);
        let p = c.preferred("6.8.0-45-generic", &CANDIDATES).unwrap();
        assert_eq!(p.path, CANDIDATES[0]);
        assert_eq!(p.tied_with, vec![CANDIDATES[2]], "updates/ is unlisted too");
        assert_eq!(p.origin.unwrap().line, 1);
    }

    #[test]
    fn override_wins_for_matching_kernels() {
        let c = config(&[
            (
                "/etc/depmod.d/zz02-mlnx-nfsrdma-rpcrdma.conf",
                "# written by mlnx-nfsrdma\noverride rpcrdma * extra/mlnx-nfsrdma\n",
            ),
            ("/etc/depmod.d/zz-search.conf", "search updates built-in\n"),
        ]);
        let p = c.preferred("5.14.0-427.el9.x86_64", &CANDIDATES).unwrap();
        assert_eq!(p.path, "extra/mlnx-nfsrdma/rpcrdma.ko.xz");
        assert_eq!(
            p.origin.unwrap().to_string(),
            "/etc/depmod.d/zz02-mlnx-nfsrdma-rpcrdma.conf:2"
        );
        let c = config(&[(
            "/etc/depmod.d/o.conf",
            "override rpcrdma 5.14.0-427.el9.x86_64 extra/mlnx-nfsrdma\n",
        )]);
        assert_eq!(
            c.preferred("5.14.0-427.el9.x86_64", &CANDIDATES)
                .unwrap()
                .path,
            CANDIDATES[1]
        );
        assert_eq!(
            c.preferred("5.14.0-503.el9.x86_64", &CANDIDATES)
                .unwrap()
                .path,
            CANDIDATES[2]
        );
        let c = config(&[(
            "/etc/depmod.d/o.conf",
            "override rpcrdma ^5\\.14.*$ extra/mlnx-nfsrdma\n",
        )]);
        assert_eq!(c.preferred("5.14.0-503.el9.x86_64", &CANDIDATES), None);
    }

    #[test]
    fn kernel_patterns() {
        assert_eq!(kernel_matches("*", "x"), KernelMatch::Yes);
        assert_eq!(
            kernel_matches("5.14", "5.14.0-427.el9.x86_64"),
            KernelMatch::Yes
        );
        assert_eq!(
            kernel_matches("el9", "5.14.0-427.el9.x86_64"),
            KernelMatch::Yes
        );
        assert_eq!(
            kernel_matches("el8", "5.14.0-427.el9.x86_64"),
            KernelMatch::No
        );
        assert_eq!(
            kernel_matches("5\\.14.*", "5.14.0"),
            KernelMatch::NotEvaluated
        );
        // `+` is a quantifier there: a release containing one is not literal text.
        assert_eq!(
            kernel_matches("6.12.117+deb13-amd64", "6.12.117+deb13-amd64"),
            KernelMatch::NotEvaluated
        );
    }

    #[test]
    fn other_directives_and_bad_lines() {
        let c = config(&[(
            "/etc/depmod.d/a.conf",
            "external * /opt/extra\nexclude .debug tmp\nbogus\noverride rpcrdma\n",
        )]);
        assert_eq!(c.externals.len(), 1);
        assert_eq!(c.excludes.len(), 2);
        let bad: Vec<usize> = c.bad_lines.iter().map(|(o, _)| o.line).collect();
        assert_eq!(bad, vec![3, 4]);
    }
}
