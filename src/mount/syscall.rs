//! The second backend: mount(2) directly, for hosts without nfs-utils.
//!
//! The kernel does no DNS: its NFS text options need the server's numeric `addr=`, of the family
//! the transport implies (`rdma` → IPv4, `rdma6` → IPv6), so the server is resolved here with the
//! system resolver (or taken from a user `addr=`). `clientaddr=` is left to the kernel, which
//! picks the local address of the route to the server for NFSv4 callbacks. VFS flags (`ro`,
//! `nosuid`, …) become mount flags; everything else is the data string. Compared with
//! `mount.nfs` this loses retries, trying every address, `/etc/nfsmount.conf` and statd for v3.
//! It is chosen by `backend = "syscall"`, or by `auto` when no `mount.nfs` is installed. Below a
//! fixture root it refuses to mount (mount(2) cannot be pointed into a tree); `-f` still shows
//! what it would do.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

use sys_mount::MountFlags;

use super::mounter::{MountCall, MountError, MountStatus, Mounting};
use super::options::split;
use super::unmount::Unmounter;

use crate::system::System;

/// How a server's name becomes addresses (the system's resolver, or a plan's placeholder).
pub type Resolve<'a> = &'a dyn Fn(&str) -> io::Result<Vec<IpAddr>>;

/// What mount(2) is called with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount2 {
    pub source: String,
    pub fstype: &'static str,
    pub flags: MountFlags,
    pub data: String,
}

/// Options that are VFS flags: (option, flag, set?). `rw` and the `no…` inverses clear.
const FLAG_OPTIONS: &[(&str, MountFlags, bool)] = &[
    ("ro", MountFlags::RDONLY, true),
    ("rw", MountFlags::RDONLY, false),
    ("nosuid", MountFlags::NOSUID, true),
    ("suid", MountFlags::NOSUID, false),
    ("nodev", MountFlags::NODEV, true),
    ("dev", MountFlags::NODEV, false),
    ("noexec", MountFlags::NOEXEC, true),
    ("exec", MountFlags::NOEXEC, false),
    ("sync", MountFlags::SYNCHRONOUS, true),
    ("async", MountFlags::SYNCHRONOUS, false),
    ("dirsync", MountFlags::DIRSYNC, true),
    ("noatime", MountFlags::NOATIME, true),
    ("atime", MountFlags::NOATIME, false),
    ("nodiratime", MountFlags::NODIRATIME, true),
    ("diratime", MountFlags::NODIRATIME, false),
    ("relatime", MountFlags::RELATIME, true),
    ("norelatime", MountFlags::RELATIME, false),
    ("strictatime", MountFlags::STRICTATIME, true),
    ("mand", MountFlags::MANDLOCK, true),
    ("nomand", MountFlags::MANDLOCK, false),
    ("silent", MountFlags::SILENT, true),
    ("loud", MountFlags::SILENT, false),
    ("remount", MountFlags::REMOUNT, true),
];

/// The flags as mount(8) writes them (`ro,nosuid`), `(none)` when no flag is set: the words of
/// [`FLAG_OPTIONS`] that set a flag, never the Rust value.
fn flag_words(flags: MountFlags) -> String {
    let words: Vec<&str> = FLAG_OPTIONS
        .iter()
        .filter(|(_, flag, set)| *set && flags.contains(*flag))
        .map(|(word, _, _)| *word)
        .collect();
    if words.is_empty() {
        "(none)".into()
    } else {
        words.join(",")
    }
}

/// Which address to put in `addr=`: the first of the family the transport needs.
fn pick_address(addrs: &[IpAddr], want_v6: bool) -> Option<IpAddr> {
    addrs.iter().copied().find(|a| a.is_ipv6() == want_v6)
}

