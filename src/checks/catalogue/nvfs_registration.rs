//! `nvfs-registration`: the live probe — with `/dev/nvidia-fs0` open, nvidia-fs lists `rpcrdma`
//! among the drivers that registered their hooks. Only when asked for (`--probe`, policy
//! `probe = true`), since it makes nvidia-fs take a reference on rpcrdma for a moment.

use super::{rpcrdma_hook_export, rpcrdma_hooks};
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level, Status};
use crate::host::platform::nvfs_probe::{ProbeOutcome, GPL_REFUSAL_LINE};
use crate::host::HostFacts;

pub const ID: CheckId = CheckId::new("nvfs-registration");

pub static CHECK: Check = Check {
    id: ID,
    doc: "`check --probe` / `doctor --probe` only: with `/dev/nvidia-fs0` open, `/proc/driver/nvidia-fs/modules` lists `rpcrdma`",
    scope: Scope::Probe(run),
    default_level: Level::Enforce,
    waitable: true,
};

fn run(facts: &HostFacts) -> CheckResult {
    let Some(p) = &facts.probe else {
        return CheckResult::skip(ID, "the live probe was not asked for");
    };
    // Without nvidia_fs there is no device to open: `nvidia-fs-loaded` says what to do.
    if !facts.nvidia_fs.loaded {
        return CheckResult::skip(
            ID,
            "nvidia_fs is not loaded, so there is no device to probe (see nvidia-fs-loaded)",
        );
    }
    let r = of_outcome(&p.outcome, p.kernel_log.as_deref());
    let status_of = |c: &Check| c.run_on_node(facts).map(|r| r.status);
    let hooks_without_proven_export = status_of(&rpcrdma_hooks::CHECK) == Some(Status::Pass)
        && status_of(&rpcrdma_hook_export::CHECK) != Some(Status::Pass);
    if r.status == Status::Fail && hooks_without_proven_export {
        r.fix(Fix::GplExport)
    } else {
        r
    }
}

