//! Which kernel modules are loaded, and which file `modprobe NAME` would load.
//!
//! Resolution follows modprobe: a name or alias (`modules.alias`: `xprtrdma` and `rpcrdma6` are
//! aliases of `rpcrdma`) → the entry in `modules.dep`, which already reflects depmod's search order
//! (so DKMS `updates/dkms/`, RPM `extra/mlnx-nfsrdma/` and vendor paths win over `kernel/` where
//! the distribution's depmod configuration says so) → the file; or "built in" from
//! `modules.builtin`. Module names compare with `-` and `_` as the same character, as the kernel
//! does.

use std::path::PathBuf;

use serde::Serialize;

use super::{HostError, Root};

/// One line of `/proc/modules`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadedModule {
    pub name: String,
    pub size: u64,
    pub refcount: Option<u32>,
    pub used_by: Vec<String>,
    pub state: String,
}

/// Parses `/proc/modules`: `name size refcount deps state address [taint]`.
/// Lines that do not have that shape are skipped.
pub fn parse_proc_modules(text: &str) -> Vec<LoadedModule> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            let used_by = if f[3] == "-" {
                Vec::new()
            } else {
                f[3].split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            };
            Some(LoadedModule {
                name: f[0].to_string(),
                size: f[1].parse().ok()?,
                refcount: f[2].parse().ok(),
                used_by,
                state: f[4].to_string(),
            })
        })
        .collect()
}

pub fn read_proc_modules(root: &Root) -> Result<Option<Vec<LoadedModule>>, HostError> {
    Ok(root
        .read_text("proc/modules")?
        .map(|t| parse_proc_modules(&t)))
}

/// The kernel's canonical spelling of a module name: `-` becomes `_`.
pub fn normalize_name(name: &str) -> String {
    name.replace('-', "_")
}

/// The module name a file provides: `…/rpcrdma.ko.zst` → `rpcrdma`.
pub fn module_name_of_path(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = match base.find(".ko") {
        Some(i) => &base[..i],
        None => base,
    };
    normalize_name(stem)
}

/// One `modules.dep` line: the module file and the files it depends on, as written (relative to
/// `/lib/modules/<release>/`, or absolute in very old trees).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DepEntry {
    pub file: String,
    pub deps: Vec<String>,
}

/// Parses `modules.dep`. Tolerates odd spacing (tabs, several blanks, trailing blanks, CRLF).
pub fn parse_modules_dep(text: &str) -> Vec<DepEntry> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let (file, deps) = line.split_once(':')?;
            let file = file.trim();
            if file.is_empty() {
                return None;
            }
            Some(DepEntry {
                file: file.to_string(),
                deps: deps.split_whitespace().map(str::to_string).collect(),
            })
        })
        .collect()
}

