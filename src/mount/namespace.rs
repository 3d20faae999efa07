//! `-N NAMESPACE`: mount inside another mount namespace.
//!
//! mount(8) passes `/proc/<its pid>/fd/<n>` for `mount -N`, and starts the helper in its own
//! namespace; the helper must `setns(CLONE_NEWNS)` itself, before it reads `/proc/self/*` or runs
//! `mount.nfs` (which accepts no `-N`). A bare number is taken as a pid (`/proc/PID/ns/mnt`), as
//! mount(8) does. setns needs CAP_SYS_ADMIN and a single-threaded process; the helper has one
//! thread. Entering is the system's effect: below a fixture root the path is only checked to
//! exist in the tree.

use std::path::{Path, PathBuf};

use crate::system::{Failure, System};

/// Why the namespace could not be entered (opening its file, or setns(2)).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NamespaceError(pub Failure);

/// The `-N` argument as a path: a pid stands for `/proc/PID/ns/mnt`.
pub fn ns_path(arg: &str) -> PathBuf {
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        PathBuf::from(format!("/proc/{arg}/ns/mnt"))
    } else {
        PathBuf::from(arg)
    }
}

/// Enters the mount namespace of `ns`.
pub fn enter(system: &dyn System, ns: &Path) -> Result<(), NamespaceError> {
    system.enter_namespace(ns).map_err(NamespaceError)
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
    fn entering_is_the_systems_effect() {
        let fake = crate::system::Fake::new();
        enter(&fake, Path::new("/proc/1234/ns/mnt")).unwrap();
        assert_eq!(fake.calls(), ["setns /proc/1234/ns/mnt"]);
    }
}
