//! `mount-transport`: every `xprt:` line of the mount in mountstats is RDMA — the only proof
//! that the mount really runs over RDMA (nconnect gives one line per connection).

use super::nfs_mounts::{describe, non_rdma_mounts_of, not_nfs};
use crate::checks::check::{Check, MountSubject, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::mounts::{Mount, MountTable};
use crate::nfs::NfsSource;

pub const ID: CheckId = CheckId::new("mount-transport");

pub static CHECK: Check = Check {
    id: ID,
    doc: "after mounting: every `xprt:` line of the mount in `/proc/self/mountstats` is `rdma`",
    scope: Scope::AfterMount(run),
    default_level: Level::Enforce,
    waitable: false,
};

fn run(subject: &MountSubject) -> CheckResult {
    match *subject {
        MountSubject::Existing { mount, table, .. } => mount_transport(mount, table),
        MountSubject::Planned { .. } => CheckResult::skip(ID, "nothing is mounted yet"),
    }
}

/// Every `xprt:` line of the mount is RDMA.
pub fn mount_transport(m: &Mount, table: &MountTable) -> CheckResult {
    let id = ID;
    if !m.is_nfs() {
        return not_nfs(id, m);
    }
    let xprts = m.stats.as_ref().map(|s| s.xprts.as_slice()).unwrap_or(&[]);
    if xprts.is_empty() {
        let why = if m.stats.is_some() {
            "its mountstats record has no xprt: line"
        } else {
            "the mountstats beside the mount table read has no record for it"
        };
        return CheckResult::unknown(
            id,
            format!(
                "the transport of {} cannot be seen: {why}",
                m.info.mount_point().display()
            ),
        )
        .with("mount id", m.info.mount_id.to_string());
    }
    let lines = xprts
        .iter()
        .map(|x| x.line.replace('\t', " "))
        .collect::<Vec<_>>()
        .join(" / ");
    if xprts.iter().all(|x| x.is_rdma()) {
        return CheckResult::pass(
            id,
            if xprts.len() == 1 {
                "the mount runs over RDMA".to_string()
            } else {
                format!("all {} transports of the mount run over RDMA", xprts.len())
            },
        )
        .with("mountstats", lines);
    }
    let other: Vec<&str> = xprts
        .iter()
        .filter(|x| !x.is_rdma())
        .map(|x| x.proto())
        .collect();
    let mut r = CheckResult::fail(
        id,
        format!(
            "{} runs over {}, not RDMA: GPU I/O on it goes through CPU bounce buffers",
            m.info.mount_point().display(),
            other.join("+")
        ),
    )
    .with("mount id", m.info.mount_id.to_string())
    .with("mountstats", lines);
    let server = NfsSource::parse(m.info.source()).ok().map(|s| s.server);
    let (same, _) = match &server {
        Some(s) if m.is_nfs4() => non_rdma_mounts_of(s, table, Some(m.info.mount_id)),
        _ => (Vec::new(), Vec::new()),
    };
    for o in &same {
        let (what, seen) = describe(o);
        r = r.with(format!("same server, not RDMA: {what}"), seen);
    }
    r.fix(Fix::Mount).remedy(if same.is_empty() {
        "check that the server listens for NFS over RDMA (`cat /proc/fs/nfsd/portlist` on a Linux server shows `rdma 20049`) and that this host reaches it over an RDMA-capable interface; then mount again".to_string()
    } else {
        "an earlier NFSv4 mount of the same server gave it its transport (see transport-trap): unmount those, then mount again".to_string()
    })
}
