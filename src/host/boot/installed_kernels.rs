//! The kernels installed on this node beside the running one, each with its module tree.
//!
//! A kernel counts as installed when it has an image and a module tree for the same release:
//! `/boot/vmlinuz-<release>` (or `vmlinux-`, `Image-`) with `/lib/modules/<release>` or
//! `/usr/lib/modules/<release>`, or an image inside the module tree itself
//! (`/usr/lib/modules/<release>/vmlinuz`, as Fedora and Arch install it). Images without a tree
//! (RHEL's `vmlinuz-0-rescue-…`, leftovers of removed packages) are not kernels modprobe can
//! serve, and trees without an image are leftovers too.
//!
//! For each, [`module_tree`] gives the tree modprobe would use after booting it, and
//! [`gpl_rule`] that kernel's `__symbol_get` rule judged from its own image.

use serde::Serialize;

use crate::host::boot::version_order;
use crate::host::io::error::HostError;
use crate::host::io::root::Root;
use crate::host::kernel::KernelInfo;
use crate::host::modules::gpl_rule::{self, GplRule};
use crate::host::modules::ModuleTree;

const IMAGE_PREFIXES: [&str; 3] = ["vmlinuz-", "vmlinux-", "Image-"];
const MODULE_ROOTS: [&str; 2] = ["/lib/modules", "/usr/lib/modules"];

/// One installed kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstalledKernel {
    /// `uname -r` of that kernel.
    pub release: String,
    /// Host path of its image.
    pub image: String,
    /// Host path of its module tree (`/lib/modules/<release>`).
    pub module_dir: String,
    /// It is the kernel running now.
    pub running: bool,
}

/// The release named by a `/boot` file name (`vmlinuz-6.1.0-50-amd64` → `6.1.0-50-amd64`).
pub fn release_of_image_name(name: &str) -> Option<&str> {
    IMAGE_PREFIXES
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .filter(|r| !r.is_empty())
}

/// Pairs images with module trees. `boot_names` are the names in `/boot`; `trees` the
/// `(module root, release)` directories that exist. Pure; sorted oldest to newest.
pub fn pair_kernels(
    boot_names: &[String],
    trees: &[(String, String)],
    images_in_trees: &[(String, String)],
    running: Option<&str>,
) -> Vec<InstalledKernel> {
    let mut out: Vec<InstalledKernel> = Vec::new();
    let tree_of = |release: &str| {
        trees
            .iter()
            .find(|(_, r)| r == release)
            .map(|(root, r)| format!("{root}/{r}"))
    };
    for name in boot_names {
        let Some(release) = release_of_image_name(name) else {
            continue;
        };
        if out.iter().any(|k| k.release == release) {
            continue;
        }
        if let Some(module_dir) = tree_of(release) {
            out.push(InstalledKernel {
                release: release.to_string(),
                image: format!("/boot/{name}"),
                module_dir,
                running: running == Some(release),
            });
        }
    }
    for (module_dir, image) in images_in_trees {
        let release = module_dir.rsplit('/').next().unwrap_or(module_dir);
        if out.iter().any(|k| k.release == release) {
            continue;
        }
        out.push(InstalledKernel {
            release: release.to_string(),
            image: image.clone(),
            module_dir: module_dir.clone(),
            running: running == Some(release),
        });
    }
    out.sort_by(|a, b| version_order::compare(&a.release, &b.release));
    out
}

/// Every installed kernel below the root, oldest to newest. `running` is the running release
/// (`KernelInfo::release`), marked in the result.
pub fn read_installed_kernels(
    root: &Root,
    running: Option<&str>,
) -> Result<Vec<InstalledKernel>, HostError> {
    let boot_names: Vec<String> = root
        .list_dir("/boot")?
        .unwrap_or_default()
        .into_iter()
        .filter(|n| root.is_file(format!("/boot/{n}")))
        .collect();
    let mut trees = Vec::new();
    let mut images_in_trees = Vec::new();
    for mroot in MODULE_ROOTS {
        for release in root.list_dir(mroot)?.unwrap_or_default() {
            let dir = format!("{mroot}/{release}");
            if !root.is_dir(&dir) || trees.iter().any(|(_, r)| *r == release) {
                continue;
            }
            let image = format!("{dir}/vmlinuz");
            if root.is_file(&image) {
                images_in_trees.push((dir.clone(), image));
            }
            trees.push((mroot.to_string(), release));
        }
    }
    Ok(pair_kernels(&boot_names, &trees, &images_in_trees, running))
}

