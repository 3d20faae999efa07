//! The mount table a simulated kernel publishes: NFS mounts as mountinfo lines and mountstats
//! records, written below a tree each by rename, so a helper reading it mid-change sees the old
//! table or the new one, never half; and how that kernel names a new NFS mount.
//!
//! Kernel behaviours modelled here, each seen on a real kernel (Debian 12, Linux 6.1, in the VM
//! suite) before it was modelled:
//! - a new NFS mount of an export that is already mounted from the same machine (under the same
//!   address, another address of that machine, or a name for it) shares that mount's superblock:
//!   it gets its device, is shown under the superblock's first source, and runs over its
//!   transport with its `addr=` (`sharecache`, and NFSv4 trunking merging the clients of two
//!   addresses of one server) — the transport trap;
//! - the path is shown rebuilt: `srv:/export/` appears as `srv:/export`.
//!
//! Not modelled: `nosharecache` (on the real kernel the transport is merged all the same),
//! subdirectory mounts of a mounted export, NFSv3, mount propagation, unique mount ids.

use std::path::Path;

/// One NFSv4 mount as the simulated kernel shows it.
pub(super) struct NfsLine<'a> {
    pub id: u32,
    pub parent: u32,
    /// The minor of the anonymous device `0:N`.
    pub dev: u32,
    pub point: &'a str,
    pub source: &'a str,
    pub proto: &'a str,
    /// The server address the kernel talks to (`addr=`).
    pub addr: &'a str,
}

/// The machines of the simulated network, each by its names and addresses (the first address
/// is what a name resolves to; the tree's `etc/hosts` says the same).
pub(super) const MACHINES: &[&[&str]] = &[&["10.0.2.15", "127.0.0.1", "nfs-gds-vm"]];

/// `etc/hosts` of the tree: the names of [`MACHINES`].
pub(super) const HOSTS: &str = "127.0.0.1 localhost\n10.0.2.15 nfs-gds-vm\n";

/// A mounted NFS superblock: its device minor, first source, transport and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Superblock {
    pub dev: u32,
    pub source: String,
    pub proto: &'static str,
    pub addr: String,
}

/// A mount's superblock as a simulated kernel keeps it: device, source, transport, address.
pub(super) type SuperblockOf<'m> = (u32, &'m str, &'static str, &'m str);

fn machine_of(server: &str) -> Option<&'static [&'static str]> {
    MACHINES.iter().copied().find(|m| m.contains(&server))
}

/// The address `server` is reached at: itself when it is an address, else what its name
/// resolves to (its machine's first address).
fn address_of(server: &str) -> String {
    if server.parse::<std::net::IpAddr>().is_ok() {
        return server.to_string();
    }
    machine_of(server).map_or(server, |m| m[0]).to_string()
}

fn split(spec: &str) -> (&str, String) {
    let (server, path) = spec.split_once(':').expect("SERVER:PATH");
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    (server, format!("/{}", parts.join("/")))
}

/// How the kernel shows a new mount of `spec` asked over `proto`, given the superblocks of the
/// mounts there are: the one of the same export from the same machine, shared, or a new one on
/// the device `fresh_dev` gives.
pub(super) fn name_new_mount<'m>(
    mounted: impl IntoIterator<Item = SuperblockOf<'m>>,
    spec: &str,
    proto: &'static str,
    fresh_dev: impl FnOnce() -> u32,
) -> Superblock {
    let (server, path) = split(spec);
    let same_machine =
        |other: &str| other == server || machine_of(server).is_some_and(|m| m.contains(&other));
    let shared = mounted.into_iter().find(|(_, source, _, _)| {
        let (s, p) = split(source);
        p == path && same_machine(s)
    });
    match shared {
        Some((dev, source, proto, addr)) => Superblock {
            dev,
            source: source.to_string(),
            proto,
            addr: addr.to_string(),
        },
        None => Superblock {
            dev: fresh_dev(),
            source: format!("{server}:{path}"),
            proto,
            addr: address_of(server),
        },
    }
}

/// Writes `proc/self/mountinfo` and `mountstats` below `dir`: the `head` texts, then `mounts`.
/// `serial` names the temporary files (one per publication).
pub(super) fn publish(dir: &Path, serial: u64, head: (&str, &str), mounts: &[NfsLine]) {
    let (mut info, mut stats) = (head.0.to_string(), head.1.to_string());
    for m in mounts {
        let port = if m.proto == "tcp" { "" } else { ",port=20049" };
        info.push_str(&format!(
            "{} {} 0:{} / {} rw,relatime - nfs4 {} rw,vers=4.2,proto={}{port},addr={}\n",
            m.id, m.parent, m.dev, m.point, m.source, m.proto, m.addr
        ));
        stats.push_str(&format!(
            "device {} mounted on {} with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,hard,proto={}{port}\n\
\txprt:\t{} 0 0 1 0 0 121 121 0 1096 0 131 1 11\n",
            m.source, m.point, m.proto, m.proto
        ));
    }
    for (name, text) in [("mountinfo", info), ("mountstats", stats)] {
        let dir = dir.join("proc/self");
        let tmp = dir.join(format!(".{name}.{serial}"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
}
