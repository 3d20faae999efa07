//! The Network Operator's `NicClusterPolicy` (`mellanox.com/v1alpha1`): when it installs the
//! MOFED driver container (`spec.ofedDriver`), NFS over RDMA needs its switch
//! `ENABLE_NFSRDMA=true`, or the node keeps the inbox rpcrdma, which has no nvfs hooks (and
//! cannot be loaded next to MOFED's `ib_core` anyway).

use super::yaml::{node_at, scalar_text, str_at, At};
use super::{Finding, Severity};

const RULE: &str = "network-operator-nfsrdma";

pub fn judge(at: &At, out: &mut Vec<Finding>) {
    let name = at.name();
    let ofed = ["spec", "ofedDriver"];
    if node_at(at.doc, &ofed).is_none() {
        out.push(at.finding(
            &["spec"],
            Severity::Note,
            RULE,
            format!("NicClusterPolicy {name}: no ofedDriver, so the Network Operator installs no MOFED; the hosts must provide an rpcrdma with the nvfs hooks themselves"),
        ));
        return;
    }
    let env = node_at(at.doc, &["spec", "ofedDriver", "env"]).and_then(|n| n.data.as_vec());
    let setting = env
        .into_iter()
        .flatten()
        .find(|e| str_at(e, &["name"]) == Some("ENABLE_NFSRDMA"));
    match setting {
        Some(e) => {
            let value = node_at(e, &["value"]).and_then(scalar_text);
            if value.as_deref() != Some("true") {
                out.push(super::Finding {
                    file: at.file.to_string(),
                    line: e.span.start.line(),
                    severity: Severity::Fail,
                    rule: RULE,
                    message: format!(
                        "NicClusterPolicy {name}: ENABLE_NFSRDMA is {}; the MOFED container builds and loads its rpcrdma (with the nvfs hooks) only with \"true\"",
                        value.as_deref().unwrap_or("(no value)")
                    ),
                });
            }
        }
        None => out.push(at.finding(
            &["spec", "ofedDriver", "env"],
            Severity::Fail,
            RULE,
            format!("NicClusterPolicy {name}: ofedDriver.env does not set ENABLE_NFSRDMA=\"true\"; without it the MOFED container does not provide NFS over RDMA, and the inbox rpcrdma cannot load against MOFED's ib_core"),
        )),
    }
}
