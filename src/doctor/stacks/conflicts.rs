//! Which package family to remove when two own the same NFS/RDMA module (`stack-ownership`), and
//! in what order, with the commands of the node's package manager (`apt`, `dnf`, `zypper`).
//!
//! The family kept is the one the next load takes for rpcrdma — what the admin installed last
//! and depmod ranks first — except that Ubuntu's archive DOCA-OFED is kept over NVIDIA's
//! repository packages, as Canonical says to remove NVIDIA's before installing its own. The
//! others are removed NFS-side first (vastnfs, mlnx-nfsrdma), then the RDMA core they build on;
//! the plan then refreshes the module index and initramfs, as after a rebuild.

use super::remedy::Remedy;
use crate::doctor::stack::{Family, Stack};
use crate::doctor::step::Step;
use crate::host::modules::module_owners::PackageFamily;

/// A family to remove, with the modules it competes for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    pub family: PackageFamily,
    pub modules: Vec<String>,
}

/// The families that own a module together with another: the one kept, and the others in
/// removal order.
pub fn competing(s: &Stack) -> Option<(PackageFamily, Vec<Removal>)> {
    let conflicts: Vec<(&str, Vec<&PackageFamily>)> = s
        .owners
        .modules
        .iter()
        .map(|m| (m.module.as_str(), m.vendor_families()))
        .filter(|(_, f)| f.len() > 1)
        .collect();
    if conflicts.is_empty() {
        return None;
    }
    let mut all: Vec<PackageFamily> = conflicts
        .iter()
        .flat_map(|(_, f)| f.iter().map(|f| (*f).clone()))
        .collect();
    all.sort();
    all.dedup();
    let ubuntu = all
        .iter()
        .find(|f| matches!(f, PackageFamily::UbuntuDoca(_)))
        .cloned();
    let keep = ubuntu
        .or_else(|| s.rpcrdma_next().map(|c| c.family.clone()))
        .filter(|f| all.contains(f))
        .unwrap_or_else(|| all[0].clone());
    let mut remove: Vec<Removal> = all
        .into_iter()
        .filter(|f| *f != keep)
        .map(|family| {
            let modules = conflicts
                .iter()
                .filter(|(_, fs)| fs.contains(&&family))
                .map(|(m, _)| m.to_string())
                .collect();
            Removal { family, modules }
        })
        .collect();
    remove.sort_by_key(|r| removal_rank(&r.family));
    Some((keep, remove))
}

/// NFS-side packages go before the RDMA core they were built against.
fn removal_rank(f: &PackageFamily) -> u8 {
    match f {
        PackageFamily::Vastnfs => 0,
        PackageFamily::Other(_) => 1,
        PackageFamily::NvidiaOfed => 2,
        PackageFamily::UbuntuDoca(_) => 3,
        PackageFamily::Distribution => 4,
    }
}

/// The commands that remove one family's `modules` on this distribution family. Where only
/// rpcrdma competes, NVIDIA's NFS over RDMA package goes and its RDMA core stays.
fn remove_commands(f: &PackageFamily, modules: &[String], family: Family) -> Vec<String> {
    let nfs_only = modules.iter().all(|m| m == "rpcrdma");
    match (f, family) {
        (PackageFamily::NvidiaOfed, Family::Debian) if nfs_only => vec![
            "apt-get purge 'mlnx-nfsrdma*'   # NVIDIA's NFS over RDMA only; its RDMA core stays".into(),
        ],
        (PackageFamily::NvidiaOfed, Family::Suse) if nfs_only => vec![
            "zypper remove 'mlnx-nfsrdma*'   # NVIDIA's NFS over RDMA only; its RDMA core stays".into(),
        ],
        (PackageFamily::NvidiaOfed, _) if nfs_only => vec![
            "dnf remove 'kmod-mlnx-nfsrdma*' 'mlnx-nfsrdma*'   # NVIDIA's NFS over RDMA only; its RDMA core stays".into(),
        ],
        (PackageFamily::Vastnfs, Family::Debian) => vec!["apt-get purge 'vastnfs*'".into()],
        (PackageFamily::Vastnfs, Family::Suse) => vec!["zypper remove 'vastnfs*'".into()],
        (PackageFamily::Vastnfs, _) => vec!["dnf remove 'vastnfs*' 'kmod-vastnfs*'".into()],
        (PackageFamily::NvidiaOfed, Family::Debian) => vec![
            "apt-get purge 'mlnx-nfsrdma*' 'mlnx-ofed-kernel*' 'doca-ofed*' 'doca-host*'   # NVIDIA's packages".into(),
            "rm /etc/apt/sources.list.d/doca*.list   # and NVIDIA's DOCA-Host repository; MLNX_OFED installs: /usr/sbin/ofed_uninstall.sh".into(),
        ],
        (PackageFamily::NvidiaOfed, Family::Suse) => vec![
            "zypper remove 'mlnx-nfsrdma*' 'mlnx-ofa_kernel*' 'kmod-mlnx-*' 'doca-ofed*'   # or /usr/sbin/ofed_uninstall.sh for MLNX_OFED".into(),
        ],
        (PackageFamily::NvidiaOfed, _) => vec![
            "dnf remove 'kmod-mlnx-nfsrdma*' 'mlnx-nfsrdma*' 'kmod-mlnx-ofa_kernel*' 'mlnx-ofa_kernel*' 'doca-ofed*'   # or /usr/sbin/ofed_uninstall.sh for MLNX_OFED".into(),
        ],
        (PackageFamily::UbuntuDoca(v), _) => vec![format!(
            "apt-get purge 'linux-modules-doca-ofed-{v}-*' 'doca-ofed-{v}-dkms'"
        )],
        (PackageFamily::Other(dir), Family::Debian) => vec![format!(
            "dpkg -S /lib/modules/$(uname -r)/{dir}/   # find the package, then apt-get purge it"
        )],
        (PackageFamily::Other(dir), _) => vec![format!(
            "rpm -qf /lib/modules/$(uname -r)/{dir}/*/*.ko*   # find the package, then remove it"
        )],
        (PackageFamily::Distribution, _) => vec![],
    }
}

