//! The host a command works on, chosen once from `--root`: this machine, or a tree below a
//! directory (a fixture, or a collected bundle). Which it is, the root's node context says
//! ([`NodeContext::kind`](crate::host::io::context::NodeContext::kind), decided when the root
//! is made; every reader and command below asks it there: cufile.json's override is this
//! machine's, the kernel log a tree did not record is said to be missing). Every choice a
//! command makes on it is made here and nowhere else: its [`System`] (this machine, or the
//! tree's: commands answered from a bundle's recorded outputs, namespaces and capabilities read
//! from the tree, names from its `etc/hosts`, never mount(2), no device opened), whose policy
//! file is trusted, how the helper unmounts, and whether `provision --apply` may change
//! anything.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::host::io::env::Env;
use crate::host::io::programs;
use crate::host::io::tree_system::TreeSystem;
use crate::host::Root;
use crate::mount::backend::{self, NoMountNfs};
use crate::mount::mounter::Mounter;
use crate::mount::mover::Mover;
use crate::mount::unmount::Unmounter;
use crate::policy::{Backend, Trust};
use crate::system::{Live, System};

#[derive(Debug, Clone)]
pub struct Host {
    pub root: Root,
    /// What a relative DIR is relative to ([`Host::cwd`]).
    cwd: PathBuf,
    /// Every effect on it.
    system: Arc<dyn System + Send + Sync>,
}

/// A root that is not a directory: the message naming it, and the root as given (the container
/// hook still answers the runtime under it).
#[derive(Debug)]
pub struct BadRoot {
    pub root: Root,
    pub message: String,
}

impl Host {
    /// The one constructor both entry points use (`nfs-gds --root`, `NFS_GDS_ROOT` for both and
    /// `mount.nfs-gds`): the root is checked once, with one message, and the host chosen from
    /// it. A root that is not a directory is an error naming it: read as a host, it would be a
    /// host with nothing on it, and every command would give a confident, wrong verdict.
    pub fn open(dir: Option<&Path>) -> Result<Self, BadRoot> {
        let root = dir.map(Root::new).unwrap_or_else(Root::host);
        match root_is_a_directory(dir) {
            Ok(()) => Ok(Host::of(root)),
            Err(message) => Err(BadRoot { root, message }),
        }
    }

    /// The host for a root already known to be a directory (or absent).
    pub fn new(dir: Option<&Path>) -> Self {
        Host::of(dir.map(Root::new).unwrap_or_else(Root::host))
    }

    fn of(root: Root) -> Self {
        let machine = root.context().is_machine();
        let env = Env::get();
        let cwd = if machine {
            std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
        } else {
            PathBuf::from("/")
        };
        // A program waited for gets a held signal passed on (see `mount::signals`).
        let live = Live::new(env.path_set).forwarding(crate::mount::signals::caught_number);
        let system: Arc<dyn System + Send + Sync> = if machine {
            Arc::new(live)
        } else {
            Arc::new(TreeSystem::new(root.clone(), live))
        };
        // What the run decides about the node, once: the facts cache and cufile.json.
        let euid = (&*system as &dyn System).credentials().uids.1;
        let context = root.context().decide(env, euid);
        let root = root.with_context(context);
        Host { root, cwd, system }
    }

    /// Every effect on this host: the machine's, or the tree's (see the module).
    pub fn system(&self) -> &dyn System {
        &*self.system
    }

    /// What a relative DIR on the command line is relative to, for every command and the
    /// helper alike: the working directory on this machine; the tree's `/` in a tree, where the
    /// process's working directory is a path of the machine, not of the tree.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Whether it is this machine (`--root` absent, or a path to `/`).
    pub fn is_machine(&self) -> bool {
        self.root.context().is_machine()
    }

    /// Who may own the policy file: root; in a tree, also the owner of the tree (someone's own
    /// fixture controls nothing else).
    pub fn trust(&self) -> Trust {
        if self.is_machine() {
            Trust::root_only()
        } else {
            Trust::for_tree(&self.root)
        }
    }