/// The newest of `kernels` (by release, as `sort -V` orders them).
pub fn newest(kernels: &[InstalledKernel]) -> Option<&InstalledKernel> {
    kernels.last()
}

/// The module tree modprobe uses when `kernel` runs.
pub fn module_tree(root: &Root, kernel: &InstalledKernel) -> Result<ModuleTree, HostError> {
    ModuleTree::read(root, &kernel.release)
}

/// What is known about `kernel`'s version: the running kernel's facts when it is that one,
/// else only its release string.
pub fn kernel_info(kernel: &InstalledKernel, running: &KernelInfo) -> KernelInfo {
    if running.release.as_deref() == Some(kernel.release.as_str()) {
        running.clone()
    } else {
        KernelInfo::from_parts(Some(kernel.release.clone()), None, None)
    }
}

/// `kernel`'s GPL-only `__symbol_get` rule, judged from its own image (answered from the
/// module facts cache while the image is unchanged). Decompresses the image: call it only when
/// a plain export makes the answer matter.
pub fn gpl_rule(root: &Root, kernel: &InstalledKernel, info: &KernelInfo) -> GplRule {
    let cache = crate::host::io::facts_cache::FactsCache::of(root);
    let outcome = crate::host::modules::module_files::scan_file_with_cache(
        root,
        &root.join(&kernel.image),
        gpl_rule::RULE_TEXT,
        cache.as_ref(),
    );
    gpl_rule::weigh(info, Some((&kernel.image, &outcome)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn images_pair_with_trees_and_sort_newest_last() {
        let boot = s(&[
            "config-6.1.0-50-amd64",
            "vmlinuz-6.12.117+deb13-amd64",
            "vmlinuz-6.1.0-50-amd64",
            "vmlinuz-6.1.0-9-amd64",
            "vmlinuz-0-rescue-0123abcd",
            "vmlinuz.old",
            "vmlinuz-",
        ]);
        let trees = vec![
            ("/lib/modules".to_string(), "6.1.0-50-amd64".to_string()),
            (
                "/lib/modules".to_string(),
                "6.12.117+deb13-amd64".to_string(),
            ),
            ("/lib/modules".to_string(), "6.1.0-9-amd64".to_string()),
            ("/lib/modules".to_string(), "6.0.0-leftover".to_string()),
        ];
        let k = pair_kernels(&boot, &trees, &[], Some("6.1.0-50-amd64"));
        let releases: Vec<&str> = k.iter().map(|k| k.release.as_str()).collect();
        assert_eq!(
            releases,
            vec!["6.1.0-9-amd64", "6.1.0-50-amd64", "6.12.117+deb13-amd64"]
        );
        assert!(k[1].running && !k[0].running && !k[2].running);
        assert_eq!(k[1].image, "/boot/vmlinuz-6.1.0-50-amd64");
        assert_eq!(k[1].module_dir, "/lib/modules/6.1.0-50-amd64");
        assert_eq!(newest(&k).unwrap().release, "6.12.117+deb13-amd64");
    }

    #[test]
    fn images_inside_module_trees_count() {
        let trees = vec![(
            "/usr/lib/modules".to_string(),
            "6.11.4-301.fc41.x86_64".to_string(),
        )];
        let inside = vec![(
            "/usr/lib/modules/6.11.4-301.fc41.x86_64".to_string(),
            "/usr/lib/modules/6.11.4-301.fc41.x86_64/vmlinuz".to_string(),
        )];
        let k = pair_kernels(&[], &trees, &inside, None);
        assert_eq!(k.len(), 1);
        assert_eq!(
            k[0].image,
            "/usr/lib/modules/6.11.4-301.fc41.x86_64/vmlinuz"
        );
        assert_eq!(k[0].module_dir, "/usr/lib/modules/6.11.4-301.fc41.x86_64");
    }
}
