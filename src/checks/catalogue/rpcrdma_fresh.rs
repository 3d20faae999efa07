//! `rpcrdma-fresh`: the loaded rpcrdma is the build on disk (same GNU build-id, else the same
//! srcversion); a rebuilt module still waiting for a reload or reboot fails it.

use crate::checks::registry::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::facts::RPCRDMA;
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("rpcrdma-fresh");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the loaded rpcrdma is the build on disk: same GNU build-id, else same srcversion",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    if rp.is_builtin() {
        return CheckResult::skip(id, "rpcrdma is built in");
    }
    if !rp.loaded {
        return CheckResult::skip(id, format!("{RPCRDMA} is not loaded"));
    }
    let Some(f) = rp.inspected() else {
        return CheckResult::skip(id, "no module file to compare with (see rpcrdma-module)");
    };
    let stale = |what: &str, loaded: &str, disk: &str| {
        CheckResult::fail(
            id,
            format!("the loaded rpcrdma is a different build from {} ({what} differs): a rebuilt module is waiting for a reload or reboot", f.path.display()),
        )
        .with(format!("loaded {what}"), loaded.to_string())
        .with(format!("on-disk {what}"), disk.to_string())
        .fix(Fix::ReloadRpcrdma)
        .remedy("reload rpcrdma when no NFS/RDMA mount or nfsd RDMA listener uses it (`modprobe -r rpcrdma && modprobe rpcrdma`), otherwise reboot")
    };
    if let (Some(l), Some(d)) = (&rp.sys.build_id, &f.build_id) {
        return if l == d {
            CheckResult::pass(
                id,
                "the loaded rpcrdma is the build on disk (same GNU build-id)",
            )
            .with("build-id", l.clone())
        } else {
            stale("build-id", l, d)
        };
    }
    if let (Some(l), Some(d)) = (&rp.sys.srcversion, &f.modinfo.srcversion) {
        return if l == d {
            CheckResult::pass(id, "the loaded rpcrdma has the same srcversion as the file on disk (no build-id to compare, so a rebuild of the same sources would not show)")
                .with("srcversion", l.clone())
        } else {
            stale("srcversion", l, d)
        };
    }
    CheckResult::warn(id, "cannot tell whether the loaded rpcrdma is the build on disk: neither a build-id nor a srcversion exists on both sides")
        .with("loaded", format!("build-id {}, srcversion {}", rp.sys.build_id.as_deref().unwrap_or("none"), rp.sys.srcversion.as_deref().unwrap_or("none")))
        .with("on disk", format!("build-id {}, srcversion {}", f.build_id.as_deref().unwrap_or("none"), f.modinfo.srcversion.as_deref().unwrap_or("none")))
}