/// Builds the mount(2) arguments; `resolve` is asked only when there is no `addr=` and the
/// server is a name.
pub fn prepare(call: &MountCall, resolve: Resolve) -> Result<Mount2, MountError> {
    let mut flags = MountFlags::empty();
    let mut data: Vec<String> = Vec::new();
    let mut want_v6 = call.source.server.is_ipv6();
    for opt in split(&call.options) {
        if let Some((_, flag, set)) = FLAG_OPTIONS.iter().find(|(o, _, _)| *o == opt) {
            flags.set(*flag, *set);
            continue;
        }
        if opt == "proto=rdma6" {
            want_v6 = true;
        }
        data.push(opt);
    }
    if call.sloppy && !data.iter().any(|o| o == "sloppy") {
        data.push("sloppy".into());
    }
    if !data.iter().any(|o| o.starts_with("addr=")) {
        let addr = match call.source.server.ip() {
            Some(ip) => ip,
            None => {
                let host = call.source.server.to_string();
                let addrs = resolve(&host).map_err(|e| MountError::Resolve {
                    host: host.clone(),
                    reason: e.to_string(),
                })?;
                pick_address(&addrs, want_v6).ok_or_else(|| MountError::Resolve {
                    host: host.clone(),
                    reason: format!(
                        "no {} address (got: {})",
                        if want_v6 { "IPv6" } else { "IPv4" },
                        addrs
                            .iter()
                            .map(IpAddr::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })?
            }
        };
        data.push(format!("addr={addr}"));
    }
    Ok(Mount2 {
        source: call.spec.clone(),
        fstype: if call.version.is_v4() { "nfs4" } else { "nfs" },
        flags,
        data: data.join(","),
    })
}

pub struct SyscallMount {
    pub unmounter: Unmounter,
    pub mover: super::mover::Mover,
    /// A fixture root: never call mount(2).
    pub fixture_root: Option<PathBuf>,
}

impl std::fmt::Debug for SyscallMount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyscallMount")
            .field("unmounter", &self.unmounter)
            .field("fixture_root", &self.fixture_root)
            .finish_non_exhaustive()
    }
}

impl Mounting for SyscallMount {
    fn plan(&self, call: &MountCall) -> String {
        // No DNS for a plan: show where addr= will come from.
        let placeholder = |_: &str| {
            Ok(vec![
                IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
            ])
        };
        match prepare(call, &placeholder) {
            Ok(m) => {
                let data = if call.source.server.ip().is_none()
                    && !split(&call.options).iter().any(|o| o.starts_with("addr="))
                {
                    let (head, _) = m.data.rsplit_once(",addr=").unwrap_or((&m.data, ""));
                    format!("{head},addr=<address of {}>", call.source.server)
                } else {
                    m.data
                };
                format!(
                    "mount(2) source={} target={} fstype={} flags={} data={data}",
                    m.source,
                    call.target.display(),
                    m.fstype,
                    flag_words(m.flags)
                )
            }
            Err(e) => format!("mount(2) cannot be prepared: {e}"),
        }
    }

    fn mount(&mut self, system: &dyn System, call: &MountCall) -> Result<MountStatus, MountError> {
        if let Some(root) = &self.fixture_root {
            return Err(MountError::Unsupported(format!(
                "the mount(2) backend cannot mount below the fixture root {} (use -f, or put a mount.nfs in the tree)",
                root.display()
            )));
        }
        let m = prepare(call, &|host: &str| system.resolve(host))?;
        // The flags are a `c_ulong`: u64 here, u32 on 32-bit targets.
        #[allow(clippy::useless_conversion)]
        let flags = u64::from(m.flags.bits());
        system
            .mount(&m.source, &call.target, m.fstype, flags, &m.data)
            .map(|()| MountStatus::Exited(0))
            .map_err(|source| MountError::Syscall {
                spec: call.spec.clone(),
                target: call.target.clone(),
                source,
            })
    }

    fn unmounter(&self) -> &Unmounter {
        &self.unmounter
    }

