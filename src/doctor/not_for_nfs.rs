//! Doctor's "what does not matter for kernel NFS": the things GDS guides tell users to install,
//! set or read as proof, which for NFS over RDMA (nvidia-fs and rpcrdma's hooks) neither help nor
//! prove anything — said only where the node has them. `libcufile_rdma` is said by doctor itself.

use super::finding::{finding, Finding};
use crate::host::stack_facts::StackFacts;
use crate::host::HostFacts;

const TOPIC: &str = "not-for-nfs";

pub fn findings(facts: &HostFacts, found: &StackFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let loaded = |name: &str| {
        facts
            .loaded_modules
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m.name == name))
    };
    if loaded("nvidia_peermem") {
        out.push(finding(TOPIC, "nvidia_peermem is loaded: it lets RDMA verbs in user space (MPI, NCCL) reach GPU memory. Kernel NFS over RDMA reaches it through nvidia-fs and rpcrdma's hooks instead, so nvidia_peermem neither helps nor is needed for GDS over NFS."));
    }
    if let Some(path) = &found.gdscheck {
        out.push(finding(TOPIC, format!("{path}: its user-space RDMA lines (`userspace RDMA`, libcufile_rdma, `rdma_dev_addr_list`) are about cuFile's own RDMA, which kernel NFS never uses, and its `NFS : Supported` says only that libcufile would try; whether rpcrdma registered its hooks is `nfs-gds check --probe`.")));
    }
    if let Some(path) = &found.gdsio {
        out.push(finding(TOPIC, format!("{path}: `XferType: GPUD` in its output is the mode asked for (`-x 0`), not the path the bytes took; run `nfs-gds watch DIR` while it reads to see whether nvidia-fs moved them.")));
    }
    if let Some(c) = &facts.cufile {
        if !c.nfs_irrelevant.is_empty() {
            out.push(finding(TOPIC, format!("{}: {} set, but P2PDMA is a path for NVMe only (GDS 1.13 and later); NFS over RDMA has none, so for NFS mounts it changes nothing.", c.path, c.nfs_irrelevant.join(", "))));
        }
    }
    if found.cuobj_json {
        out.push(finding(TOPIC, "/etc/cuobj.json is cuObject's configuration (object storage, GDS 1.20 and later); cuFile's NFS reads take theirs from cufile.json only."));
    }
    out
}
