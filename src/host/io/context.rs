//! What a command decides once about the node it reads, beside the root itself: what kind of
//! root it is (this machine, or a tree below `--root`), whether the facts cache is used and
//! where, the cufile.json cuFile reads on this machine, and the process's effective uid. The
//! kind is decided when the root is made ([`RootKind::of`]); the rest by the command line
//! ([`NodeContext::decide`], from the environment's one reader and the credentials the `System`
//! answers) when it opens the host. The root carries it, so no reader below decides it again —
//! as libkmod's `kmod_ctx` or cargo's `GlobalContext` carry what a run decided. Plain data: it
//! imports nothing it could circle back through.

use std::path::{Path, PathBuf};

use super::env::Env;

/// Where the facts cache is, when one is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CachePlace {
    /// No cache (not root, `NFS_GDS_NO_CACHE`, or a root made without a command line).
    Off,
    /// `NFS_GDS_CACHE_DIR`, a directory of the machine.
    Dir(PathBuf),
    /// `<root>/var/cache/nfs-gds`.
    BelowRoot,
}

/// What a root is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// This machine's own `/`, however it was spelt (`/var/..` is it too).
    Machine,
    /// A tree below a directory: a fixture, or a collected bundle. Its commands are answered
    /// from what it recorded, no device in it is opened, and nothing of this machine's (its
    /// working directory, its environment's cufile.json) applies to it.
    Tree,
}

impl RootKind {
    /// The kind of the root at `dir`: the machine when `dir` leads to `/`.
    pub fn of(dir: &Path) -> RootKind {
        let machine = dir == Path::new("/")
            || std::fs::canonicalize(dir).is_ok_and(|real| real == Path::new("/"));
        if machine {
            RootKind::Machine
        } else {
            RootKind::Tree
        }
    }
}

/// What one run decided about the node it reads.
#[derive(Debug, Clone)]
pub struct NodeContext {
    kind: RootKind,
    cache: CachePlace,
    /// `CUFILE_ENV_PATH_JSON`, on this machine only (never for a tree).
    cufile_json: Option<String>,
    /// The process's effective uid: a directory nfs-gds writes must be root's or its own.
    euid: u32,
}

impl NodeContext {
    /// The context of a root of `kind` made without a command line (the unit tests): no cache
    /// and no cufile.json from the environment, with the process's own effective uid.
    pub fn of_kind(kind: RootKind) -> NodeContext {
        NodeContext {
            kind,
            cache: CachePlace::Off,
            cufile_json: None,
            euid: crate::system::Live::effective_uid(),
        }
    }

    /// The context a command decides for this root (its kind kept), from the environment and
    /// the effective uid: the facts cache is `$NFS_GDS_CACHE_DIR` or `<root>/var/cache/nfs-gds`,
    /// used only by root and not when `NFS_GDS_NO_CACHE` turns it off.
    pub fn decide(&self, env: &Env, euid: u32) -> NodeContext {
        let cache = if env.no_cache {
            CachePlace::Off
        } else if euid != 0 {
            tracing::debug!("not running as root: the module facts cache is not used");
            CachePlace::Off
        } else {
            match &env.cache_dir {
                Some(dir) => CachePlace::Dir(dir.clone()),
                None => CachePlace::BelowRoot,
            }
        };
        NodeContext {
            kind: self.kind,
            cache,
            cufile_json: self.is_machine().then(|| env.cufile_json.clone()).flatten(),
            euid,
        }
    }

    /// What kind of root this is.
    pub fn kind(&self) -> RootKind {
        self.kind
    }

    /// Whether the root is this machine, not a tree.
    pub fn is_machine(&self) -> bool {
        self.kind == RootKind::Machine
    }

    /// Where the facts cache is.
    pub fn cache(&self) -> &CachePlace {
        &self.cache
    }

    /// The process's effective uid.
    pub fn euid(&self) -> u32 {
        self.euid
    }

    /// The cufile.json `CUFILE_ENV_PATH_JSON` names, on this machine.
    pub fn cufile_json(&self) -> Option<&str> {
        self.cufile_json.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::from_lookup(|name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.into()))
    }

    #[test]
    fn the_cache_is_roots_only_and_off_when_asked_and_cufile_json_is_the_machines() {
        let tree = NodeContext::of_kind(RootKind::Tree);
        let machine = NodeContext::of_kind(RootKind::Machine);
        assert_eq!(tree.decide(&env(&[]), 0).cache(), &CachePlace::BelowRoot);
        assert_eq!(
            tree.decide(&env(&[("NFS_GDS_CACHE_DIR", "/c")]), 0).cache(),
            &CachePlace::Dir("/c".into())
        );
        assert_eq!(tree.decide(&env(&[]), 1000).cache(), &CachePlace::Off);
        assert_eq!(
            tree.decide(&env(&[("NFS_GDS_NO_CACHE", "1")]), 0).cache(),
            &CachePlace::Off
        );
        // An empty value is unset.
        assert_eq!(
            tree.decide(&env(&[("NFS_GDS_NO_CACHE", "")]), 0).cache(),
            &CachePlace::BelowRoot
        );
        let json = [("CUFILE_ENV_PATH_JSON", "/opt/cufile.json")];
        assert_eq!(tree.decide(&env(&json), 0).cufile_json(), None);
        assert_eq!(
            machine.decide(&env(&json), 0).cufile_json(),
            Some("/opt/cufile.json")
        );
        assert_eq!(tree.cache(), &CachePlace::Off);
        assert!(machine.decide(&env(&[]), 0).is_machine());
        assert!(!tree.decide(&env(&[]), 0).is_machine());
    }
}
