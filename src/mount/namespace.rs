//! `-N NAMESPACE`: mount inside another mount namespace.
//!
//! mount(8) passes `/proc/<its pid>/fd/<n>` for `mount -N`, and starts the helper in its own
//! namespace; the helper must `setns(CLONE_NEWNS)` itself, before it reads `/proc/self/*` or runs
//! `mount.nfs` (which accepts no `-N`). A bare number is taken as a pid (`/proc/PID/ns/mnt`), as
//! mount(8) does. setns needs CAP_SYS_ADMIN and a single-threaded process; the helper has one
//! thread. Below a fixture root there is no namespace to enter: the path is only checked to
//! exist in the tree.

use std::path::{Path, PathBuf};

use crate::host::Root;

pub trait Namespace {
    fn enter(&mut self, ns: &Path) -> Result<(), NamespaceError>;
}

#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error("cannot open mount namespace {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot enter mount namespace {}: {source}", path.display())]
    SetNs { path: PathBuf, source: nix::Error },
}

/// The `-N` argument as a path: a pid stands for `/proc/PID/ns/mnt`.
pub fn ns_path(arg: &str) -> PathBuf {
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        PathBuf::from(format!("/proc/{arg}/ns/mnt"))
    } else {
        PathBuf::from(arg)
    }
}

/// The real thing: setns(2).
#[derive(Debug, Default)]
pub struct SetNs;

impl Namespace for SetNs {
    fn enter(&mut self, ns: &Path) -> Result<(), NamespaceError> {
        let file = std::fs::File::open(ns).map_err(|source| NamespaceError::Open {
            path: ns.to_owned(),
            source,
        })?;
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNS).map_err(|source| {
            NamespaceError::SetNs {
                path: ns.to_owned(),
                source,
            }
        })
    }
}

/// Below a fixture root: the namespace file must exist in the tree; nothing is entered.
#[derive(Debug)]
pub struct RootedNamespace {
    pub root: Root,
}

impl Namespace for RootedNamespace {
    fn enter(&mut self, ns: &Path) -> Result<(), NamespaceError> {
        let path = self.root.join(ns);
        std::fs::metadata(&path)
            .map(|_| ())
            .map_err(|source| NamespaceError::Open { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_names_its_mount_namespace() {
        assert_eq!(ns_path("1234"), Path::new("/proc/1234/ns/mnt"));
        assert_eq!(ns_path("/proc/77/fd/5"), Path::new("/proc/77/fd/5"));
        assert_eq!(ns_path(""), Path::new(""));
    }

    #[test]
    fn below_a_root_the_namespace_file_must_exist_in_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let mut ns = RootedNamespace {
            root: Root::new(dir.path()),
        };
        let e = ns.enter(Path::new("/proc/1/ns/mnt")).unwrap_err();
        assert!(e.to_string().contains("proc/1/ns/mnt"), "{e}");
        std::fs::create_dir_all(dir.path().join("proc/1/ns")).unwrap();
        std::fs::write(dir.path().join("proc/1/ns/mnt"), "").unwrap();
        ns.enter(Path::new("/proc/1/ns/mnt")).unwrap();
    }

    #[test]
    fn setns_on_a_missing_file_fails_before_any_syscall() {
        let e = SetNs.enter(Path::new("/nonexistent/ns/mnt")).unwrap_err();
        assert!(matches!(e, NamespaceError::Open { .. }), "{e}");
    }
}