/// Judges the probe, using kernel log lines (if readable) to explain a failure.
pub fn of_outcome(outcome: &ProbeOutcome, kernel_log: Option<&str>) -> CheckResult {
    let id = ID;
    let refusal = kernel_log.and_then(|log| {
        log.lines()
            .rev()
            .find(|l| l.contains(GPL_REFUSAL_LINE))
            .map(|l| l.trim().to_string())
    });
    let with_log = |r: CheckResult| match &refusal {
        Some(l) => r.with("kernel log", l.clone()),
        None => r,
    };
    match outcome {
        ProbeOutcome::CannotOpen(e) => with_log(
            CheckResult::fail(id, format!("cannot open the nvidia-fs device: {e}")).remedy(
                "load nvidia_fs and make sure /dev/nvidia-fs0 exists (see nvidia-fs-loaded)",
            ),
        ),
        ProbeOutcome::CannotRead(e) => with_log(CheckResult::unknown(
            id,
            format!("opened the nvidia-fs device but could not read the registered drivers: {e}"),
        )),
        ProbeOutcome::Registered { modules, close_ms } => {
            let seen = if modules.is_empty() {
                "(none)".to_string()
            } else {
                modules.join(", ")
            };
            if modules.iter().any(|m| m == "rpcrdma") {
                CheckResult::pass(id, "rpcrdma registered its nvfs hooks with nvidia-fs")
                    .with("/proc/driver/nvidia-fs/modules", seen)
                    .with("close took", format!("{close_ms} ms"))
            } else if refusal.is_some() {
                with_log(
                    CheckResult::fail(id, "rpcrdma did not register: the kernel refused nvidia-fs's __symbol_get of its plain-exported hook")
                        .with("/proc/driver/nvidia-fs/modules", seen)
                        .remedy("install an rpcrdma that exports the hooks with EXPORT_SYMBOL_GPL (MLNX_OFED / DOCA-OFED 24.04 or later)"),
                )
            } else {
                CheckResult::fail(id, "rpcrdma did not register with nvidia-fs while the device was open: GDS over NFS falls back to bounce buffers")
                    .with("/proc/driver/nvidia-fs/modules", seen)
                    .remedy("see the rpcrdma-* checks: the loaded rpcrdma lacks usable hooks, or it is not loaded")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{says, seen};
    use crate::checks::Status;
    use crate::host::facts_builder as b;
    use crate::host::io::tree_system::TreeSystem;
    use crate::host::platform::nvfs_probe::probe;
    use crate::host::Root;
    use crate::kmod::Export;
    use crate::system::Live;

    fn tree(dir: &std::path::Path) -> TreeSystem {
        TreeSystem::new(Root::new(dir), Live::new(true))
    }

    #[test]
    fn registration_is_seen_in_the_modules_list() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/driver/nvidia-fs")).unwrap();
        std::fs::write(dir.path().join("dev/nvidia-fs0"), "").unwrap();
        std::fs::write(
            dir.path().join("proc/driver/nvidia-fs/modules"),
            "wekafsio: 1\nrpcrdma: (null)\n",
        )
        .unwrap();
        let out = probe(&tree(dir.path()));
        let r = of_outcome(&out, None);
        assert_eq!(r.status, Status::Pass, "{r:?}");
    }

    #[test]
    fn gpl_refusal_is_explained() {
        let out = ProbeOutcome::Registered {
            modules: vec!["wekafsio".into()],
            close_ms: 0,
        };
        let log = "[  12.3] nvidia_fs: loaded\n[  99.1] failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops.\n";
        let r = of_outcome(&out, Some(log));
        assert_eq!(r.status, Status::Fail);
        assert!(r.summary.contains("plain-exported"), "{}", r.summary);
        assert!(r.evidence.iter().any(|e| e.what == "kernel log"));
    }

    fn probed(modules: &[&str], rpcrdma: crate::host::facts::RpcrdmaFacts) -> HostFacts {
        let outcome = ProbeOutcome::Registered {
            modules: modules.iter().map(|m| m.to_string()).collect(),
            close_ms: 3,
        };
        HostFacts::builder()
            .rpcrdma(rpcrdma)
            .with(|f| f.nvidia_fs.loaded = true)
            .probe(Some(crate::host::facts::ProbeRun {
                outcome,
                kernel_log: None,
            }))
            .build()
    }

    #[test]
    fn skips_unless_the_probe_was_asked_for() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["not asked for"]);
    }

    #[test]
    fn skips_with_the_reason_without_nvidia_fs() {
        let rp = b::rpcrdma(b::DKMS_RPCRDMA, true, Export::Gpl, true);
        let mut facts = probed(&["rpcrdma"], rp);
        facts.nvidia_fs.loaded = false;
        says(&run(&facts), Status::Skip, &["nvidia_fs is not loaded"]);
    }

    #[test]
    fn passes_a_registered_rpcrdma_through_the_facts() {
        let rp = b::rpcrdma(b::DKMS_RPCRDMA, true, Export::Gpl, true);
        let r = run(&probed(&["rpcrdma"], rp));
        says(&r, Status::Pass, &["rpcrdma registered"]);
        assert_eq!(seen(&r, "/proc/driver/nvidia-fs/modules"), "rpcrdma");
        assert_eq!(seen(&r, "close took"), "3 ms");
    }

    #[test]
    fn a_refusal_with_hooks_but_no_proven_export_plans_the_gpl_fix() {
        let plain = b::rpcrdma(b::DKMS_RPCRDMA, true, Export::Plain, true);
        let r = run(&probed(&[], plain));
        says(&r, Status::Fail, &["did not register"]);
        assert_eq!(seen(&r, "/proc/driver/nvidia-fs/modules"), "(none)");
        assert_eq!(r.fixes, vec![Fix::GplExport]);
        // Without hooks the export is not the question.
        let r = run(&probed(
            &[],
            b::rpcrdma(b::INBOX_RPCRDMA, false, Export::Gpl, true),
        ));
        says(&r, Status::Fail, &["did not register"]);
        assert!(r.fixes.is_empty(), "{r:#?}");
    }

    #[test]
    fn an_unreadable_list_is_unknown() {
        let r = of_outcome(&ProbeOutcome::CannotRead("EIO".into()), None);
        says(
            &r,
            Status::Unknown,
            &["could not read the registered drivers: EIO"],
        );
    }

    #[test]
    fn missing_device_fails() {
        let dir = tempfile::tempdir().unwrap();
        let r = of_outcome(&probe(&tree(dir.path())), None);
        assert_eq!(r.status, Status::Fail);
    }
}
