//! The distribution kernel's own rpcrdma (`kernel/…` of the kernel package): it never has the
//! nvfs hooks, so every fix installs NVIDIA's mlnx-nfsrdma (the catalogue's default steps) —
//! unless one is installed already and loses: a kmod package built for another kernel, linked
//! into `weak-updates/` by `weak-modules`, which RHEL's `dist.conf` searches last. Then the fix
//! is the `override` line that ranks the link first (the one the package writes), or the
//! package built for this kernel.

use super::{Detection, Remedy, RpcrdmaStack};
use crate::doctor::stack::{Family, Stack};
use crate::doctor::step::Step;
use crate::host::modules::module_owners::{target_release, ModuleCopy};
use crate::host::modules::ModuleOrigin;
use crate::host::platform::kernel_packages::debian_kernel_packages;

/// The `/etc/depmod.d` file NVIDIA's kmod-mlnx-nfsrdma writes its `override` line to.
const OVERRIDE_FILE: &str = "/etc/depmod.d/zz02-mlnx-nfsrdma-rpcrdma.conf";

/// An installed vendor rpcrdma linked into `weak-updates/` that the next load does not take.
fn losing_link(s: &Stack) -> Option<&ModuleCopy> {
    s.owners.get("rpcrdma")?.losing_weak_link()
}

/// `weak-updates/mlnx-nfsrdma/rpcrdma.ko` → `weak-updates/mlnx-nfsrdma`: what an `override`
/// line names.
fn override_dir(link: &ModuleCopy) -> &str {
    link.rel_path
        .rsplit_once('/')
        .map_or(link.rel_path.as_str(), |(d, _)| d)
}

/// `weak-updates/… -> 4.18.0-513.el8.x86_64's build`, in words.
fn link_words(link: &ModuleCopy) -> String {
    match link.link.as_deref().and_then(target_release) {
        Some(release) => format!("{} (a link to the build for {release})", link.rel_path),
        None => link.rel_path.clone(),
    }
}

stack!(Inbox, "inbox");

impl RpcrdmaStack for Inbox {
    fn detect(&self, d: &Detection) -> bool {
        d.file()
            .is_some_and(|(_, origin)| *origin == ModuleOrigin::Inbox)
    }

    fn describe(&self, s: &Stack) -> String {
        let own = match (&s.rpcrdma_package, s.kernel_release.as_deref()) {
            (Some(package), Some(release)) => match debian_kernel_packages(release, None) {
                Some(p) if p.split() && *package == p.modules => format!("rpcrdma comes from the distribution kernel's inbox rpcrdma in {package} (never has the nvfs hooks; {} only depends on it)", p.image),
                _ => format!("rpcrdma comes from the distribution kernel's inbox rpcrdma in {package} (never has the nvfs hooks)"),
            },
            _ => "rpcrdma comes from the distribution kernel's inbox rpcrdma (never has the nvfs hooks)".to_string(),
        };
        match losing_link(s) {
            Some(link) => format!(
                "{own}; {} of {} is installed as {} but does not load: the in-tree rpcrdma wins in depmod's order, as no `override rpcrdma * {}` line in /etc/depmod.d ranks the link first",
                link.family.describe(),
                "mlnx-nfsrdma",
                link_words(link),
                override_dir(link)
            ),
            None => own,
        }
    }

    /// An mlnx-nfsrdma that is installed but loses to the in-tree rpcrdma needs ranking, not
    /// installing.
    fn hooked(&self, s: &Stack) -> Remedy {
        let Some(link) = losing_link(s) else {
            return Remedy::manual(super::ofed::install_nfsrdma_step(s));
        };
        let dir = override_dir(link);
        let rebuild = match s.family {
            Family::Suse => "zypper install --force kmod-mlnx-nfsrdma   # or: the build for this kernel, which lands in updates/ and needs no link",
            _ => "dnf install kmod-mlnx-nfsrdma   # or: the build for this kernel, which lands in extra/ and needs no link",
        };
        Remedy {
            steps: vec![Step::manual(
                "Rank the installed mlnx-nfsrdma above the in-tree rpcrdma",
                format!(
                    "mlnx-nfsrdma is installed as {} but modprobe loads the kernel's own rpcrdma, which has no hooks: the distribution's depmod configuration searches weak-updates/ after the kernel's own modules, and no `override` line ranks the link first (the package writes one to {OVERRIDE_FILE}; it is missing)",
                    link_words(link)
                ),
                vec![
                    format!("echo 'override rpcrdma * {dir}' > {OVERRIDE_FILE}"),
                    rebuild.into(),
                    format!("nfs-gds inspect-module rpcrdma   # after the index is refreshed: {}", link.rel_path),
                ],
            )],
            // The index, initramfs and loaded module must follow the new ranking.
            rebuilt: true,
        }
    }

