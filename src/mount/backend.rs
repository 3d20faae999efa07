//! Choosing the [`Mounter`]: `mount.nfs` when it is installed (or demanded), mount(2) otherwise.
//!
//! On a real host unmounting is umount2(2); below a fixture root every side effect is a program
//! found in the tree (`mount.nfs`, `umount`), which tests make recording fakes, and mount(2) is
//! never called.

use super::mount_nfs::MountNfs;
use super::mounter::Mounter;
use super::syscall::{SyscallMount, SystemResolver};
use super::tools;
use super::unmount::Unmounter;
use crate::host::Root;
use crate::policy::Backend;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mount.nfs is not installed (searched {dirs} below {root}): install nfs-common (Debian, Ubuntu) or nfs-utils, or set backend = \"syscall\" in the policy")]
pub struct NoMountNfs {
    pub dirs: &'static str,
    pub root: String,
}

/// The unmounter for this root.
pub fn unmounter(root: &Root) -> Unmounter {
    let umount = tools::find(root, "umount");
    if root.is_host() {
        Unmounter::Syscall { umount }
    } else {
        match umount {
            Some(p) => Unmounter::Program(p),
            None => Unmounter::Unavailable {
                root: root.dir().to_owned(),
            },
        }
    }
}

/// The mounter the policy asks for, on this root.
pub fn select(root: &Root, backend: Backend) -> Result<Box<dyn Mounter>, NoMountNfs> {
    let unmounter = unmounter(root);
    let mount_nfs = tools::find(root, "mount.nfs");
    let syscall = |unmounter| -> Box<dyn Mounter> {
        Box::new(SyscallMount {
            resolver: Box::new(SystemResolver),
            unmounter,
            fixture_root: (!root.is_host()).then(|| root.dir().to_owned()),
        })
    };
    match (backend, mount_nfs) {
        (Backend::Syscall, _) => Ok(syscall(unmounter)),
        (_, Some(program)) => Ok(Box::new(MountNfs { program, unmounter })),
        (Backend::Auto, None) => Ok(syscall(unmounter)),
        (Backend::MountNfs, None) => Err(NoMountNfs {
            dirs: tools::SEARCH_PATH,
            root: root.dir().display().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount::mounter::MountCall;
    use crate::nfs::NfsSource;
    use crate::nfs::NfsVersion;
    use std::os::unix::fs::PermissionsExt;

    fn call() -> MountCall {
        MountCall {
            spec: "s:/e".into(),
            source: NfsSource::parse("s:/e").unwrap(),
            target: "/mnt".into(),
            options: "proto=rdma".into(),
            version: NfsVersion::DEFAULT,
            sloppy: false,
            no_mtab: false,
            verbose: false,
        }
    }

    fn tool(dir: &std::path::Path, rel: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn auto_prefers_mount_nfs_and_falls_back_to_the_syscall() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let m = select(&root, Backend::Auto).unwrap();
        assert!(m.plan(&call()).starts_with("mount(2) "));
        assert!(select(&root, Backend::MountNfs).is_err());
        tool(dir.path(), "sbin/mount.nfs");
        let m = select(&root, Backend::Auto).unwrap();
        assert!(m
            .plan(&call())
            .starts_with(&format!("{}/sbin/mount.nfs s:/e", dir.path().display())));
        let m = select(&root, Backend::Syscall).unwrap();
        assert!(m.plan(&call()).starts_with("mount(2) "));
    }

    #[test]
    fn fixture_roots_unmount_with_the_tree_umount_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert!(matches!(unmounter(&root), Unmounter::Unavailable { .. }));
        tool(dir.path(), "usr/bin/umount");
        assert_eq!(
            unmounter(&root),
            Unmounter::Program(dir.path().join("usr/bin/umount"))
        );
        assert!(matches!(
            unmounter(&Root::host()),
            Unmounter::Syscall { .. }
        ));
    }
}