/// Parses `modules.alias` into `(pattern, module)` pairs.
pub fn parse_modules_alias(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            if w.next()? != "alias" {
                return None;
            }
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

/// Parses `modules.builtin`: one module path per line (`kernel/net/sunrpc/xprtrdma/rpcrdma.ko`).
pub fn parse_modules_builtin(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where a module file sits in the tree, which tells who shipped it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModuleOrigin {
    /// `kernel/…`: shipped with the kernel package (inbox).
    Inbox,
    /// `updates/dkms/…`: built by DKMS (Debian/Ubuntu layout).
    UpdatesDkms,
    /// `updates/…`: an out-of-tree package overriding the kernel's module.
    Updates,
    /// `extra/…`: out-of-tree (DKMS on RHEL, or RPM packages such as `extra/mlnx-nfsrdma/`).
    Extra,
    /// Any other directory (vendor layouts); the first path component is kept.
    Other(String),
}

impl ModuleOrigin {
    pub fn of(rel: &str) -> Self {
        let mut parts = rel.trim_start_matches('/').split('/');
        // Absolute paths from very old modules.dep files: skip to the part after the release.
        let first = parts.next().unwrap_or("");
        match first {
            "kernel" => ModuleOrigin::Inbox,
            "updates" => {
                if parts.next() == Some("dkms") {
                    ModuleOrigin::UpdatesDkms
                } else {
                    ModuleOrigin::Updates
                }
            }
            "extra" => ModuleOrigin::Extra,
            other => ModuleOrigin::Other(other.to_string()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            ModuleOrigin::Inbox => "the kernel's own module (kernel/)".into(),
            ModuleOrigin::UpdatesDkms => "a DKMS build (updates/dkms/)".into(),
            ModuleOrigin::Updates => "an out-of-tree package (updates/)".into(),
            ModuleOrigin::Extra => "an out-of-tree package (extra/)".into(),
            ModuleOrigin::Other(d) => format!("an out-of-tree package ({d}/)"),
        }
    }
}

/// What `modprobe NAME` would load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Resolution {
    File {
        /// The module name (after alias resolution).
        module: String,
        /// The path as written in `modules.dep`.
        rel_path: String,
        /// The path on this host (below the root).
        path: PathBuf,
        origin: ModuleOrigin,
        deps: Vec<String>,
        /// Whether the file exists; a dangling `modules.dep` entry means depmod is out of date.
        exists: bool,
    },
    BuiltIn {
        module: String,
    },
    /// Not in `modules.dep` nor `modules.builtin`.
    NotFound {
        module: String,
    },
    /// There is no `modules.dep` for this kernel release (no module tree installed).
    NoModuleTree {
        dir: PathBuf,
    },
}

/// The module tree of one kernel release: `lib/modules/<release>/`.
#[derive(Debug, Clone)]
pub struct ModuleTree {
    /// The tree directory below the root, as a host path (`/lib/modules/<release>`).
    pub dir_rel: String,
    pub dep: Option<Vec<DepEntry>>,
    pub alias: Vec<(String, String)>,
    pub builtin: Vec<String>,
}

impl ModuleTree {
    /// Reads `modules.dep`, `modules.alias` and `modules.builtin` for `release`, trying
    /// `/lib/modules` then `/usr/lib/modules`.
    pub fn read(root: &Root, release: &str) -> Result<Self, HostError> {
        let candidates = [
            format!("lib/modules/{release}"),
            format!("usr/lib/modules/{release}"),
        ];
        let dir_rel = candidates
            .iter()
            .find(|d| root.exists(format!("{d}/modules.dep")))
            .unwrap_or(&candidates[0])
            .clone();
        let dep = root
            .read_text(format!("{dir_rel}/modules.dep"))?
            .map(|t| parse_modules_dep(&t));
        let alias = root
            .read_text(format!("{dir_rel}/modules.alias"))?
            .map(|t| parse_modules_alias(&t))
            .unwrap_or_default();
        let builtin = root
            .read_text(format!("{dir_rel}/modules.builtin"))?
            .map(|t| parse_modules_builtin(&t))
            .unwrap_or_default();
        Ok(ModuleTree {
            dir_rel: format!("/{dir_rel}"),
            dep,
            alias,
            builtin,
        })
    }

    /// The module a name or alias stands for. Exact aliases only (the patterns in
    /// `modules.alias` for devices use globs, which module names never need).
    pub fn canonical_name(&self, name_or_alias: &str) -> String {
        let wanted = normalize_name(name_or_alias);
        let is_module = |n: &str| {
            self.dep
                .iter()
                .flatten()
                .any(|e| module_name_of_path(&e.file) == n)
                || self.builtin.iter().any(|b| module_name_of_path(b) == n)
        };
        if is_module(&wanted) {
            return wanted;
        }
        self.alias
            .iter()
            .find(|(pat, _)| normalize_name(pat) == wanted)
            .map(|(_, m)| normalize_name(m))
            .unwrap_or(wanted)
    }

    /// What `modprobe name_or_alias` would load.
    pub fn resolve(&self, root: &Root, name_or_alias: &str) -> Resolution {
        let module = self.canonical_name(name_or_alias);
        let Some(dep) = &self.dep else {
            return Resolution::NoModuleTree {
                dir: root.join(&self.dir_rel),
            };
        };
        if let Some(e) = dep.iter().find(|e| module_name_of_path(&e.file) == module) {
            let path = if e.file.starts_with('/') {
                root.join(&e.file)
            } else {
                root.join(format!("{}/{}", self.dir_rel, e.file))
            };
            let rel_in_tree = e
                .file
                .strip_prefix(&format!("{}/", self.dir_rel))
                .unwrap_or(&e.file);
            return Resolution::File {
                module,
                rel_path: e.file.clone(),
                exists: path.is_file(),
                path,
                origin: ModuleOrigin::of(rel_in_tree),
                deps: e.deps.clone(),
            };
        }
        if self
            .builtin
            .iter()
            .any(|b| module_name_of_path(b) == module)
        {
            return Resolution::BuiltIn { module };
        }
        Resolution::NotFound { module }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_modules_lines_parse() {
        let text = "rpcrdma 364544 5 - Live 0x0000000000000000\n\
                    sunrpc 692224 22 nfsd,rpcrdma,nfsv4, Live 0x0000000000000000\n\
                    nvidia_fs 262144 0 - Live 0x0000000000000000 (OE)\n\
                    garbage\n";
        let m = parse_proc_modules(text);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].name, "rpcrdma");
        assert_eq!(m[0].refcount, Some(5));
        assert!(m[0].used_by.is_empty());
        assert_eq!(m[1].used_by, vec!["nfsd", "rpcrdma", "nfsv4"]);
        assert_eq!(m[2].state, "Live");
    }

    #[test]
    fn builtin_lines_are_trimmed_and_blank_ones_skipped() {
        let text = "kernel/fs/ext4/ext4.ko\r\n\n  \nkernel/net/sunrpc/xprtrdma/rpcrdma.ko  \n";
        assert_eq!(
            parse_modules_builtin(text),
            vec![
                "kernel/fs/ext4/ext4.ko",
                "kernel/net/sunrpc/xprtrdma/rpcrdma.ko"
            ]
        );
    }

    #[test]
    fn module_names_from_paths() {
        assert_eq!(
            module_name_of_path("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst"),
            "rpcrdma"
        );
        assert_eq!(module_name_of_path("extra/nvidia-fs.ko"), "nvidia_fs");
        assert_eq!(module_name_of_path("updates/dkms/rpcrdma.ko"), "rpcrdma");
    }

    #[test]
    fn modules_dep_tolerates_odd_spacing() {
        let text = "kernel/a.ko:\n  updates/dkms/rpcrdma.ko.zst :\tkernel/b.ko   kernel/c.ko  \r\n\n# comment\nnot a line\n";
        let d = parse_modules_dep(text);
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].file, "updates/dkms/rpcrdma.ko.zst");
        assert_eq!(d[1].deps, vec!["kernel/b.ko", "kernel/c.ko"]);
    }

    #[test]
    fn origins_follow_the_first_component() {
        assert_eq!(
            ModuleOrigin::of("kernel/net/sunrpc/xprtrdma/rpcrdma.ko"),
            ModuleOrigin::Inbox
        );
        assert_eq!(
            ModuleOrigin::of("updates/dkms/rpcrdma.ko.zst"),
            ModuleOrigin::UpdatesDkms
        );
        assert_eq!(
            ModuleOrigin::of("extra/mlnx-nfsrdma/rpcrdma.ko.xz"),
            ModuleOrigin::Extra
        );
        assert_eq!(
            ModuleOrigin::of("vastnfs/rpcrdma.ko"),
            ModuleOrigin::Other("vastnfs".into())
        );
    }

    #[test]
    fn aliases_resolve_to_the_module() {
        let tree = ModuleTree {
            dir_rel: "/lib/modules/6.1.0".into(),
            dep: Some(parse_modules_dep(
                "kernel/net/sunrpc/xprtrdma/rpcrdma.ko: kernel/x.ko\n",
            )),
            alias: parse_modules_alias("alias rpcrdma6 rpcrdma\nalias xprtrdma rpcrdma\n"),
            builtin: vec!["kernel/fs/ext4/ext4.ko".into()],
        };
        assert_eq!(tree.canonical_name("xprtrdma"), "rpcrdma");
        assert_eq!(tree.canonical_name("rpcrdma6"), "rpcrdma");
        let root = Root::new("/nonexistent");
        match tree.resolve(&root, "xprtrdma") {
            Resolution::File {
                module,
                origin,
                exists,
                ..
            } => {
                assert_eq!(module, "rpcrdma");
                assert_eq!(origin, ModuleOrigin::Inbox);
                assert!(!exists);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            tree.resolve(&root, "ext4"),
            Resolution::BuiltIn {
                module: "ext4".into()
            }
        );
        assert_eq!(
            tree.resolve(&root, "nvidia-fs"),
            Resolution::NotFound {
                module: "nvidia_fs".into()
            }
        );
    }
}
