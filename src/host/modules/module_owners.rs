//! Which package family owns the RDMA/NFS modules GDS depends on — `rpcrdma`, `sunrpc` and
//! `ib_core` — as loaded now, as the next load (or boot) takes them, and every copy installed in
//! the running kernel's module tree.
//!
//! The family is read from where a file sits ([`PackageFamily::of_path`], the one decider of
//! [`module_place`](super::module_place)), and a `weak-updates/` link by the file it points
//! into. The loaded module is matched to a copy by its build-id; a sunrpc exposing
//! `nfs_bundle_version` is vastnfs's whatever its file. Bounded: a few directories deep, a fixed
//! number of listings and opened files.

use serde::Serialize;

use super::module_files::inspect_file_with_cache;
use super::module_name::module_name_of_path;
use super::module_place::ModulePlace;
pub use super::module_place::PackageFamily;
use super::module_tree::{ModuleTree, Resolution};
use super::sysmodule::SysModule;
use crate::host::io::error::HostError;
use crate::host::io::root::{read_first_line, Root};

/// The modules whose ownership is judged.
pub const OWNED_MODULES: [&str; 3] = ["rpcrdma", "sunrpc", "ib_core"];

/// Directory listings at most while looking for copies.
const MAX_LISTINGS: usize = 96;
/// How deep below each searched directory copies are looked for.
const MAX_DEPTH: usize = 5;
/// Module files opened at most to match a loaded build-id, per module.
const MAX_INSPECTED: usize = 6;

/// One file of a module in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleCopy {
    /// Its path below the module tree (`weak-updates/mlnx-nfsrdma/rpcrdma.ko`).
    pub rel_path: String,
    pub family: PackageFamily,
    /// Where a link (`weak-updates/`) points, as a host path (a relative target made absolute).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl ModuleCopy {
    /// A plain file (not a link) at `rel_path` below the tree, its family read from the path.
    pub fn at(rel_path: &str) -> Self {
        ModuleCopy {
            rel_path: rel_path.to_string(),
            family: PackageFamily::of_path(rel_path),
            link: None,
        }
    }

    fn read(root: &Root, tree_rel: &str, rel_path: &str) -> Result<Self, HostError> {
        let at = format!("{}/{rel_path}", tree_rel.trim_end_matches('/'));
        let link = root.read_link(&at)?.map(|t| absolute_target(&at, &t));
        let family = match link.as_deref().and_then(tree_relative_target) {
            Some(target) => PackageFamily::of_path(&target),
            None => PackageFamily::of_path(rel_path),
        };
        Ok(ModuleCopy {
            rel_path: rel_path.to_string(),
            family,
            link,
        })
    }
}

/// A link's target as a host path: an absolute target as written, a relative one joined to the
/// link's directory with `.` and `..` folded.
pub fn absolute_target(link_path: &str, target: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let base = if target.starts_with('/') {
        ""
    } else {
        link_path.rsplit_once('/').map_or("", |(dir, _)| dir)
    };
    for p in base.split('/').chain(target.split('/')) {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// A link target's path below its own kernel's tree, as [`ModulePlace`] reads an absolute path:
/// `/lib/modules/4.18.0-513.el8.x86_64/extra/mlnx-nfsrdma/rpcrdma.ko`
/// → `extra/mlnx-nfsrdma/rpcrdma.ko`; `None` for a target in no module tree.
pub fn tree_relative_target(link: &str) -> Option<String> {
    let place = ModulePlace::of(link);
    (link.starts_with('/') && place.in_tree()).then(|| place.rel())
}

/// The kernel release a link target's path names (`4.18.0-513.el8.x86_64`).
pub fn target_release(link: &str) -> Option<&str> {
    let mut parts = link.split('/').filter(|p| !p.is_empty() && *p != "..");
    parts.find(|p| *p == "modules")?;
    parts.next()
}

/// How the loaded module was matched to a family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LoadedOwner {
    /// Not loaded (nor built in).
    NotLoaded,
    /// The copy whose build-id the loaded module has (or vastnfs's marker).
    Family {
        family: PackageFamily,
        evidence: String,
    },
    /// Loaded, but no copy of the tree has its build-id (or there is none to compare).
    Unmatched,
}

/// The ownership of one module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleOwner {
    pub module: String,
    /// The copy `modprobe` takes next (`None`: built in, or not installed).
    pub next: Option<ModuleCopy>,
    pub loaded: LoadedOwner,
    /// Every copy in the tree.
    pub installed: Vec<ModuleCopy>,
}

impl ModuleOwner {
    /// An installed `weak-updates/` link to a vendor's build that the next load does not take:
    /// another file wins in depmod's order (RHEL's `dist.conf` searches `weak-updates` last, and
    /// only an `override` line in `/etc/depmod.d` ranks the link first).
    pub fn losing_weak_link(&self) -> Option<&ModuleCopy> {
        let next = self.next.as_ref()?;
        self.installed.iter().find(|c| {
            c.rel_path.starts_with("weak-updates/")
                && c.family != PackageFamily::Distribution
                && c.rel_path != next.rel_path
        })
    }

    /// The distinct families of its installed copies, the distribution's left out.
    pub fn vendor_families(&self) -> Vec<&PackageFamily> {
        let mut f: Vec<&PackageFamily> = self
            .installed
            .iter()
            .map(|c| &c.family)
            .filter(|f| **f != PackageFamily::Distribution)
            .collect();
        f.sort();
        f.dedup();
        f
    }
}

