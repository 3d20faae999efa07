//! What the mount checks share: finding the NFSv4 mounts of a server that do not run over
//! RDMA, and how a mount is named in evidence. Not a check itself.

use crate::checks::{CheckId, CheckResult};
use crate::host::mounts::{Mount, MountTable};
use crate::nfs::{Sameness, ServerHost};

pub(super) fn describe(m: &Mount) -> (String, String) {
    (
        format!("{} on {}", m.info.source(), m.info.mount_point_shown()),
        format!(
            "NFSv4 over {} (mount id {})",
            m.transports().join("+"),
            m.info.mount_id
        ),
    )
}

/// NFSv4 mounts of other transports than RDMA, split by whether they are known to be of
/// `server` or cannot be told apart from it without DNS.
pub(super) fn non_rdma_mounts_of<'a>(
    server: &ServerHost,
    table: &'a MountTable,
    exclude: Option<u32>,
) -> (Vec<&'a Mount>, Vec<&'a Mount>) {
    let mut same = Vec::new();
    let mut undecided = Vec::new();
    for m in &table.mounts {
        if Some(m.info.mount_id) == exclude || !m.is_nfs4() || m.runs_over_rdma() != Some(false) {
            continue;
        }
        let Some((theirs, addr)) = m.server() else {
            continue;
        };
        match server.sameness(&theirs, addr) {
            Sameness::Same => same.push(m),
            Sameness::Undecidable => undecided.push(m),
            Sameness::Different => {}
        }
    }
    (same, undecided)
}

pub(super) fn not_nfs(id: CheckId, m: &Mount) -> CheckResult {
    CheckResult::fail(
        id,
        format!(
            "{} is a {} mount, not NFS",
            m.info.mount_point_shown(),
            m.info.fstype()
        ),
    )
    .with("source", m.info.source().to_string())
}
