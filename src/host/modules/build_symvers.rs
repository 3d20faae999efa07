//! Finds the `Module.symvers` of a module tree's kernel build and says what a cached verdict
//! drawn from it depends on: the provider CRCs of an in-tree module, and the kernel image's own,
//! without decompressing a module.
//!
//! Where it is, by release (first found wins): `lib/modules/<release>/build/Module.symvers`
//! (the `build` link of the tree: Debian, Ubuntu, RHEL, SUSE and a `make modules_install`
//! all point it at the build or headers tree), `/usr/src/linux-headers-<release>/Module.symvers`
//! (Debian, Ubuntu), `/usr/src/kernels/<release>/Module.symvers` (RHEL), then the gzipped
//! copies of the kernel package, `/boot/symvers-<release>.gz` (RHEL, SUSE) and
//! `lib/modules/<release>/symvers.gz` (RHEL). Every location names the release, so a file of
//! another release is never found. Whether its CRCs may stand in for a provider file's — the
//! proof that it is this build's — is decided by `symbol_providers` (which reads one provider
//! file to prove it).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::host::io::facts_cache::{FileIdentity, SymversKey};
use crate::host::io::reader::FileKind;
use crate::host::io::root::Root;
use crate::kmod::symvers;

/// A symvers file found for a tree, scanned.
#[derive(Debug)]
pub struct BuildSymvers {
    /// The host path (with the root), for messages and identities.
    pub path: PathBuf,
    /// What the scan found.
    pub found: symvers::Found,
    /// Its identity, as opened.
    pub identity: FileIdentity,
}

/// The release of a tree directory (`/lib/modules/<release>`).
fn release_of(tree_dir: &str) -> Option<&str> {
    tree_dir.rsplit('/').next().filter(|r| !r.is_empty())
}

/// The candidate locations of the symvers of the tree at `tree_dir`, in order.
fn candidates(tree_dir: &str) -> Vec<PathBuf> {
    let Some(release) = release_of(tree_dir) else {
        return Vec::new();
    };
    let tree = tree_dir.trim_start_matches('/');
    [
        format!("{tree}/build/Module.symvers"),
        format!("usr/src/linux-headers-{release}/Module.symvers"),
        format!("usr/src/kernels/{release}/Module.symvers"),
        format!("boot/symvers-{release}.gz"),
        format!("{tree}/symvers.gz"),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// The first candidate that is a regular file now, with its identity (one `stat` each). The
/// `build` link's file counts only when the link leads to this release's tree
/// ([`build_is_this_release`]).
fn locate(root: &Root, tree_dir: &str) -> Option<(PathBuf, FileIdentity)> {
    let release = release_of(tree_dir)?;
    candidates(tree_dir)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != 0 || build_is_this_release(root, tree_dir, release))
        .find_map(|(_, rel)| root.identity(&rel).map(|id| (rel, id)))
}

/// Whether the tree's `build` link leads to the build of `release`: the directory it names
/// carries the release in its name (`/usr/src/linux-headers-<release>`,
/// `/usr/src/kernels/<release>`), or the build tree says so itself
/// (`include/config/kernel.release`, which every kernel build writes). A link left pointing at
/// another release's headers is not followed.
fn build_is_this_release(root: &Root, tree_dir: &str, release: &str) -> bool {
    let link = Path::new(tree_dir.trim_start_matches('/')).join("build");
    let named = root.read_link(&link).ok().flatten().is_some_and(|t| {
        t.trim_end_matches('/')
            .rsplit('/')
            .next()
            .is_some_and(|last| last == release || last.ends_with(&format!("-{release}")))
    });
    named
        || root
            .read_text(link.join("include/config/kernel.release"))
            .ok()
            .flatten()
            .is_some_and(|t| t.trim() == release)
}

/// What a verdict for the tree at `tree_dir` depends on now ([`SymversKey`]): a `readlink` and
/// a `stat` or a few; nothing is read.
pub fn symvers_key(root: &Root, tree_dir: &str) -> SymversKey {
    let link = Path::new(tree_dir.trim_start_matches('/')).join("build");
    SymversKey {
        build_link: root.read_link(link).ok().flatten(),
        file: locate(root, tree_dir).map(|(_, id)| id),
    }
}

impl BuildSymvers {
    /// Scans the symvers of the tree at `tree_dir` for `wanted` and the exports of `module`
    /// ([`symvers::read`]): `Ok(None)` when there is none, an error naming the file when it
    /// cannot be read, decompressed or parsed.
    pub fn read(
        root: &Root,
        tree_dir: &str,
        wanted: &HashSet<&str>,
        module: &str,
    ) -> Result<Option<Self>, String> {
        let Some((rel, _)) = locate(root, tree_dir) else {
            return Ok(None);
        };
        let path = root.join(&rel);
        let file = root
            .open_file(&rel, FileKind::ModuleIndex)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{} vanished while it was read", path.display()))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let identity = FileIdentity::of_meta(&path, &meta);
        let found = symvers::read(file, &path, wanted, module)?;
        Ok(Some(BuildSymvers {
            path,
            found,
            identity,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_location_names_the_release() {
        let c = candidates("/lib/modules/6.1.0-50-amd64");
        assert_eq!(c.len(), 5);
        for p in &c {
            assert!(p.to_string_lossy().contains("6.1.0-50-amd64"), "{p:?}");
        }
        assert!(candidates("/").is_empty());
    }

    #[test]
    fn the_first_file_found_is_read_and_a_gzipped_one_undone() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let tree = "/lib/modules/6.1.0-50-amd64";
        let wanted: HashSet<&str> = ["printk"].into();
        assert!(BuildSymvers::read(&root, tree, &wanted, "m")
            .unwrap()
            .is_none());
        let line = b"0x00000001\tprintk\tvmlinux\tEXPORT_SYMBOL\t\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(line).unwrap();
        std::fs::create_dir_all(dir.path().join("boot")).unwrap();
        std::fs::write(
            dir.path().join("boot/symvers-6.1.0-50-amd64.gz"),
            gz.finish().unwrap(),
        )
        .unwrap();
        let s = BuildSymvers::read(&root, tree, &wanted, "m")
            .unwrap()
            .unwrap();
        assert_eq!(s.found.symbols["printk"].crc, 1);
        assert!(s.path.ends_with("boot/symvers-6.1.0-50-amd64.gz"));
        let key = symvers_key(&root, tree);
        assert_eq!(key.file.as_ref(), Some(&s.identity));
        assert_eq!(key.build_link, None);
    }
}