    fn mover(&self) -> &super::mover::Mover {
        &self.mover
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs::NfsSource;
    use crate::nfs::NfsVersion;
    use std::cell::RefCell;

    struct Table(Vec<IpAddr>, RefCell<Vec<String>>);
    impl Table {
        fn resolve(&self, host: &str) -> io::Result<Vec<IpAddr>> {
            self.1.borrow_mut().push(host.to_string());
            if self.0.is_empty() {
                Err(io::Error::new(io::ErrorKind::NotFound, "unknown host"))
            } else {
                Ok(self.0.clone())
            }
        }
    }

    fn prepare(call: &MountCall, table: &Table) -> Result<Mount2, MountError> {
        super::prepare(call, &|h: &str| table.resolve(h))
    }

    fn call(spec: &str, options: &str) -> MountCall {
        MountCall {
            spec: spec.into(),
            source: NfsSource::parse(spec).unwrap(),
            target: "/mnt/data".into(),
            options: options.into(),
            version: NfsVersion::DEFAULT,
            sloppy: false,
            no_mtab: false,
            verbose: false,
            shown_as: None,
        }
    }

    fn resolver(addrs: &[&str]) -> Table {
        Table(
            addrs.iter().map(|a| a.parse().unwrap()).collect(),
            RefCell::new(Vec::new()),
        )
    }

    #[test]
    fn vfs_flags_become_flags_and_the_rest_is_data_with_addr() {
        let r = resolver(&[]);
        let m = prepare(
            &call(
                "10.0.2.15:/export",
                "ro,nosuid,hard,vers=4.2,proto=rdma,port=20049",
            ),
            &r,
        )
        .unwrap();
        assert_eq!(m.fstype, "nfs4");
        assert_eq!(m.flags, MountFlags::RDONLY | MountFlags::NOSUID);
        assert_eq!(m.data, "hard,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15");
        assert!(r.1.borrow().is_empty(), "an address needs no resolver");
    }

    #[test]
    fn names_are_resolved_to_the_family_of_the_transport() {
        let r = resolver(&["fe80::1", "10.1.1.1"]);
        let m = prepare(&call("filer:/export", "rw,proto=rdma"), &r).unwrap();
        assert!(m.data.ends_with(",addr=10.1.1.1"), "{}", m.data);
        assert_eq!(r.1.borrow().as_slice(), ["filer"]);
        let m = prepare(&call("filer:/export", "rw,proto=rdma6"), &r).unwrap();
        assert!(m.data.ends_with(",addr=fe80::1"), "{}", m.data);
        let e = prepare(
            &call("filer:/export", "proto=rdma"),
            &resolver(&["fe80::1"]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no IPv4 address"), "{e}");
        assert_eq!(e.exit_code(), 32);
        let e = prepare(&call("filer:/export", "proto=rdma"), &resolver(&[])).unwrap_err();
        assert!(
            e.to_string().starts_with("cannot resolve the server filer"),
            "{e}"
        );
    }

    #[test]
    fn a_user_addr_is_kept_and_v3_uses_fstype_nfs() {
        let mut c = call("filer:/export", "vers=3,proto=rdma,addr=10.9.9.9");
        c.version = NfsVersion::V3;
        c.sloppy = true;
        let m = prepare(&c, &resolver(&[])).unwrap();
        assert_eq!(m.fstype, "nfs");
        assert_eq!(m.data, "vers=3,proto=rdma,addr=10.9.9.9,sloppy");
    }

    #[test]
    fn ipv6_literals_keep_their_brackets_in_the_source() {
        let m = prepare(&call("[fe80::1]:/export", "proto=rdma6"), &resolver(&[])).unwrap();
        assert_eq!(m.source, "[fe80::1]:/export");
        assert_eq!(m.data, "proto=rdma6,addr=fe80::1");
    }

    #[test]
    fn never_mounts_below_a_fixture_root_but_can_plan() {
        let mut s = SyscallMount {
            unmounter: Unmounter::Unavailable {
                root: "/tmp/r".into(),
            },
            mover: super::super::mover::Mover::Unavailable {
                root: "/tmp/r".into(),
            },
            fixture_root: Some("/tmp/r".into()),
        };
        let c = call("filer:/export", "rw,vers=4.2,proto=rdma,port=20049");
        let fake = crate::system::Fake::new();
        let e = s.mount(&fake, &c).unwrap_err();
        assert!(matches!(e, MountError::Unsupported(_)));
        assert!(fake.calls().is_empty(), "{:?}", fake.calls());
        assert_eq!(
            s.plan(&c),
            "mount(2) source=filer:/export target=/mnt/data fstype=nfs4 flags=(none) data=vers=4.2,proto=rdma,port=20049,addr=<address of filer>"
        );
        // Flags in mount(8)'s words, not a Rust debug string.
        let c = call("10.0.2.15:/export", "ro,nosuid,noatime,vers=4.2,proto=rdma");
        assert_eq!(
            s.plan(&c),
            "mount(2) source=10.0.2.15:/export target=/mnt/data fstype=nfs4 flags=ro,nosuid,noatime data=vers=4.2,proto=rdma,addr=10.0.2.15"
        );
    }
}
