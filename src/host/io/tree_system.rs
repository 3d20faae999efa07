//! The system of a tree below `--root` (a fixture, or a collected bundle): what stands in for
//! each effect when the host is not this machine.
//!
//! - a program run for its output is never run: its output is the bundle's ([`recorded`]);
//! - a program run with the terminal (the tree's own `mount.nfs`, `modprobe`, `umount`:
//!   recording fakes found below the root) runs, as on the machine; so does one run for an
//!   answer that decides the next step (the tree's own `scontrol`, [`Call::Run`]);
//! - mount(2) and umount2(2) are never called on a tree's path;
//! - a mount namespace is the tree's file, which must exist; nothing is entered;
//! - CAP_SYS_ADMIN is read from the tree's `proc/self/status` (CapEff), so tests take both
//!   paths whoever runs them; the ids are the process's own, and so is the clock;
//! - a server's name resolves through the tree's `etc/hosts` alone, never this machine's DNS,
//!   so a tree judges the same wherever it is replayed;
//! - no device is opened: the tree's entry in the device's place (whatever it is: a FIFO, a
//!   symlink out of the tree) stands for the device, and its recorded list for what the device
//!   listed;
//! - stdin is the process's own.

use std::path::Path;
use std::time::Duration;

use super::hosts_file::HostsFile;
use super::recorded;
use super::root::Root;
use crate::system::{Answer, Call, Failure, Live, Probed, System};

/// `CAP_SYS_ADMIN`'s bit in the capability sets.
pub const CAP_SYS_ADMIN_BIT: u32 = 21;

#[derive(Debug)]
pub struct TreeSystem {
    root: Root,
    live: Live,
}

impl TreeSystem {
    /// `live` runs the tree's own programs and keeps the time.
    pub fn new(root: Root, live: Live) -> Self {
        TreeSystem { root, live }
    }

    fn has_sys_admin(&self) -> Result<bool, String> {
        let path = self.root.join("proc/self/status");
        let bytes = super::reader::read_named(&path, crate::host::io::reader::FileKind::Text)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("cannot read {}: no such file", path.display()))?
            .bytes;
        parse_cap_eff(&String::from_utf8_lossy(&bytes))
            .map(|bits| bits & (1 << CAP_SYS_ADMIN_BIT) != 0)
            .ok_or_else(|| format!("{} has no CapEff: line", path.display()))
    }

    /// The probe below the root: the device's entry is looked at, never opened.
    fn probe(&self, device: &Path, list: &Path) -> Probed {
        let missing = |rel: &Path| format!("{} does not exist", self.root.join(rel).display());
        if !self.root.exists(device) {
            return Probed::CannotOpen(missing(device));
        }
        let list = match self.root.read_text_lossy(list) {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(missing(list)),
            Err(e) => Err(e.to_string()),
        };
        Probed::Opened {
            list,
            close: Duration::ZERO,
        }
    }

    fn never(&self, what: &str) -> Answer {
        Answer::Done(Err(Failure::other(format!(
            "{what} is never called below the fixture root {}",
            self.root.dir().display()
        ))))
    }
}

/// The `CapEff:` hex mask of a `/proc/<pid>/status` text.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        l.strip_prefix("CapEff:")
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
    })
}

impl System for TreeSystem {
    fn effect(&self, call: &Call) -> Answer {
        match call {
            Call::Output { program, args, .. } => {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Answer::Output(recorded::read(&self.root, program, &args))
            }
            Call::Mount { .. } | Call::Bind { .. } | Call::MakePrivate { .. } => {
                self.never("mount(2)")
            }
            Call::MoveMount { .. } => self.never("move_mount(2)"),
            Call::Unmount { .. } => self.never("umount2(2)"),
            Call::EnterNamespace { path } => {
                let in_tree = self.root.join(path);
                Answer::Done(
                    std::fs::metadata(&in_tree)
                        .map(|_| ())
                        .map_err(|e| Failure {
                            errno: e.raw_os_error(),
                            message: format!(
                                "cannot open mount namespace {}: {e}",
                                in_tree.display()
                            ),
                        }),
                )
            }
            Call::HasSysAdmin => Answer::HasSysAdmin(self.has_sys_admin()),
            Call::Resolve { host } => Answer::Addresses(
                HostsFile::read(&self.root)
                    .resolve(host)
                    .map_err(|e| e.to_string()),
            ),
            Call::ProbeDevice { device, list, .. } => Answer::Probed(self.probe(device, list)),
            Call::Run { .. }
            | Call::Exec { .. }
            | Call::Now
            | Call::WallClock
            | Call::Sleep { .. }
            | Call::Credentials
            | Call::StdinIsTerminal
            | Call::ReadStdin { .. } => self.live.effect(call),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn tree() -> (tempfile::TempDir, TreeSystem) {
        let dir = tempfile::tempdir().unwrap();
        let sys = TreeSystem::new(Root::new(dir.path()), Live::new(true));
        (dir, sys)
    }

    #[test]
    fn below_a_root_the_namespace_file_must_exist_in_the_tree() {
        let (dir, ts) = tree();
        let sys: &dyn System = &ts;
        let e = sys
            .enter_namespace(Path::new("/proc/1/ns/mnt"))
            .unwrap_err();
        assert!(e.message.contains("proc/1/ns/mnt"), "{e}");
        std::fs::create_dir_all(dir.path().join("proc/1/ns")).unwrap();
        std::fs::write(dir.path().join("proc/1/ns/mnt"), "").unwrap();
        sys.enter_namespace(Path::new("/proc/1/ns/mnt")).unwrap();
    }

    #[test]
    fn cap_eff_is_read_from_the_trees_status_file() {
        let status = "Name:\tmount.nfs-gds\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("CapEff:\tzz\n"), None);
        let (dir, ts) = tree();
        let sys: &dyn System = &ts;
        assert!(sys.has_sys_admin().is_err());
        let f = dir.path().join("proc/self/status");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, status).unwrap();
        assert_eq!(sys.has_sys_admin(), Ok(true));
        std::fs::write(&f, "CapEff:\t0000000000000000\n").unwrap();
        assert_eq!(sys.has_sys_admin(), Ok(false));
        std::fs::write(&f, "Name: x\n").unwrap();
        assert!(sys.has_sys_admin().is_err());
    }

    #[test]
    fn mount_and_umount_are_never_called_and_names_resolve_from_etc_hosts() {
        let (dir, ts) = tree();
        let sys: &dyn System = &ts;
        let e = sys
            .mount("s:/e", Path::new("/mnt"), "nfs4", 0, "proto=rdma")
            .unwrap_err();
        assert!(e.to_string().contains("never called"), "{e}");
        assert!(sys.unmount(Path::new("/mnt"), true).is_err());
        assert!(sys.resolve("filer").is_err());
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/hosts"), "10.0.2.15 filer\n").unwrap();
        assert_eq!(
            sys.resolve("FILER").unwrap(),
            ["10.0.2.15".parse::<std::net::IpAddr>().unwrap()]
        );
    }
}
