//! A `weak-updates/` link (RHEL/Rocky, SLES): `weak-modules` linked another kernel's build —
//! usually a kmod package's `extra/mlnx-nfsrdma/` — into this kernel's tree because its symbol
//! CRCs (kABI) matched this kernel's when the link was made. RHEL's `dist.conf` searches
//! `weak-updates` last, so such a link loads only where nothing else provides rpcrdma. The fix is
//! the package built for this kernel, not a new link.

use super::contract::{Detection, RpcrdmaStack, ABI_WHY};
use super::remedy::Remedy;
use crate::doctor::stack::{Family, Stack};
use crate::doctor::step::Step;
use crate::host::modules::module_owners::{target_release, tree_relative_target};
use crate::host::modules::ModuleOrigin;

stack!(WeakUpdates, "weak-updates");

/// Whose `weak-modules` made the link, by the distribution family.
fn distribution(s: &Stack) -> &'static str {
    match s.family {
        Family::Suse => "SLES",
        _ => "RHEL",
    }
}

/// `4.18.0-513.el8.x86_64's extra/mlnx-nfsrdma`: the kernel and directory the link points into.
fn target_words(s: &Stack) -> Option<String> {
    let link = s.rpcrdma_next()?.link.as_deref()?;
    let release = target_release(link)?;
    let rel = tree_relative_target(link)?;
    let dir = rel.rsplit_once('/').map_or(rel.as_str(), |(d, _)| d);
    Some(format!("{release}'s {dir}"))
}

impl RpcrdmaStack for WeakUpdates {
    fn detect(&self, d: &Detection) -> bool {
        d.file()
            .is_some_and(|(_, origin)| *origin == ModuleOrigin::WeakUpdates)
    }

    fn describe(&self, s: &Stack) -> String {
        match target_words(s) {
            Some(t) => format!(
                "rpcrdma comes from a {} weak-modules link to {t} (another kernel's build, accepted for its matching kABI)",
                distribution(s)
            ),
            None => format!(
                "rpcrdma comes from a {} weak-modules link (weak-updates/) to another kernel's build",
                distribution(s)
            ),
        }
    }

    /// The linked build is a kmod package's: its fixes are the package's.
    fn hooked(&self, s: &Stack) -> Remedy {
        super::mofed_package::MofedPackage.hooked(s)
    }

    fn sign_note(&self, s: &Stack) -> Option<String> {
        super::mofed_package::MofedPackage.sign_note(s)
    }

    fn abi(&self, s: &Stack, hooked: bool) -> Remedy {
        if hooked {
            return Remedy::none();
        }
        let install = match s.family {
            Family::Suse => "zypper install --force kmod-mlnx-nfsrdma   # the build for this kernel, from the same MLNX_OFED / DOCA-OFED repository",
            _ => "dnf install kmod-mlnx-nfsrdma   # the build for this kernel, from the same MLNX_OFED / DOCA-OFED repository (or mlnx-nfsrdma's DKMS flavour)",
        };
        Remedy::manual(Step::manual(
            "Install the rpcrdma built for this kernel instead of the weak-updates link",
            format!("{ABI_WHY}; the weak-updates link reuses another kernel's build whose kABI no longer matches"),
            vec![
                format!("weak-modules --remove-kernel {}   # drop the stale links of this kernel", s.kernel()),
                install.into(),
                format!("weak-modules --add-kernel {}   # links again only what matches this kernel's kABI", s.kernel()),
            ],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{detected, resolved, stack};
    use super::*;
    use crate::doctor::stack::Ofed;
    use crate::host::modules::module_owners::{
        LoadedOwner, ModuleCopy, ModuleOwner, PackageFamily,
    };

    const LINK: &str = "weak-updates/mlnx-nfsrdma/rpcrdma.ko";

    fn rhel(link: Option<&str>) -> Stack {
        let mut s = stack(Family::Rhel, Ofed::None, &WeakUpdates);
        s.owners.modules.push(ModuleOwner {
            module: "rpcrdma".into(),
            next: Some(ModuleCopy {
                rel_path: LINK.into(),
                family: PackageFamily::NvidiaOfed,
                link: link.map(str::to_string),
            }),
            loaded: LoadedOwner::NotLoaded,
            installed: vec![],
        });
        s
    }

    #[test]
    fn a_weak_updates_link_is_recognised_before_the_package() {
        assert_eq!(detected(&resolved(LINK), None), ID);
    }

    #[test]
    fn the_link_target_names_the_kernel_it_was_built_for() {
        let s = rhel(Some(
            "/lib/modules/4.18.0-513.el8.x86_64/extra/mlnx-nfsrdma/rpcrdma.ko",
        ));
        assert!(
            WeakUpdates
                .describe(&s)
                .contains("RHEL weak-modules link to 4.18.0-513.el8.x86_64's extra/mlnx-nfsrdma"),
            "{}",
            WeakUpdates.describe(&s)
        );
        assert!(WeakUpdates.describe(&rhel(None)).contains("weak-updates/"));
    }

    #[test]
    fn an_abi_mismatch_replaces_the_link_per_family() {
        let c = &WeakUpdates.abi(&rhel(None), false).steps[0].commands;
        assert!(c[1].starts_with("dnf install kmod-mlnx-nfsrdma"), "{c:?}");
        let mut s = rhel(None);
        s.family = Family::Suse;
        let c = &WeakUpdates.abi(&s, false).steps[0].commands;
        assert!(c[1].starts_with("zypper install --force"), "{c:?}");
        assert!(WeakUpdates.describe(&s).contains("SLES weak-modules link"));
    }
}
