//! `rpcrdma-module`: modprobe resolves `rpcrdma` to a module file that can be read, or it is
//! built into the kernel. A configuration `alias` that makes `rpcrdma` mean another module is
//! followed, as modprobe follows it (aliases of the configuration win over the index).

use super::rpcrdma_common::file_evidence;
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::modules::modprobe_effect::Lookup;
use crate::host::modules::Resolution;
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("rpcrdma-module");

pub static CHECK: Check = Check {
    id: ID,
    doc: "modprobe resolves `rpcrdma` (through `modules.alias` and `modules.dep`, so DKMS `updates/`, RPM `extra/` and vendor paths win where depmod says so) to a readable module file, or it is built in; an `alias` of the modprobe configuration that makes rpcrdma mean another module is followed",
    scope: Scope::Node(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let r = judge(facts);
    // A configuration `alias` redirected `modprobe rpcrdma`: say which line chose the module.
    let redirect = facts
        .rpcrdma
        .requests
        .as_ref()
        .and_then(|r| r.as_ref().ok())
        .and_then(|r| {
            let first = r.requests.first()?;
            let to = r.redirected_to()?;
            match &first.lookup {
                Lookup::ConfigAlias { lines } => Some((to.to_string(), lines.clone())),
                _ => None,
            }
        });
    match redirect {
        Some((to, lines)) => r.with(
            "modprobe.d alias",
            format!(
                "`modprobe rpcrdma` loads {to}, as {} says",
                lines
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        None => r,
    }
}

fn judge(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let rp = &facts.rpcrdma;
    let Some(resolution) = &rp.resolution else {
        return CheckResult::unknown(
            id,
            "the kernel release is unknown, so the module tree cannot be found",
        )
        .with("/proc/sys/kernel/osrelease", "absent");
    };
    match resolution {
        Resolution::BuiltIn { .. } => {
            CheckResult::pass(id, "rpcrdma is built into the kernel").with("modules.builtin", "lists rpcrdma")
        }
        Resolution::NotFound { module } => CheckResult::fail(
            id,
            format!("modprobe knows no {module} module for this kernel, so NFS over RDMA cannot work at all"),
        )
        .fix(Fix::HookedRpcrdma)
        .remedy("install the RDMA NFS client module for this kernel (DOCA-OFED's mlnx-nfsrdma built with GDS support)"),
        Resolution::NoModuleTree { dir } => {
            let r = CheckResult::unknown(
                id,
                format!("there is no modules.dep in {}, so the module modprobe would load cannot be told", dir.display()),
            );
            if rp.loaded {
                r.with("/proc/modules", "rpcrdma loaded")
            } else if !facts.modules_loadable() {
                CheckResult::unknown(
                    id,
                    format!("this kernel cannot load modules ({}): rpcrdma can only be built in, and without {}/modules.builtin that cannot be told", super::rpcrdma_common::no_modules_evidence(facts), dir.display()),
                )
            } else {
                r.remedy("install the kernel's module tree, or run `depmod -a`")
            }
        }
        Resolution::File {
            rel_path,
            path,
            exists: false,
            ..
        } => CheckResult::fail(
            id,
            format!("modules.dep names {rel_path}, but {} does not exist", path.display()),
        )
        .fix(Fix::HookedRpcrdma)
        .remedy("the module index is out of date: run `depmod -a`, or reinstall the package that owned the module"),
        Resolution::File { path, origin, .. } => match &rp.file {
            Some(Ok(f)) => file_evidence(
                CheckResult::pass(id, format!("modprobe loads {}, {}", path.display(), origin.describe())),
                f,
            ),
            Some(Err(e)) => CheckResult::fail(id, format!("the module file cannot be inspected: {e}"))
                .with("file", path.display().to_string())
                .fix(Fix::HookedRpcrdma)
                .remedy("reinstall the package that owns the file, then run `depmod -a`"),
            None => CheckResult::unknown(id, "the module file was not inspected"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder::{self as b, INBOX_RPCRDMA};
    use crate::host::modules::modprobe_config::Origin;

    fn resolving(resolution: Option<Resolution>) -> HostFacts {
        HostFacts::builder()
            .with(|f| f.rpcrdma.resolution = resolution)
            .build()
    }

    #[test]
    fn passes_the_resolved_file_and_says_where_it_came_from() {
        let r = run(&HostFacts::builder().build());
        says(
            &r,
            Status::Pass,
            &["rpcrdma.ko.zst", "the kernel's own module (kernel/)"],
        );
        assert!(seen(&r, "file").ends_with(INBOX_RPCRDMA));
        assert_eq!(seen(&r, "compression"), "zstd");
    }

    #[test]
    fn passes_a_built_in_rpcrdma() {
        let r = run(&resolving(Some(Resolution::BuiltIn {
            module: "rpcrdma".into(),
        })));
        says(&r, Status::Pass, &["built into the kernel"]);
        assert_eq!(seen(&r, "modules.builtin"), "lists rpcrdma");
    }

    #[test]
    fn is_unknown_without_a_kernel_release() {
        let r = run(&resolving(None));
        says(&r, Status::Unknown, &["kernel release is unknown"]);
        assert_eq!(seen(&r, "/proc/sys/kernel/osrelease"), "absent");
    }

    #[test]
    fn fails_when_modprobe_knows_no_rpcrdma() {
        let r = run(&resolving(Some(Resolution::NotFound {
            module: "rpcrdma".into(),
        })));
        says(
            &r,
            Status::Fail,
            &["knows no rpcrdma module", "cannot work at all"],
        );
        assert_eq!(r.fixes, vec![Fix::HookedRpcrdma]);
        assert!(remedy(&r).contains("mlnx-nfsrdma"));
    }

    #[test]
    fn fails_a_dangling_index_entry() {
        let mut res = b::resolution(INBOX_RPCRDMA);
        if let Resolution::File { exists, .. } = &mut res {
            *exists = false;
        }
        let r = run(&resolving(Some(res)));
        says(&r, Status::Fail, &["modules.dep names", "does not exist"]);
        assert!(remedy(&r).contains("depmod -a"));
    }

    #[test]
    fn fails_a_file_that_cannot_be_inspected() {
        let r = run(&HostFacts::builder()
            .with(|f| f.rpcrdma.file = Some(Err("rpcrdma.ko.zst is empty".into())))
            .build());
        says(&r, Status::Fail, &["cannot be inspected", "is empty"]);
        assert!(seen(&r, "file").ends_with(INBOX_RPCRDMA));
    }

    #[test]
    fn without_a_module_tree_it_is_unknown_and_says_why() {
        let none = || {
            Some(Resolution::NoModuleTree {
                dir: "/lib/modules/6.8.0-45-generic".into(),
            })
        };
        let r = run(&resolving(none()));
        says(
            &r,
            Status::Unknown,
            &["no modules.dep in /lib/modules/6.8.0-45-generic"],
        );
        assert!(remedy(&r).contains("depmod -a"));

        let loaded = run(&HostFacts::builder()
            .with(|f| {
                f.rpcrdma.resolution = none();
                f.rpcrdma.loaded = true;
            })
            .build());
        says(&loaded, Status::Unknown, &["no modules.dep"]);
        assert_eq!(seen(&loaded, "/proc/modules"), "rpcrdma loaded");

        let nomodule = run(&HostFacts::builder()
            .with(|f| f.rpcrdma.resolution = none())
            .loaded_modules(None)
            .build());
        says(
            &nomodule,
            Status::Unknown,
            &["cannot load modules (no /proc/modules)", "modules.builtin"],
        );
    }

    #[test]
    fn names_the_alias_line_that_redirects_the_load() {
        let origin = Origin {
            file: "/etc/modprobe.d/gds.conf".into(),
            line: 3,
        };
        let r = run(&HostFacts::builder()
            .with(|f| {
                let Some(Ok(req)) = &mut f.rpcrdma.requests else {
                    unreachable!()
                };
                req.requests[0].lookup = Lookup::ConfigAlias {
                    lines: vec![origin],
                };
                req.requests[0].targets = vec!["mlnx_rpcrdma".into()];
            })
            .build());
        says(&r, Status::Pass, &["modprobe loads"]);
        assert_eq!(
            seen(&r, "modprobe.d alias"),
            "`modprobe rpcrdma` loads mlnx_rpcrdma, as /etc/modprobe.d/gds.conf:3 says"
        );
    }
}
