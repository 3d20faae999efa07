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
    doc: "modprobe's configuration neither stops rpcrdma from loading (blacklist on the name requested, `install … /bin/false`) nor replaces its load with another command, for `modprobe rpcrdma` and the kernel's own request (`rpcrdma` since Linux 5.11, `xprtrdma` before); lines that only change the load warn, and so does a stopped next load while rpcrdma is loaded",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::plain_request;
    use crate::host::modules::modprobe_effect::Effect;

    fn line(n: usize) -> Origin {
        Origin {
            file: "/etc/modprobe.d/rdma.conf".into(),
            line: n,
        }
    }

    /// The ordinary node with `modprobe rpcrdma` changed by `change`.
    fn requested(change: impl FnOnce(&mut RequestExplanation), loaded: bool) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                let Some(Ok(req)) = &mut f.rpcrdma.requests else {
                    unreachable!()
                };
                change(&mut req.requests[0]);
                f.rpcrdma.loaded = loaded;
            })
            .build()
    }

    fn install_false(r: &mut RequestExplanation) {
        r.steps[0].outcome = ModuleOutcome::Replaced {
            command: "/bin/false".into(),
            kind: InstallKind::Disables,
            origin: line(2),
        };
        r.effects.push(Effect {
            origin: line(2),
            line: "install rpcrdma /bin/false".into(),
            says: "replaces the load of rpcrdma".into(),
        });
    }

    #[test]
    fn passes_a_configuration_that_leaves_rpcrdma_alone() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Pass, &["leaves `rpcrdma` alone"]);
        assert_eq!(seen(&r, "files read"), "1");
        assert!(r.remedy.is_none());
    }

    #[test]
    fn names_both_requests_when_the_kernel_asks_another_name() {
        let r = run(&HostFacts::builder()
            .with(|f| {
                let Some(Ok(req)) = &mut f.rpcrdma.requests else {
                    unreachable!()
                };
                req.requests.push(plain_request("xprtrdma"));
            })
            .build());
        says(&r, Status::Pass, &["`rpcrdma` and `xprtrdma`"]);
    }

    #[test]
    fn fails_an_install_line_that_stops_the_load() {
        let r = run(&requested(install_false, false));
        says(
            &r,
            Status::Fail,
            &[
                "stops the hooked rpcrdma",
                "`/bin/false`",
                "/etc/modprobe.d/rdma.conf:2",
            ],
        );
        assert_eq!(seen(&r, STOPPED_BY), "/etc/modprobe.d/rdma.conf:2");
        assert!(seen(&r, "/etc/modprobe.d/rdma.conf:2").contains("install rpcrdma /bin/false"));
        assert_eq!(r.fixes, vec![Fix::ModprobeConfig]);
        assert!(remedy(&r).contains("initramfs"));
    }

    #[test]
    fn a_stopped_next_load_only_warns_while_rpcrdma_is_loaded() {
        let r = run(&requested(install_false, true));
        says(
            &r,
            Status::Warn,
            &["rpcrdma is loaded", "once it is unloaded"],
        );
        assert_eq!(seen(&r, STOPPED_BY), "/etc/modprobe.d/rdma.conf:2");
    }

    #[test]
    fn fails_a_blacklist_reached_through_an_alias() {
        let r = run(&requested(
            |r| {
                r.request = "xprtrdma".into();
                r.lookup = Lookup::IndexAlias;
                r.steps[0].outcome = ModuleOutcome::Blacklisted { origin: line(1) };
            },
            false,
        ));
        says(
            &r,
            Status::Fail,
            &["`modprobe xprtrdma`", "blacklisted", "exits 0"],
        );
        assert_eq!(seen(&r, STOPPED_BY), "/etc/modprobe.d/rdma.conf:1");
    }

    #[test]
    fn warns_of_a_line_that_only_changes_the_load() {
        let r = run(&requested(
            |r| {
                r.steps[0].options.push(("max_requests=64".into(), line(4)));
                r.effects.push(Effect {
                    origin: line(4),
                    line: "options rpcrdma max_requests=64".into(),
                    says: "sets a parameter".into(),
                });
            },
            false,
        ));
        says(
            &r,
            Status::Warn,
            &["changes how rpcrdma loads, without stopping it"],
        );
        assert_eq!(
            seen(&r, "/etc/modprobe.d/rdma.conf:4"),
            "`options rpcrdma max_requests=64`: sets a parameter"
        );
        assert!(r.fixes.is_empty());
    }

    #[test]
    fn a_missing_module_is_left_to_rpcrdma_module() {
        let r = run(&requested(|r| r.lookup = Lookup::NotFound, false));
        says(&r, Status::Pass, &["leaves `rpcrdma` alone"]);
    }

    #[test]
    fn skips_or_is_unknown_without_a_configuration() {
        let r = run(&HostFacts::builder()
            .with(|f| f.rpcrdma.requests = None)
            .build());
        says(&r, Status::Skip, &["kernel release is unknown"]);
        let r = run(&HostFacts::builder()
            .with(|f| f.rpcrdma.requests = Some(Err("/etc/modprobe.d: permission denied".into())))
            .build());
        says(
            &r,
            Status::Unknown,
            &["cannot be read", "/etc/modprobe.d: permission denied"],
        );
    }
}