/// Ownership of [`OWNED_MODULES`] on the running kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModuleOwners {
    /// Empty when there is no module tree to look at.
    pub modules: Vec<ModuleOwner>,
}

impl ModuleOwners {
    /// Reads ownership from the tree at `tree` (of the running kernel) and `/sys/module`.
    pub fn read(root: &Root, tree: &ModuleTree) -> Result<Self, HostError> {
        if !tree.has_dep_index()? {
            return Ok(ModuleOwners::default());
        }
        let files = find_copies(root, &tree.dir_rel)?;
        let mut modules = Vec::new();
        for module in OWNED_MODULES {
            let mut installed = Vec::new();
            for rel in files.iter().filter(|f| module_name_of_path(f) == module) {
                installed.push(ModuleCopy::read(root, &tree.dir_rel, rel)?);
            }
            let next = match tree.resolve(root, module)? {
                Resolution::File { rel_path, .. } => {
                    let rel = rel_path
                        .strip_prefix(&format!("{}/", tree.dir_rel))
                        .unwrap_or(&rel_path)
                        .to_string();
                    Some(ModuleCopy::read(root, &tree.dir_rel, &rel)?)
                }
                _ => None,
            };
            let loaded = read_loaded(root, &tree.dir_rel, module, &installed)?;
            modules.push(ModuleOwner {
                module: module.to_string(),
                next,
                loaded,
                installed,
            });
        }
        Ok(ModuleOwners { modules })
    }

    pub fn get(&self, module: &str) -> Option<&ModuleOwner> {
        self.modules.iter().find(|m| m.module == module)
    }
}

fn read_loaded(
    root: &Root,
    tree_rel: &str,
    module: &str,
    installed: &[ModuleCopy],
) -> Result<LoadedOwner, HostError> {
    let sys = SysModule::read(root, module)?;
    if !sys.present || sys.initstate.is_none() {
        return Ok(LoadedOwner::NotLoaded);
    }
    if module == "sunrpc" {
        let marker = "sys/module/sunrpc/parameters/nfs_bundle_version";
        if let Some(v) = read_first_line(root, marker)? {
            return Ok(LoadedOwner::Family {
                family: PackageFamily::Vastnfs,
                evidence: format!("/{marker} = {v}"),
            });
        }
    }
    let Some(build_id) = sys.build_id else {
        return Ok(LoadedOwner::Unmatched);
    };
    // Answered from the facts cache, without opening the copies, while they are unchanged.
    let cache = crate::host::io::facts_cache::FactsCache::of(root);
    for copy in installed.iter().take(MAX_INSPECTED) {
        let path = root.join(format!("{tree_rel}/{}", copy.rel_path));
        match inspect_file_with_cache(root, &path, &[], cache.as_ref()) {
            Ok(f) if f.build_id.as_deref() == Some(build_id.as_str()) => {
                return Ok(LoadedOwner::Family {
                    family: copy.family.clone(),
                    evidence: format!("build-id {build_id} = {tree_rel}/{}", copy.rel_path),
                })
            }
            Ok(_) => {}
            Err(e) => tracing::debug!("{e}: not a candidate for the loaded {module}"),
        }
    }
    Ok(LoadedOwner::Unmatched)
}

/// The files of [`OWNED_MODULES`] below the tree: the inbox directories, every
/// `kernel/doca-ofed-*/`, `updates/`, `extra/` and `weak-updates/`, as paths below the tree.
fn find_copies(root: &Root, tree_rel: &str) -> Result<Vec<String>, HostError> {
    let tree = tree_rel.trim_matches('/');
    let mut queue: Vec<(String, usize)> = [
        "kernel/net/sunrpc",
        "kernel/drivers/infiniband/core",
        "updates",
        "extra",
        "weak-updates",
    ]
    .iter()
    .map(|d| (d.to_string(), 0))
    .collect();
    for name in root.list_dir(format!("{tree}/kernel"))?.unwrap_or_default() {
        if name.starts_with("doca-ofed-") {
            queue.push((format!("kernel/{name}"), 0));
        }
    }
    let mut found = Vec::new();
    let mut i = 0;
    while i < queue.len() && i < MAX_LISTINGS {
        let (dir, depth) = queue[i].clone();
        i += 1;
        let Some(names) = root.list_dir(format!("{tree}/{dir}"))? else {
            continue;
        };
        for name in names {
            let rel = format!("{dir}/{name}");
            if name.contains(".ko") {
                if OWNED_MODULES.contains(&module_name_of_path(&name).as_str()) {
                    found.push(rel);
                }
            } else if depth < MAX_DEPTH && !name.contains('.') {
                queue.push((rel, depth + 1));
            }
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets_are_read_below_their_own_tree() {
        let abs = "/lib/modules/4.18.0-513.el8.x86_64/extra/mlnx-nfsrdma/rpcrdma.ko";
        assert_eq!(
            tree_relative_target(abs).as_deref(),
            Some("extra/mlnx-nfsrdma/rpcrdma.ko")
        );
        assert_eq!(target_release(abs), Some("4.18.0-513.el8.x86_64"));
        let relative = "../../../4.18.0-513.el8.x86_64/extra/mlnx-nfsrdma/rpcrdma.ko";
        assert_eq!(
            absolute_target(
                "/lib/modules/4.18.0-553.el8.x86_64/weak-updates/mlnx-nfsrdma/rpcrdma.ko",
                relative
            ),
            abs
        );
        assert_eq!(absolute_target("/a/b/link", abs), abs);
        assert_eq!(tree_relative_target("/lib/modules/x"), None);
    }
}
