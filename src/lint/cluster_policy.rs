//! The GPU Operator's `ClusterPolicy` (`nvidia.com/v1`): the settings GDS over NFS/RDMA needs,
//! as the GPU Operator's GDS documentation and field guides prescribe — the open kernel modules
//! (`driver.kernelModuleType: open`), the driver's RDMA support (`driver.rdma.enabled: true`,
//! with `useHostMofed: true` when MOFED comes from the Network Operator or the host) and the
//! GDS driver itself (`gds.enabled: true`).

use super::yaml::{bool_at, str_at, At};
use super::{Finding, Severity};

const RULE_OPEN: &str = "cluster-policy-open-modules";
const RULE_RDMA: &str = "cluster-policy-rdma";
const RULE_HOST_MOFED: &str = "cluster-policy-host-mofed";
const RULE_GDS: &str = "cluster-policy-gds";

pub fn judge(at: &At, out: &mut Vec<Finding>) {
    let name = at.name();
    let module_type = ["spec", "driver", "kernelModuleType"];
    match str_at(at.doc, &module_type) {
        Some("open") => {}
        Some(other) => out.push(at.finding(
            &module_type,
            Severity::Fail,
            RULE_OPEN,
            format!("ClusterPolicy {name}: driver.kernelModuleType is {other}; GDS needs the open GPU kernel modules (kernelModuleType: open)"),
        )),
        None if bool_at(at.doc, &["spec", "driver", "useOpenKernelModules"]) == Some(true) => {
            out.push(at.finding(
                &["spec", "driver", "useOpenKernelModules"],
                Severity::Warn,
                RULE_OPEN,
                format!("ClusterPolicy {name}: driver.useOpenKernelModules is deprecated; say driver.kernelModuleType: open"),
            ))
        }
        None => out.push(at.finding(
            &module_type,
            Severity::Fail,
            RULE_OPEN,
            format!("ClusterPolicy {name}: driver.kernelModuleType is not set; GDS needs the open GPU kernel modules (kernelModuleType: open)"),
        )),
    }
    let rdma = ["spec", "driver", "rdma", "enabled"];
    if bool_at(at.doc, &rdma) != Some(true) {
        out.push(at.finding(
            &rdma,
            Severity::Fail,
            RULE_RDMA,
            format!("ClusterPolicy {name}: driver.rdma.enabled is not true; without it the driver has no RDMA support and GDS over NFS/RDMA falls back to bounce buffers"),
        ));
    } else {
        let host_mofed = ["spec", "driver", "rdma", "useHostMofed"];
        if bool_at(at.doc, &host_mofed) != Some(true) {
            out.push(at.finding(
                &host_mofed,
                Severity::Warn,
                RULE_HOST_MOFED,
                format!("ClusterPolicy {name}: driver.rdma.useHostMofed is not true; when the Network Operator (or the host) provides MOFED, which GDS over NFS/RDMA needs for an rpcrdma with the nvfs hooks, set it to true"),
            ));
        }
    }
    let gds = ["spec", "gds", "enabled"];
    if bool_at(at.doc, &gds) != Some(true) {
        out.push(at.finding(
            &gds,
            Severity::Fail,
            RULE_GDS,
            format!("ClusterPolicy {name}: gds.enabled is not true; the operator will not load nvidia_fs"),
        ));
    }
}
