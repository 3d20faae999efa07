//! NVIDIA's driver containers on a Kubernetes node: the GPU Operator loads nvidia_fs from its
//! nvidia-fs container, and the Network Operator's DOCA driver container loads mlnx-nfsrdma.
//! Such a node is fixed through the cluster's policies, not with packages on the host.

use crate::doctor::stack::{Ofed, Stack};
use crate::doctor::step::Step;

/// The GPU Operator's markers are present, or the node runs a kubelet.
pub fn manages(s: &Stack) -> bool {
    s.gpu_operator || s.kubernetes
}

/// The GPU Operator, in words, when its markers are present.
pub fn describe(s: &Stack) -> Option<String> {
    s.gpu_operator.then(|| {
        format!(
            "GPU Operator node; validations present: {}. Note the operator's nvidia-fs validation only runs `lsmod | grep nvidia_fs` and never checks that rpcrdma registered.",
            if s.operator_validations.is_empty() {
                "none".to_string()
            } else {
                s.operator_validations.join(", ")
            }
        )
    })
}

/// nvidia_fs is not loaded: switch GDS on in the ClusterPolicy.
pub fn enable_gds_step(s: &Stack) -> Step {
    Step::manual(
        "Enable GDS in the GPU Operator",
        "nvidia_fs is not loaded and this node is managed by Kubernetes: the GPU Operator loads it from its nvidia-fs container only when `gds.enabled` is set",
        vec![
            "kubectl patch clusterpolicies.nvidia.com/cluster-policy --type merge -p '{\"spec\":{\"gds\":{\"enabled\":true},\"driver\":{\"kernelModuleType\":\"open\",\"rdma\":{\"enabled\":true}}}}'".into(),
            "# or apply this ClusterPolicy fragment:".into(),
            cluster_policy_yaml(!matches!(s.ofed, Ofed::None)),
        ],
    )
}

/// The ClusterPolicy fragment that turns GDS on with the GPU Operator.
pub fn cluster_policy_yaml(host_mofed: bool) -> String {
    [
        "apiVersion: nvidia.com/v1",
        "kind: ClusterPolicy",
        "metadata:",
        "  name: cluster-policy",
        "spec:",
        "  driver:",
        "    kernelModuleType: open      # nvidia-fs >= 2.17.5 needs the open GPU kernel modules",
        "    rdma:",
        "      enabled: true",
        &format!(
            "      useHostMofed: {host_mofed}{}",
            "   # true when DOCA-OFED/MLNX_OFED is installed on the host"
        ),
        "  gds:",
        "    enabled: true               # runs the nvidia-fs container that loads nvidia_fs",
        "",
    ]
    .join("\n")
}

/// On a Kubernetes node whose rpcrdma lacks the hooks: the DOCA driver container loads
/// mlnx-nfsrdma only when asked to.
pub fn nfsrdma_step(s: &Stack) -> Option<Step> {
    s.kubernetes.then(|| {
        Step::manual(
            "Let the Network Operator's DOCA driver load NFS-RDMA",
            "the DOCA driver container skips mlnx-nfsrdma unless ENABLE_NFSRDMA is set",
            vec!["set `ENABLE_NFSRDMA=true` in NicClusterPolicy spec.ofedDriver.env".into()],
        )
    })
}
