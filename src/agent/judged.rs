//! The node and every mount meant for GDS, judged once as each pass of the agent judges them:
//! the node judge on the node's facts (from the memo when nothing they came from changed), then
//! the mount judge on every NFS mount meant for GDS of the host's mount table. The agent and the
//! Slurm health check and prolog judge through here. Reads mountinfo and mountstats, never a
//! path on an NFS mount.

use std::path::PathBuf;

use super::mounts::{self, MountVerdict};
use crate::host::facts_memo::FactsMemo;
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::{read_init_mount_table, MountTable, MountsError};
use crate::host::{HostError, HostFacts, Root};
use crate::judge::node::{self, Ask};
use crate::nfs::ServerAddrs;
use crate::policy::intent::{read_declared, Declared};
use crate::policy::Policy;
use crate::system::System;
use crate::verdict::Judgement;

/// What one judgement of the node and its mounts found.
#[derive(Debug)]
pub struct Judged<'t> {
    pub facts: HostFacts,
    pub node: Judgement,
    pub mounts: Vec<MountVerdict<'t>>,
    /// The mount table read (`proc/1/…` for the host's, seen from a container).
    pub table_path: PathBuf,
    /// What the node declares for GDS (the helper's records, `nfs-gds` fstab lines).
    pub declared: Declared,
}

/// Why the node or its mounts could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Mounts(#[from] MountsError),
}

/// Reads and judges everything once under `policy`: the node (its facts from `memo`), then
/// the mounts of the host's table (filled into `table`, and borrowed by the result).
pub fn judge_node_and_mounts<'t>(
    root: &Root,
    system: &dyn System,
    policy: &Policy,
    probe: bool,
    memo: &mut FactsMemo,
    table: &'t mut MountTable,
) -> Result<Judged<'t>, JudgeError> {
    let facts = memo.read(root)?.clone();
    let (facts, node) = node::judge(facts, policy, Ask::new(system, probe), None);
    let table_path;
    (*table, table_path) = read_init_mount_table(root)?;
    let declared = read_declared(root)?;
    let table: &'t MountTable = table;
    let addrs = ServerAddrs::new(system);
    // The node's LOCALIO facts are the host facts' (read once); the mounts' state is read here.
    let localio = MountLocalio::with_node(root, facts.localio.clone(), table);
    let mounts = mounts::verify_meant_for_rdma(table, &declared, policy, &addrs, &localio);
    Ok(Judged {
        facts,
        node,
        mounts,
        table_path,
        declared,
    })
}
