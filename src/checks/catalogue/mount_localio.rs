//! `mount-localio`: NFS LOCALIO cannot bypass RPC for this mount. A mount that LOCALIO carries
//! reads, writes and commits through the local nfsd's files, never through rpcrdma: its
//! mountstats still say `xprt: rdma`, but nothing is GPU-direct.
//!
//! The kernel's own word first: `/sys/fs/nfs/<major:minor>/localio` (Linux 6.16+, see
//! [`MountLocalio`]). Else the rule: a kernel that can do LOCALIO (built with
//! `CONFIG_NFS_LOCALIO`, `localio_enabled` not `N`) and a server address that is this host's,
//! fails; an nfsd running on this host in some network namespace, whose addresses cannot be
//! read, leaves it unknown; a kernel without LOCALIO passes. Missing evidence is unknown, with
//! the evidence named. The node check `localio` says the same of the node as a whole.

use crate::checks::check::{Check, Detail, MountSubject, Scope};
use crate::checks::{CheckId, CheckResult, Level};
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::Mount;

pub const ID: CheckId = CheckId::new("mount-localio");

pub static CHECK: Check = Check {
    id: ID,
    doc: "after mounting: NFS LOCALIO (`CONFIG_NFS_LOCALIO`) cannot carry the mount past rpcrdma: the kernel's `/sys/fs/nfs/<major:minor>/localio` says 0 (Linux 6.16+), else the kernel has no LOCALIO, has it turned off, or the server is not this host and no nfsd runs here",
    scope: Scope::AfterMount(run),
    default_level: Level::Enforce,
    waitable: false,
};

/// What to do about a mount LOCALIO carries.
pub const REMEDY: &str = "mount the GDS data from an nfsd on another host (or by an address that is not this host's), or turn LOCALIO off for the NFS client (`echo N > /sys/module/nfs/parameters/localio_enabled` for new mounts, `options nfs localio_enabled=N` in /etc/modprobe.d to keep it), then mount again: a LOCALIO mount is never GPU-direct";

fn run(subject: &MountSubject, detail: Detail) -> CheckResult {
    match *subject {
        MountSubject::Existing { mount, localio, .. } => mount_localio(mount, localio, detail),
        MountSubject::Planned { .. } => CheckResult::skip(ID, "nothing is mounted yet"),
    }
}

