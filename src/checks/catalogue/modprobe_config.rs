//! `modprobe-config`: modprobe's configuration (`modprobe.d`, `modules.softdep`, the kernel
//! command line) does not stop rpcrdma from loading nor replace its load, for `modprobe
//! rpcrdma` and for the kernel's own request on the first RDMA mount. Lines that only change
//! something about the load (parameters, soft dependencies, a redirect, a blacklist that does not
//! apply to the name requested) are reported as a warning, each with its file and line.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::modules::modprobe_config::Origin;
use crate::host::modules::modprobe_effect::{
    InstallKind, Lookup, ModuleOutcome, RequestExplanation,
};
use crate::host::HostFacts;
use crate::kmod::RPCRDMA;

pub const ID: CheckId = CheckId::new("modprobe-config");

pub static CHECK: Check = Check {
    id: ID,
    doc: "modprobe's configuration neither stops rpcrdma from loading (blacklist on the name requested, `install … /bin/false`) nor replaces its load with another command, for `modprobe rpcrdma` and the kernel's own request",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: false,
};

/// How badly one request is changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Harm {
    Changes,
    Stops,
}

/// What a doctor step reads: the `file:line` of each line that stops a load.
pub const STOPPED_BY: &str = "stopped by";

/// Why the request does not load rpcrdma from its file, if it does not, and the line that stops
/// it.
fn stopped(r: &RequestExplanation) -> Option<(String, Origin)> {
    if r.lookup == Lookup::NotFound {
        return None; // rpcrdma-module reports a missing module
    }
    for s in &r.steps {
        let target = s.role == "target";
        match &s.outcome {
            ModuleOutcome::Blacklisted { origin } => {
                return Some((format!("`{}` is blacklisted ({origin}) and reached through an alias, so modprobe loads nothing and exits 0", s.module), origin.clone()))
            }
            ModuleOutcome::Replaced { command, kind, origin } => match kind {
                InstallKind::Disables => {
                    return Some((format!("the load of {} ({}) is replaced by `{command}` ({origin}), so it never loads", s.module, s.role), origin.clone()))
                }
                InstallKind::Opaque if target => {
                    return Some((format!("the load of {} is replaced by `{command}` ({origin}); what that command loads cannot be told, so the hooked file may never be loaded", s.module), origin.clone()))
                }
                _ => {}
            },
            ModuleOutcome::Missing if target => {
                if let Lookup::ConfigAlias { lines } = &r.lookup {
                    if let Some(origin) = lines.first() {
                        return Some((format!("the configuration makes it {}, which the module index does not have", s.module), origin.clone()));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    let requests = match &rp.requests {
        None => {
            return CheckResult::skip(
                id,
                "the kernel release is unknown, so modprobe's configuration cannot be applied",
            )
        }
        Some(Err(e)) => {
            return CheckResult::unknown(
                id,
                format!("modprobe's configuration cannot be read: {e}"),
            )
        }
        Some(Ok(r)) => r,
    };
    let mut harm: Option<Harm> = None;
    let mut reasons = Vec::new();
    let mut evidence = Vec::new();
    let mut stopping: Vec<Origin> = Vec::new();
    for r in &requests.requests {
        if let Some((why, origin)) = stopped(r) {
            harm = Some(Harm::Stops);
            reasons.push(format!("`modprobe {}`: {why}", r.request));
            if !stopping.contains(&origin) {
                stopping.push(origin);
            }
        } else if r.config_changes_it() {
            harm = harm.max(Some(Harm::Changes));
        }
        for e in &r.effects {
            let item = (e.origin.to_string(), format!("`{}`: {}", e.line, e.says));
            if !evidence.contains(&item) {
                evidence.push(item);
            }
        }
    }
    let requested = requests
        .requests
        .iter()
        .map(|r| format!("`{}`", r.request))
        .collect::<Vec<_>>()
        .join(" and ");
    let mut result = match harm {
        None => CheckResult::pass(
            id,
            format!("modprobe's configuration leaves {requested} alone"),
        )
        .with("files read", requests.files.len().to_string()),
        Some(Harm::Changes) => {
            let what = match requests.redirected_to() {
                Some(m) => format!("makes `modprobe rpcrdma` load {m} (rpcrdma-module follows it)"),
                None => "changes how rpcrdma loads, without stopping it".to_string(),
            };
            CheckResult::warn(id, format!("modprobe's configuration {what}"))
        }
        Some(Harm::Stops) if rp.loaded => CheckResult::warn(
            id,
            format!("rpcrdma is loaded, so the mounts use it; but once it is unloaded or after a reboot, modprobe's configuration stops it from loading: {}", reasons.join("; ")),
        )
        .fix(Fix::ModprobeConfig),
        Some(Harm::Stops) => CheckResult::fail(
            id,
            format!("modprobe's configuration stops the hooked rpcrdma from loading, so the first RDMA mount fails or never gets GDS: {}", reasons.join("; ")),
        )
        .fix(Fix::ModprobeConfig),
    };
    for (what, seen) in evidence {
        result = result.with(what, seen);
    }
    for origin in &stopping {
        result = result
            .with(STOPPED_BY, origin.to_string())
            .at(origin.clone());
    }
    if harm == Some(Harm::Stops) {
        result = result.remedy("remove or comment out the configuration lines named above, then run the initramfs update so early boot sees the same configuration");
    }
    if requests.redirected_to().is_some_and(|m| m != RPCRDMA) {
        result = result.with(
            "resolution",
            "rpcrdma-module judges the module the alias names",
        );
    }
    result
}
