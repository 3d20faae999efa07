//! DOCA-OFED from the Ubuntu archive (26.04 and later): Canonical's kernel-ABI packages
//! `linux-modules-doca-ofed-<ver>-<flavour>`, signed by Canonical, install the modules under
//! `kernel/doca-ofed-<ver>/` — inside `kernel/`, so only this marker tells them from the inbox
//! rpcrdma. They load under Secure Boot with no MOK, and a fix starts with the archive's own
//! packages; the archive's DKMS source (`doca-ofed-<ver>-dkms`) is the fallback. DOCA-OFED from
//! NVIDIA's repository must not be installed beside them.

use super::contract::{Detection, RpcrdmaStack};
use super::remedy::Remedy;
use crate::doctor::stack::Stack;
use crate::doctor::step::Step;
use crate::host::modules::module_place::PackageFamily;

stack!(UbuntuDocaOfed, "ubuntu-doca-ofed");

const PACKAGE_PREFIX: &str = "linux-modules-doca-ofed-";

/// The `<ver>` of a `kernel/doca-ofed-<ver>/` path.
fn version_in_path(rel: &str) -> Option<String> {
    match PackageFamily::of_path(rel) {
        PackageFamily::UbuntuDoca(ver) => Some(ver),
        _ => None,
    }
}

/// The `<ver>` of the module file's directory, else of its package
/// (`linux-modules-doca-ofed-26.01-generic`).
fn version(rel: Option<&str>, package: Option<&str>) -> Option<String> {
    rel.and_then(version_in_path).or_else(|| {
        package?
            .strip_prefix(PACKAGE_PREFIX)?
            .split('-')
            .next()
            .map(str::to_string)
    })
}

/// The package to name in commands: the owner `dpkg -S` gave, else its pattern.
fn package(s: &Stack) -> String {
    match &s.rpcrdma_package {
        Some(p) if p.starts_with(PACKAGE_PREFIX) => p.clone(),
        _ => format!("{PACKAGE_PREFIX}{}-<flavour>", ver(s)),
    }
}

fn ver(s: &Stack) -> String {
    let rel = s.rpcrdma_next().map(|c| c.rel_path.as_str());
    version(rel, s.rpcrdma_package.as_deref()).unwrap_or_else(|| "<ver>".into())
}

impl RpcrdmaStack for UbuntuDocaOfed {
    fn detect(&self, d: &Detection) -> bool {
        d.file().is_some_and(|(rel, _)| {
            version_in_path(rel).is_some()
                || d.package.is_some_and(|p| p.starts_with(PACKAGE_PREFIX))
        })
    }

    fn describe(&self, s: &Stack) -> String {
        format!(
            "rpcrdma comes from Ubuntu's Canonical-signed DOCA-OFED {} package ({}, kernel/doca-ofed-<ver>/)",
            ver(s),
            package(s)
        )
    }

    fn hooked(&self, s: &Stack) -> Remedy {
        let ver = ver(s);
        Remedy::manual(Step::manual(
            "Install a DOCA-OFED rpcrdma with GDS support from the Ubuntu archive",
            format!("the rpcrdma modprobe loads is the Ubuntu archive's DOCA-OFED {ver} build, which has no nvfs hooks"),
            vec![
                format!("apt-get install --only-upgrade {}   # the archive's build first", package(s)),
                format!("# if it still has no hooks, the archive's DKMS source, with mlnx-ofa_kernel configured --with-gds (dkms.conf: `#:# ExtraOption --with-gds`):"),
                format!("apt-get install doca-ofed-{ver}-dkms"),
                "# never beside DOCA-OFED from NVIDIA's repository: uninstall one before installing the other".into(),
            ],
        ))
    }

    fn abi(&self, s: &Stack, hooked: bool) -> Remedy {
        if hooked {
            return Remedy::none();
        }
        Remedy::manual(Step::manual(
            "Install the archive's DOCA-OFED modules of the running kernel",
            super::contract::ABI_WHY,
            vec![
                format!("apt-get install --reinstall {}   # kernel-ABI package: it must be the one of {}", package(s), s.kernel()),
                "apt-get install doca-ofed-generic   # or the meta-package of your kernel flavour (doca-ofed-aws, -azure, …), which follows the kernel".into(),
            ],
        ))
    }

    fn gpl_export(&self, s: &Stack) -> Step {
        Step::manual(
            "Install an rpcrdma that exports the hooks GPL",
            super::ofed::GPL_WHY,
            vec![
                format!("apt-get install --only-upgrade {}", package(s)),
                format!("# if it still exports plain: the archive's DKMS source doca-ofed-{}-dkms, patched to EXPORT_SYMBOL_GPL in nvfs_rpc_rdma.c (unofficial)", ver(s)),
            ],
        )
    }

    fn sign_note(&self, s: &Stack) -> Option<String> {
        Some(format!(
            "# {} is signed by Canonical and loads under Secure Boot with no MOK: a refused rpcrdma is not the archive's build (apt-get install --reinstall {})",
            package(s),
            package(s)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved, stack};
    use super::*;
    use crate::doctor::stack::{Family, Ofed};

    const FILE: &str = "kernel/doca-ofed-26.01/rpcrdma.ko.zst";
    const PACKAGE: &str = "linux-modules-doca-ofed-26.01-7.0.0-14-generic";

    #[test]
    fn the_archive_directory_is_recognised_before_the_inbox() {
        assert_eq!(detected(&resolved(FILE), None), ID);
        assert_eq!(
            detected(
                &resolved("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst"),
                Some(PACKAGE)
            ),
            ID,
            "the owning package is enough"
        );
        assert_eq!(
            detected(&resolved("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst"), None),
            super::super::inbox::ID
        );
        assert_eq!(
            version_in_path("/lib/modules/6.8.0/kernel/doca-ofed-3.4/x.ko").as_deref(),
            Some("3.4")
        );
        assert_eq!(version_in_path("updates/dkms/doca-ofed-3.4/x.ko"), None);
    }

    fn ubuntu() -> Stack {
        let mut s = stack(
            Family::Debian,
            Ofed::Doca {
                version: "26.01-1.0.0".into(),
            },
            &UbuntuDocaOfed,
        );
        s.rpcrdma_package = Some(PACKAGE.into());
        s
    }

    #[test]
    fn a_hookless_build_points_at_the_archive_package_first() {
        let r = UbuntuDocaOfed.hooked(&ubuntu());
        assert!(!r.rebuilt);
        let c = &r.steps[0].commands;
        assert_eq!(
            c[0],
            format!("apt-get install --only-upgrade {PACKAGE}   # the archive's build first")
        );
        assert!(c[2].contains("doca-ofed-26.01-dkms"), "{c:?}");
        assert!(UbuntuDocaOfed
            .describe(&ubuntu())
            .contains("Ubuntu's Canonical-signed DOCA-OFED 26.01 package"));
    }

    #[test]
    fn without_a_package_record_the_pattern_is_named() {
        let mut s = ubuntu();
        s.rpcrdma_package = None;
        let step = UbuntuDocaOfed.gpl_export(&s);
        assert!(
            step.commands[0].ends_with("linux-modules-doca-ofed-<ver>-<flavour>"),
            "{:?}",
            step.commands
        );
    }

    #[test]
    fn signing_needs_no_mok_for_the_archive_build() {
        let note = UbuntuDocaOfed.sign_note(&ubuntu()).unwrap();
        assert!(note.contains("signed by Canonical"), "{note}");
        assert!(UbuntuDocaOfed.abi(&ubuntu(), true).steps.is_empty());
    }
}