/// The plan's steps: remove each competing family in order; the plan then refreshes the module
/// index and initramfs and reloads, as after a rebuild.
pub fn removal_steps(s: &Stack) -> Remedy {
    let Some((keep, remove)) = competing(s) else {
        return Remedy::none();
    };
    let steps: Vec<Step> = remove
        .iter()
        .map(|Removal { family: f, modules }| {
            Step::manual(
                format!("Remove {}'s {} (keeping {})", f.describe(), modules.join(", "), keep.describe()),
                format!("{} and {} install the same modules ({}); which one loads then rests on depmod's search order, and an upgrade of either silently swaps them", f.describe(), keep.describe(), modules.join(", ")),
                remove_commands(f, modules, s.family),
            )
        })
        .collect();
    // Removed module files, like rebuilt ones, need a fresh index, initramfs and reload.
    Remedy {
        rebuilt: !steps.is_empty(),
        steps,
    }
}

/// MLNX_OFED and DOCA-OFED both in the package database: their metapackages, when both are.
pub fn two_ofed_stacks(s: &Stack) -> Option<(&str, &str)> {
    let find = |name: &str| {
        s.ofed_packages
            .iter()
            .find(|p| p.split(' ').next() == Some(name))
            .map(String::as_str)
    };
    Some((find("mlnx-ofed-all")?, find("doca-ofed")?))
}

/// Why two OFED stacks are one too many.
fn two_ofed_why(mlnx: &str, doca: &str) -> String {
    format!("MLNX_OFED ({mlnx}) and DOCA-OFED ({doca}) are both installed: NVIDIA says not to install both, as their kernel packages replace the same modules (ib_core, rdma_cm, rpcrdma) and which build loads then rests on install order and depmod's search order; MLNX_OFED is the retired one (its last release is 24.10)")
}

/// The `ofed-packages` finding: the two OFED stacks, when both are installed.
pub fn two_ofed_finding(s: &Stack) -> Option<String> {
    let (mlnx, doca) = two_ofed_stacks(s)?;
    Some(format!(
        "{}; the plan removes MLNX_OFED",
        two_ofed_why(mlnx, doca)
    ))
}

/// Remove MLNX_OFED with its own uninstaller and restore DOCA-OFED's files after it; the plan
/// then refreshes the module index and initramfs, as after a rebuild.
pub fn two_ofed_steps(s: &Stack) -> Remedy {
    let Some((mlnx, doca)) = two_ofed_stacks(s) else {
        return Remedy::none();
    };
    let reinstall = match s.family {
        Family::Debian => "apt-get install --reinstall doca-ofed   # restores DOCA-OFED's files the uninstaller removed with MLNX_OFED's",
        Family::Suse => "zypper install --force doca-ofed   # restores DOCA-OFED's files the uninstaller removed with MLNX_OFED's",
        _ => "dnf reinstall doca-ofed   # restores DOCA-OFED's files the uninstaller removed with MLNX_OFED's",
    };
    Remedy {
        steps: vec![Step::manual(
            "Remove MLNX_OFED (keeping DOCA-OFED)",
            two_ofed_why(mlnx, doca),
            vec![
                "/usr/sbin/ofed_uninstall.sh --force   # MLNX_OFED's own uninstaller: every mlnx-ofed-* package".into(),
                reinstall.into(),
                "ofed_info -s   # now names DOCA-OFED (OFED-internal-…)".into(),
            ],
        )],
        rebuilt: true,
    }
}

#[cfg(test)]
mod tests {
    use super::super::inbox::Inbox;
    use super::super::test_support::stack;
    use super::*;
    use crate::doctor::stack::Ofed;
    use crate::host::modules::module_owners::{LoadedOwner, ModuleCopy, ModuleOwner};

