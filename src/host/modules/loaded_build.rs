//! Where the loaded rpcrdma came from: the file modprobe resolves, another `rpcrdma*` file of the
//! host's module tree, or outside the tree (a driver container's build, a manual `insmod`), with
//! the driver-container markers found on the host.
//!
//! Only asked when rpcrdma is loaded and its build-id differs from the resolved file's, and it
//! stays cheap then: the candidates are the files named `rpcrdma*` in the directories where
//! packages put them (the inbox directory, `updates/` and `extra/`, a few levels deep, a bounded
//! number of listings), and at most [`MAX_INSPECTED`] of them are opened.

use std::path::PathBuf;

use serde::Serialize;

use crate::host::io::error::HostError;
use crate::host::io::root::Root;

/// Module files opened at most to find the loaded build.
pub const MAX_INSPECTED: usize = 4;
/// Directory listings at most while looking for candidates.
const MAX_LISTINGS: usize = 48;
/// How deep below `updates/` and `extra/` candidates are looked for.
const MAX_DEPTH: usize = 3;

/// What the host shows when NVIDIA's GPU Operator or Network Operator driver containers run.
pub const DRIVER_CONTAINER_MARKERS: [&str; 3] = [
    "/run/mellanox/drivers",
    "/run/nvidia/driver",
    "/run/nvidia/validations",
];

/// How the loaded rpcrdma relates to the module files of the host's tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LoadedBuild {
    /// The loaded build is the file modprobe resolves.
    ResolvedFile,
    /// The loaded build is another file of the tree (`path` a host path).
    OtherFile { path: String },
    /// No inspected file of the tree has the loaded build-id.
    OutsideTree {
        /// The candidate files opened (host paths).
        inspected: Vec<String>,
        /// Candidates left unopened past [`MAX_INSPECTED`].
        not_inspected: usize,
        /// The driver-container markers present on the host.
        markers: Vec<String>,
    },
    /// A different build by srcversion; without a loaded build-id it cannot be looked up.
    OtherBuild,
    /// No build-id (nor srcversion) on both sides to compare.
    Unknown,
}

/// The driver-container markers that exist below the root.
pub fn read_markers(root: &Root) -> Vec<String> {
    DRIVER_CONTAINER_MARKERS
        .iter()
        .filter(|m| root.exists(m.trim_start_matches('/')))
        .map(|m| m.to_string())
        .collect()
}

/// The `rpcrdma*` module files of the tree at `tree_rel` (host path of the tree, such as
/// `/lib/modules/<release>`), except `skip`, in a stable order: inbox directory first.
pub fn find_candidates(
    root: &Root,
    tree_rel: &str,
    skip: Option<&PathBuf>,
) -> Result<Vec<PathBuf>, HostError> {
    let tree = tree_rel.trim_matches('/');
    let mut found = Vec::new();
    let mut listings = 0;
    let mut queue: Vec<(String, usize)> = vec![
        (format!("{tree}/kernel/net/sunrpc/xprtrdma"), MAX_DEPTH),
        (format!("{tree}/updates"), 0),
        (format!("{tree}/extra"), 0),
    ];
    let mut i = 0;
    while i < queue.len() && listings < MAX_LISTINGS {
        let (dir, depth) = queue[i].clone();
        i += 1;
        listings += 1;
        let Some(names) = root.list_dir(&dir)? else {
            continue;
        };
        for name in names {
            let rel = format!("{dir}/{name}");
            if name.starts_with("rpcrdma") && name.contains(".ko") {
                if root.is_file(&rel) {
                    let path = root.join(&rel);
                    if Some(&path) != skip {
                        found.push(path);
                    }
                }
            } else if depth < MAX_DEPTH && !name.contains('.') {
                queue.push((rel, depth + 1));
            }
        }
    }
    Ok(found)
}

/// Finds the loaded build (`build_id`) among the tree's `rpcrdma*` files other than `resolved`.
pub fn locate(
    root: &Root,
    tree_rel: &str,
    resolved: Option<&PathBuf>,
    build_id: &str,
) -> Result<LoadedBuild, HostError> {
    let candidates = find_candidates(root, tree_rel, resolved)?;
    let mut inspected = Vec::new();
    for path in candidates.iter().take(MAX_INSPECTED) {
        inspected.push(path.display().to_string());
        match crate::host::modules::module_files::inspect_file_with_cache(root, path, &[], None) {
            Ok(f) if f.build_id.as_deref() == Some(build_id) => {
                return Ok(LoadedBuild::OtherFile {
                    path: path.display().to_string(),
                })
            }
            Ok(_) => {}
            Err(e) => tracing::debug!("{e}: not a candidate for the loaded rpcrdma"),
        }
    }
    Ok(LoadedBuild::OutsideTree {
        inspected,
        not_inspected: candidates.len().saturating_sub(MAX_INSPECTED),
        markers: read_markers(root),
    })
}