pub fn mount_localio(m: &Mount, localio: &MountLocalio, detail: Detail) -> CheckResult {
    let id = ID;
    if !m.is_nfs() {
        return CheckResult::skip(id, "not an NFS mount: no LOCALIO");
    }
    let mp = m.info.mount_point_shown();
    if let Some((on, file)) = localio.kernel_state(m) {
        return if on {
            CheckResult::fail(
                id,
                format!("{mp}: NFS LOCALIO carries this mount (the kernel says so): its reads and writes bypass RPC and rpcrdma, so nothing on it is GPU-direct whatever `xprt:` says"),
            )
            .with(file, "1")
            .remedy(REMEDY)
        } else {
            detail.pass(id, || {
                CheckResult::pass(
                    id,
                    format!("{mp}: the kernel says NFS LOCALIO does not carry this mount"),
                )
                .with(file, "0")
            })
        };
    }
    let node = &localio.node;
    let built_by = node.config.clone().unwrap_or_default();
    match node.built {
        None => {
            return CheckResult::unknown(
                id,
                format!("{mp}: whether the kernel has NFS LOCALIO is unknown: no kernel configuration (/boot/config-<release>, /proc/config.gz) and no nfs module parameters (/sys/module/nfs/parameters) to read, and no /sys/fs/nfs/<major:minor>/localio (Linux 6.16+)"),
            )
        }
        Some(false) => {
            return detail.pass(id, || {
                CheckResult::pass(
                    id,
                    format!("{mp}: the kernel has no NFS LOCALIO ({})", node.why_not_built()),
                )
                    .with("built", built_by)
            })
        }
        Some(true) if !node.possible() => {
            return detail.pass(id, || {
                CheckResult::pass(
                    id,
                    format!("{mp}: the kernel has NFS LOCALIO, turned off (nfs.localio_enabled=N)"),
                )
                .with("built", built_by)
            })
        }
        Some(true) => {}
    }
    let Some(addr) = m.addr() else {
        return CheckResult::unknown(
            id,
            format!("{mp}: NFS LOCALIO is on and the mount shows no server address (`addr=`) to tell whether its server is this host"),
        )
        .with("built", built_by);
    };
    if node.is_local(addr) {
        return CheckResult::fail(
            id,
            format!("{mp}: NFS LOCALIO is on and the server {addr} is this host: the mount bypasses RPC and rpcrdma, so nothing on it is GPU-direct whatever `xprt:` says"),
        )
        .with("built", built_by)
        .with("server", addr.to_string())
        .remedy(REMEDY);
    }
    if let Some(file) = node.unread_addresses_of(addr) {
        return CheckResult::unknown(
            id,
            format!("{mp}: NFS LOCALIO is on and whether the server {addr} is this host is unknown: {file} could not be read"),
        )
        .with("built", built_by)
        .remedy(REMEDY);
    }
    if let Some(nfsd) = &node.nfsd {
        return CheckResult::unknown(
            id,
            format!("{mp}: NFS LOCALIO is on and an nfsd runs on this host: if {addr} is an address of its network namespace (a container's), the mount bypasses RPC and rpcrdma; other namespaces' addresses cannot be read and this kernel shows no /sys/fs/nfs/<major:minor>/localio (Linux 6.16+)"),
        )
        .with("built", built_by)
        .with("nfsd", nfsd.clone())
        .remedy(REMEDY);
    }
    if !node.processes_seen {
        return CheckResult::unknown(
            id,
            format!("{mp}: NFS LOCALIO is on and whether an nfsd runs on this host is unknown: no process could be looked at in /proc"),
        )
        .with("built", built_by);
    }
    detail.pass(id, || {
        CheckResult::pass(
            id,
            format!("{mp}: NFS LOCALIO is on, but the server {addr} is not this host and no nfsd runs here"),
        )
        .with("built", built_by)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::says;
    use crate::checks::Status;
    use crate::host::modules::localio::Localio;
    use crate::host::Root;
    use crate::testkit::table;

    const INFO: &str = "\
1 0 254:0 / / rw - ext4 /dev/vda rw
40 1 0:50 / /mnt/gds rw - nfs4 10.0.2.15:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.15
41 1 0:51 / /mnt/far rw - nfs4 10.0.2.20:/fast rw,vers=4.2,proto=rdma,port=20049,addr=10.0.2.20
42 1 0:52 / /mnt/six rw - nfs4 [fd00::20]:/fast rw,vers=4.2,proto=rdma6,port=20049,addr=fd00::20
";

    fn on() -> Localio {
        Localio {
            built: Some(true),
            config: Some("/boot/config-6.12.30-amd64".into()),
            processes_seen: true,
            addresses: vec!["10.0.2.15".parse().unwrap()],
            address_files: vec!["/proc/net/fib_trie"],
            ..Localio::default()
        }
    }

    fn judged(node: Localio, id: u32) -> CheckResult {
        let t = table(INFO, "");
        let empty = tempfile::tempdir().unwrap();
        let l = MountLocalio::with_node(&Root::new(empty.path()), node, &t);
        mount_localio(t.by_id(id).unwrap(), &l, Detail::Full)
    }

    #[test]
    fn a_local_server_fails_and_a_remote_one_passes_where_localio_is_on() {
        let r = judged(on(), 40);
        says(
            &r,
            Status::Fail,
            &["/mnt/gds", "10.0.2.15 is this host", "LOCALIO"],
        );
        assert!(r.remedy.as_deref().unwrap().contains("localio_enabled"));
        says(
            &judged(on(), 41),
            Status::Pass,
            &["not this host", "no nfsd"],
        );
    }

    #[test]
    fn an_nfsd_elsewhere_or_unread_evidence_is_unknown_never_pass() {
        let mut nfsd = on();
        nfsd.nfsd = Some("/proc/4242/comm: nfsd (a kernel thread)".into());
        says(
            &judged(nfsd, 41),
            Status::Unknown,
            &["an nfsd runs on this host"],
        );
        // IPv6 addresses were not read.
        says(&judged(on(), 42), Status::Unknown, &["/proc/net/if_inet6"]);
        let mut blind = on();
        blind.processes_seen = false;
        says(&judged(blind, 41), Status::Unknown, &["no process"]);
        says(
            &judged(Localio::default(), 41),
            Status::Unknown,
            &["/sys/module/nfs/parameters"],
        );
    }

    #[test]
    fn without_localio_or_with_it_turned_off_the_mount_passes() {
        let mut off = on();
        off.enabled_param = Some(false);
        says(&judged(off, 40), Status::Pass, &["turned off"]);
        says(
            &judged(MountLocalio::without_localio().node, 40),
            Status::Pass,
            &["no NFS LOCALIO"],
        );
    }

    #[test]
    fn the_kernels_own_word_decides_before_the_rule() {
        let t = table(INFO, "");
        let dir = tempfile::tempdir().unwrap();
        for (dev, v) in [("0:50", "0"), ("0:51", "1")] {
            let d = dir.path().join("sys/fs/nfs").join(dev);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("localio"), format!("{v}\n")).unwrap();
        }
        let l = MountLocalio::with_node(&Root::new(dir.path()), on(), &t);
        // The local address, but the kernel says LOCALIO does not carry it.
        let r = mount_localio(t.by_id(40).unwrap(), &l, Detail::Full);
        says(&r, Status::Pass, &["the kernel says"]);
        let r = mount_localio(t.by_id(41).unwrap(), &l, Detail::Full);
        says(&r, Status::Fail, &["the kernel says so"]);
        assert_eq!(r.evidence[0].what, "/sys/fs/nfs/0:51/localio");
    }
}