    /// A mount point as mountinfo shows it: made absolute against [`Host::cwd`], and symlinks
    /// resolved on this machine; in a tree, only made absolute (nothing below `/` of the
    /// machine belongs to the tree).
    pub fn mount_point(&self, dir: &Path) -> PathBuf {
        let absolute = crate::mount::request::absolute(dir, &self.cwd);
        if self.is_machine() {
            std::fs::canonicalize(&absolute).unwrap_or(absolute)
        } else {
            absolute
        }
    }

    /// How the helper undoes a mount: umount2(2) here; in a tree, its `umount` program (a
    /// recording fake).
    pub fn unmounter(&self) -> Unmounter {
        let umount = programs::find(&self.root, "umount");
        if self.is_machine() {
            Unmounter::Syscall { umount }
        } else {
            match umount {
                Some(p) => Unmounter::Program(p),
                None => Unmounter::Unavailable {
                    root: self.root.dir().to_owned(),
                },
            }
        }
    }

    /// How the helper moves its verified mount onto DIR: move_mount(2) here; in a tree, its
    /// `mount` program run as `mount --move` (a recording fake).
    pub fn mover(&self) -> Mover {
        if self.is_machine() {
            return Mover::Syscall;
        }
        match programs::find(&self.root, "mount") {
            Some(p) => Mover::Program(p),
            None => Mover::Unavailable {
                root: self.root.dir().to_owned(),
            },
        }
    }

    /// The mounter the policy asks for; in a tree mount(2) is planned but never called.
    pub fn mounter(&self, backend: Backend) -> Result<Box<dyn Mounter>, NoMountNfs> {
        let fixture_root = (!self.is_machine()).then(|| self.root.dir().to_owned());
        backend::select(
            &self.root,
            backend,
            self.unmounter(),
            self.mover(),
            fixture_root,
        )
    }

    /// Whether `provision --apply` may change what it looks at.
    pub fn may_change(&self) -> bool {
        self.is_machine()
    }
}

fn root_is_a_directory(root: Option<&Path>) -> Result<(), String> {
    let Some(root) = root else { return Ok(()) };
    let what = format!("root {} (--root or NFS_GDS_ROOT)", root.display());
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!("{what}: not a directory")),
        Err(e) => Err(format!("{what}: {e}")),
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
            shown_as: None,
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
        let host = Host::new(Some(dir.path()));
        let m = host.mounter(Backend::Auto).unwrap();
        assert!(m.plan(&call()).starts_with("mount(2) "));
        assert!(host.mounter(Backend::MountNfs).is_err());
        tool(dir.path(), "sbin/mount.nfs");
        let m = host.mounter(Backend::Auto).unwrap();
        assert!(m
            .plan(&call())
            .starts_with(&format!("{}/sbin/mount.nfs s:/e", dir.path().display())));
        let m = host.mounter(Backend::Syscall).unwrap();
        assert!(m.plan(&call()).starts_with("mount(2) "));
    }

    #[test]
    fn a_root_is_checked_once_by_the_one_constructor() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!Host::open(Some(dir.path())).unwrap().is_machine());
        assert!(Host::open(None).unwrap().is_machine());
        let file = dir.path().join("fstab");
        std::fs::write(&file, "").unwrap();
        let bad = Host::open(Some(&file)).unwrap_err();
        assert!(bad.message.contains("not a directory"), "{}", bad.message);
        assert!(bad.message.contains(&*file.to_string_lossy()));
        let missing = dir.path().join("nonexistent");
        let bad = Host::open(Some(&missing)).unwrap_err();
        assert!(bad.message.contains("nonexistent"), "{}", bad.message);
        assert!(bad.message.contains("--root or NFS_GDS_ROOT"));
    }

    #[test]
    fn fixture_roots_unmount_with_the_tree_umount_only() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(Some(dir.path()));
        assert!(matches!(host.unmounter(), Unmounter::Unavailable { .. }));
        tool(dir.path(), "usr/bin/umount");
        assert_eq!(
            host.unmounter(),
            Unmounter::Program(dir.path().join("usr/bin/umount"))
        );
        assert!(matches!(
            Host::new(None).unmounter(),
            Unmounter::Syscall { .. }
        ));
        assert!(Host::new(Some(std::path::Path::new("/"))).is_machine());
    }
}
