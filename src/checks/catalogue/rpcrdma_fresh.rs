//! `rpcrdma-fresh`: a loaded rpcrdma without the hooks is not an older build of a hooked file on
//! disk (a rebuild still waiting for a reload or reboot). The builds are compared by GNU build-id,
//! else srcversion. A different build that carries the hooks is not stale: the loaded module
//! decides the mount (`rpcrdma-loaded`), and the file is judged as the next load
//! (`rpcrdma-next-load`); so is one whose file lacks the hooks too, where a reload would not help.

use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::HostFacts;
use crate::kmod::RPCRDMA;
use crate::kmod::RPCRDMA_HOOKS;

pub const ID: CheckId = CheckId::new("rpcrdma-fresh");

pub static CHECK: Check = Check {
    id: ID,
    doc: "no rebuild waits for a reload: a loaded rpcrdma without hooks is the build on disk (same GNU build-id, else same srcversion), not an older one of a file with hooks",
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
    let loaded_hooked = rp.loaded_hooks().len() == RPCRDMA_HOOKS.len();
    let file_hooked = f.has_symtab && f.symbols.iter().all(|s| s.defined);
    let stale = |what: &str, loaded: &str, disk: &str| {
        if loaded_hooked || !file_hooked {
            let why = if loaded_hooked {
                "the loaded build carries the hooks and decides the mount (rpcrdma-loaded)"
            } else {
                "the file has no hooks either, so a reload would not help (rpcrdma-loaded)"
            };
            return CheckResult::skip(
                id,
                format!("the loaded rpcrdma is a different build from {} ({what} differs), but not a stale one: {why}; the file is judged as the next load (rpcrdma-next-load)", f.path.display()),
            )
            .with(format!("loaded {what}"), loaded.to_string())
            .with(format!("on-disk {what}"), disk.to_string());
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::facts::RpcrdmaFacts;
    use crate::host::facts_builder::{self as b, DKMS_RPCRDMA, INBOX_RPCRDMA};
    use crate::host::modules::loaded_build::LoadedBuild;
    use crate::kmod::Export;

    /// A loaded rpcrdma without hooks in kallsyms, of build-id `loaded`, beside a file of
    /// build-id `on_disk` that has the hooks or not.
    fn loaded(loaded: Option<&str>, on_disk: Option<&str>, file_hooked: bool) -> RpcrdmaFacts {
        let mut rp = b::rpcrdma(DKMS_RPCRDMA, file_hooked, Export::Gpl, true);
        rp.kallsyms = Some(Ok(Vec::new()));
        rp.sys.build_id = loaded.map(str::to_string);
        if let Some(Ok(f)) = &mut rp.file {
            f.build_id = on_disk.map(str::to_string);
        }
        rp.loaded_build = Some(LoadedBuild::OtherBuild);
        rp
    }

    fn judge(rp: RpcrdmaFacts) -> CheckResult {
        run(&HostFacts::builder().rpcrdma(rp).build())
    }

    #[test]
    fn passes_the_build_on_disk() {
        let r = judge(loaded(Some("aa11"), Some("aa11"), true));
        says(&r, Status::Pass, &["same GNU build-id"]);
        assert_eq!(seen(&r, "build-id"), "aa11");
    }

    #[test]
    fn fails_an_older_build_of_a_hooked_file() {
        let r = judge(loaded(Some("aa11"), Some("bb22"), true));
        says(
            &r,
            Status::Fail,
            &[
                "different build",
                "build-id differs",
                "waiting for a reload",
            ],
        );
        assert_eq!(seen(&r, "loaded build-id"), "aa11");
        assert_eq!(seen(&r, "on-disk build-id"), "bb22");
        assert_eq!(r.fixes, vec![Fix::ReloadRpcrdma]);
        assert!(remedy(&r).contains("modprobe -r rpcrdma"));
    }

    #[test]
    fn compares_srcversions_without_build_ids() {
        let mut rp = loaded(None, None, true);
        rp.sys.srcversion = Some("0A1B".into());
        if let Some(Ok(f)) = &mut rp.file {
            f.modinfo.srcversion = Some("0A1B".into());
        }
        let r = judge(rp.clone());
        says(&r, Status::Pass, &["same srcversion"]);
        assert_eq!(seen(&r, "srcversion"), "0A1B");

        if let Some(Ok(f)) = &mut rp.file {
            f.modinfo.srcversion = Some("FFFF".into());
        }
        let r = judge(rp);
        says(&r, Status::Fail, &["srcversion differs"]);
    }

    #[test]
    fn warns_when_nothing_can_be_compared() {
        let r = judge(loaded(None, Some("bb22"), true));
        says(&r, Status::Warn, &["cannot tell"]);
        assert_eq!(seen(&r, "loaded"), "build-id none, srcversion none");
        assert_eq!(seen(&r, "on disk"), "build-id bb22, srcversion none");
    }

    #[test]
    fn a_different_build_is_not_stale_when_a_reload_would_not_help() {
        let r = judge(loaded(Some("aa11"), Some("bb22"), false));
        says(
            &r,
            Status::Skip,
            &["not a stale one", "the file has no hooks either"],
        );
        let mut rp = loaded(Some("aa11"), Some("bb22"), true);
        rp.kallsyms = Some(Ok(b::loaded_hooks('t')));
        let r = judge(rp);
        says(&r, Status::Skip, &["the loaded build carries the hooks"]);
        assert_eq!(seen(&r, "loaded build-id"), "aa11");
    }

    #[test]
    fn skips_what_is_not_loaded() {
        let r = run(&HostFacts::builder().build());
        says(&r, Status::Skip, &["rpcrdma is not loaded"]);
        let mut rp = b::rpcrdma(INBOX_RPCRDMA, false, Export::Gpl, true);
        rp.file = None;
        says(
            &judge(rp),
            Status::Skip,
            &["no module file to compare with"],
        );
    }
}