    fn copy(rel: &str) -> ModuleCopy {
        ModuleCopy::at(rel)
    }

    fn node(family: Family, module: &str, next: &str, installed: &[&str]) -> Stack {
        let mut s = stack(family, Ofed::None, &Inbox);
        s.owners.modules.push(ModuleOwner {
            module: module.into(),
            next: Some(copy(next)),
            loaded: LoadedOwner::NotLoaded,
            installed: installed.iter().map(|r| copy(r)).collect(),
        });
        s
    }

    #[test]
    fn ubuntus_archive_build_is_kept_over_nvidias_repository() {
        let s = node(
            Family::Debian,
            "ib_core",
            "updates/dkms/ib_core.ko.zst",
            &[
                "updates/dkms/ib_core.ko.zst",
                "kernel/doca-ofed-26.01/ib_core.ko.zst",
            ],
        );
        let r = removal_steps(&s);
        assert!(r.rebuilt);
        let steps = r.steps;
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(
            steps[0].title,
            "Remove NVIDIA's DOCA-OFED / MLNX_OFED's ib_core (keeping Ubuntu's archive DOCA-OFED 26.01)"
        );
        assert!(steps[0].commands[0].starts_with("apt-get purge 'mlnx-nfsrdma*'"));
        assert!(steps[0].commands[1].contains("sources.list.d/doca"));
    }

    #[test]
    fn the_nfs_side_goes_first_with_the_nodes_package_manager() {
        let installed = [
            "extra/vastnfs/bundle/net/sunrpc/xprtrdma/rpcrdma.ko.xz",
            "extra/mlnx-nfsrdma/rpcrdma.ko.xz",
            "extra/acme/rpcrdma.ko",
        ];
        let s = node(Family::Rhel, "rpcrdma", installed[1], &installed);
        let steps = removal_steps(&s).steps;
        let titles: Vec<&str> = steps.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(
            titles[0],
            "Remove vastnfs's rpcrdma (keeping NVIDIA's DOCA-OFED / MLNX_OFED)"
        );
        assert!(titles[1].starts_with("Remove an unrecognised package (extra/)"));
        assert_eq!(
            steps[0].commands,
            vec!["dnf remove 'vastnfs*' 'kmod-vastnfs*'"]
        );
        let mut suse = s;
        suse.family = Family::Suse;
        assert_eq!(
            removal_steps(&suse).steps[0].commands,
            vec!["zypper remove 'vastnfs*'"]
        );
        // vastnfs kept: only NVIDIA's rpcrdma package goes, its ib_core stays for vastnfs.
        let s = node(Family::Rhel, "rpcrdma", installed[0], &installed[..2]);
        let steps = removal_steps(&s).steps;
        assert_eq!(
            steps[0].commands,
            vec!["dnf remove 'kmod-mlnx-nfsrdma*' 'mlnx-nfsrdma*'   # NVIDIA's NFS over RDMA only; its RDMA core stays"]
        );
    }

    #[test]
    fn one_family_per_module_plans_nothing() {
        let s = node(
            Family::Debian,
            "rpcrdma",
            "updates/dkms/rpcrdma.ko",
            &[
                "kernel/net/sunrpc/xprtrdma/rpcrdma.ko",
                "updates/dkms/rpcrdma.ko",
            ],
        );
        assert!(removal_steps(&s).steps.is_empty());
    }

    #[test]
    fn both_ofed_stacks_installed_remove_mlnx_ofed_with_its_uninstaller() {
        let mut s = super::super::test_support::stack(
            Family::Rhel,
            crate::doctor::stack::Ofed::None,
            &crate::doctor::stacks::inbox::Inbox,
        );
        assert!(two_ofed_stacks(&s).is_none());
        s.ofed_packages = vec!["doca-ofed 3.1.0-091000.el9.x86_64".into()];
        assert!(two_ofed_steps(&s).steps.is_empty());
        s.ofed_packages
            .push("mlnx-ofed-all 24.10-1.1.4.0.rhel9u4.noarch".into());
        let r = two_ofed_steps(&s);
        assert!(r.rebuilt);
        assert_eq!(r.steps[0].title, "Remove MLNX_OFED (keeping DOCA-OFED)");
        assert!(r.steps[0].why.contains("MLNX_OFED (mlnx-ofed-all 24.10-1.1.4.0.rhel9u4.noarch) and DOCA-OFED (doca-ofed 3.1.0-091000.el9.x86_64) are both installed"));
        assert_eq!(
            r.steps[0].commands[1].split("   #").next(),
            Some("dnf reinstall doca-ofed")
        );
        s.family = Family::Debian;
        assert!(two_ofed_steps(&s).steps[0].commands[1]
            .starts_with("apt-get install --reinstall doca-ofed"));
        assert!(two_ofed_finding(&s)
            .unwrap()
            .contains("the plan removes MLNX_OFED"));
    }
}