    fn is_vendor(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved, stack};
    use super::super::RpcrdmaStack;
    use crate::doctor::stack::{Family, Ofed};
    use crate::host::modules::module_owners::{
        LoadedOwner, ModuleCopy, ModuleOwner, PackageFamily,
    };

    const IN_TREE: &str = "kernel/net/sunrpc/xprtrdma/rpcrdma.ko.xz";
    const LINK: &str = "weak-updates/mlnx-nfsrdma/rpcrdma.ko";

    fn rocky(with_link: bool) -> crate::doctor::stack::Stack {
        let mut s = stack(Family::Rhel, Ofed::None, &super::Inbox);
        let mut installed = vec![ModuleCopy::at(IN_TREE)];
        if with_link {
            installed.push(ModuleCopy {
                rel_path: LINK.into(),
                family: PackageFamily::NvidiaOfed,
                link: Some(
                    "/lib/modules/4.18.0-513.el8.x86_64/extra/mlnx-nfsrdma/rpcrdma.ko".into(),
                ),
            });
        }
        s.owners.modules.push(ModuleOwner {
            module: "rpcrdma".into(),
            next: Some(ModuleCopy::at(IN_TREE)),
            loaded: LoadedOwner::NotLoaded,
            installed,
        });
        s
    }

    #[test]
    fn debians_split_kernel_names_the_modules_package_that_owns_rpcrdma() {
        let mut s = stack(Family::Debian, Ofed::None, &super::Inbox);
        s.kernel_release = Some("7.3.4+deb13-amd64".into());
        s.rpcrdma_package = Some("linux-modules-7.3.4+deb13-amd64".into());
        let d = super::Inbox.describe(&s);
        assert!(
            d.contains("inbox rpcrdma in linux-modules-7.3.4+deb13-amd64 (never has the nvfs hooks; linux-image-7.3.4+deb13-amd64 only depends on it)"),
            "{d}"
        );
        s.kernel_release = Some("6.12.117+deb13-amd64".into());
        s.rpcrdma_package = Some("linux-image-6.12.117+deb13-amd64".into());
        let d = super::Inbox.describe(&s);
        assert!(
            d.contains("in linux-image-6.12.117+deb13-amd64 (never has the nvfs hooks)"),
            "{d}"
        );
    }

    #[test]
    fn an_installed_weak_updates_link_that_loses_is_ranked_not_installed_again() {
        let s = rocky(true);
        let d = super::Inbox.describe(&s);
        assert!(d.contains("is installed as weak-updates/mlnx-nfsrdma/rpcrdma.ko (a link to the build for 4.18.0-513.el8.x86_64) but does not load"), "{d}");
        let r = super::Inbox.hooked(&s);
        assert!(r.rebuilt);
        let c = &r.steps[0].commands;
        assert_eq!(
            c[0],
            "echo 'override rpcrdma * weak-updates/mlnx-nfsrdma' > /etc/depmod.d/zz02-mlnx-nfsrdma-rpcrdma.conf"
        );
        assert!(c[1].starts_with("dnf install kmod-mlnx-nfsrdma"), "{c:?}");

        // Without the link, the fix is installing mlnx-nfsrdma.
        let r = super::Inbox.hooked(&rocky(false));
        assert!(!r.steps[0].title.contains("Rank"), "{:?}", r.steps);
        assert!(!super::Inbox
            .describe(&rocky(false))
            .contains("weak-updates"));
    }

    #[test]
    fn the_kernel_packages_rpcrdma_is_inbox() {
        let r = resolved("kernel/net/sunrpc/xprtrdma/rpcrdma.ko.zst");
        assert_eq!(
            detected(&r, Some("linux-modules-6.8.0-45-generic")),
            super::ID
        );
    }
}
