//! `next-boot`: the kernel the bootloader starts next gets an rpcrdma with the hooks from its
//! own module tree (DKMS built mlnx-nfsrdma for it), so GDS still works after the reboot.

use super::rpcrdma_common::export_word;
use crate::checks::check::{Check, Scope};
use crate::checks::{CheckId, CheckResult, Fix, Level};
use crate::host::boot::boot_kernels::KernelRpcrdma;
use crate::host::boot::dkms::{DkmsState, MLNX_NFSRDMA};
use crate::host::modules::gpl_rule::Enforcement;
use crate::host::modules::Resolution;
use crate::host::platform::kernel_packages::debian_kernel_packages;
use crate::host::HostFacts;
use crate::kmod::Export;

pub const ID: CheckId = CheckId::new("next-boot");

pub static CHECK: Check = Check {
    id: ID,
    doc: "the kernel the next boot starts (GRUB, BLS entries, systemd-boot, else the newest installed) has an rpcrdma with the hooks in its own module tree (DKMS built mlnx-nfsrdma for it; the `dkms install` that fixes it is shown)",
    scope: Scope::Node(run),
    default_level: Level::Warn,
    waitable: false,
};

fn run(facts: &HostFacts) -> CheckResult {
    let id = ID;
    let boot = &facts.boot;
    let nb = match &boot.next_boot {
        Ok(nb) => nb,
        Err(e) => {
            return CheckResult::unknown(
                id,
                format!("which kernel the next boot starts could not be read: {e}"),
            )
        }
    };
    let Some(release) = &nb.release else {
        return CheckResult::skip(
            id,
            format!(
                "the next boot starts no known Linux kernel ({})",
                nb.decided_by
            ),
        );
    };
    let with_boot = |r: CheckResult| {
        let r = r.with("decided by", nb.decided_by.clone());
        let r = nb.notes.iter().fold(r, |r, n| r.with("note", n.clone()));
        boot.others
            .iter()
            .filter(|k| &k.kernel.release != release)
            .fold(r, |r, k| {
                r.with(format!("installed {}", k.kernel.release), kernel_line(k))
            })
    };
    if boot.running.as_deref() == Some(release.as_str()) {
        return with_boot(CheckResult::pass(
            id,
            format!("the next boot starts the running kernel {release} again: the checks above hold for it"),
        ));
    }
    let Some(k) = boot.other(release) else {
        return with_boot(
            CheckResult::fail(
                id,
                format!("after reboot into {release}, modprobe finds no module tree: that kernel has no /lib/modules/{release}"),
            )
            .fix(Fix::NextBootModules)
            .remedy(match debian_kernel_packages(release, facts.inventory.debs.as_deref()) {
                Some(p) if p.split() => format!("`apt-get install {}` (Debian ships a kernel's modules in their own package, which {} depends on; {}), or make the bootloader start a kernel that has them", p.modules, p.image, p.evidence),
                Some(p) => format!("`apt-get install --reinstall {}` (it holds the kernel's modules), or make the bootloader start a kernel that has them", p.image),
                None => format!("install the modules of {release}, or make the bootloader start a kernel that has them"),
            }),
        );
    };
    with_boot(judge(k))
}

fn judge(k: &KernelRpcrdma) -> CheckResult {
    let id = ID;
    let rel = &k.kernel.release;
    let dkms = dkms_words(&k.dkms);
    let fail = |what: String| {
        let remedy = match k.dkms_fix() {
            Some(cmd) => format!("build it for that kernel before rebooting: `{cmd}`"),
            None => format!(
                "install the mlnx-nfsrdma (DOCA-OFED / MLNX_OFED) built for {rel} before rebooting"
            ),
        };
        CheckResult::fail(id, format!("after reboot into {rel}, {what}; {dkms}"))
            .fix(Fix::NextBootModules)
            .remedy(remedy)
            .with("dkms", dkms.clone())
    };
    let resolution = match &k.resolution {
        Ok(r) => r,
        Err(e) => {
            return CheckResult::unknown(
                id,
                format!("the module tree of {rel} could not be read: {e}"),
            )
        }
    };
    let (path, origin) = match resolution {
        Resolution::File { path, origin, exists: true, .. } => (path, origin),
        Resolution::File { path, .. } => {
            return fail(format!("modprobe resolves rpcrdma to {}, which does not exist (depmod is stale)", path.display()))
        }
        Resolution::BuiltIn { .. } => {
            return CheckResult::warn(id, format!("after reboot into {rel}, rpcrdma is built into the kernel; whether it has the hooks shows only once it runs"))
        }
        Resolution::NotFound { .. } | Resolution::NoModuleTree { .. } => {
            return fail("modprobe finds no rpcrdma at all".to_string())
        }
    };
    let f = match &k.file {
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            return CheckResult::unknown(
                id,
                format!("the rpcrdma of {rel} could not be inspected: {e}"),
            )
        }
        None => return CheckResult::unknown(id, format!("the rpcrdma of {rel} was not inspected")),
    };
    let evidence = |r: CheckResult| {
        let r = r
            .with("file", f.path.display().to_string())
            .with_if("frwr_map", k.frwr_map.map(|g| g.describe().to_string()));
        f.symbols.iter().fold(r, |r, s| {
            r.with(
                s.symbol.clone(),
                if s.defined {
                    export_word(&s.export)
                } else {
                    "missing".into()
                },
            )
        })
    };
    if f.symbols.iter().any(|s| !s.defined) {
        return evidence(fail(format!(
            "modprobe loads {} ({}), which has no nvfs hooks",
            path.display(),
            origin.describe()
        )));
    }
    let plain = f.symbols.iter().any(|s| s.export == Export::Plain);
    let exported = f
        .symbols
        .iter()
        .all(|s| matches!(s.export, Export::Gpl | Export::Plain));
    if !exported {
        return evidence(fail(format!(
            "modprobe loads {}, whose hooks are not exported",
            path.display()
        )));
    }
    if plain {
        let rule = k.gpl_rule.as_ref();
        let r = match rule.map(|r| r.enforcement) {
            Some(Enforcement::Enforced) => fail(format!(
                "modprobe loads {}, which exports the hooks plain, and {rel} refuses __symbol_get of non-GPL symbols",
                path.display()
            ))
            .remedy(super::rpcrdma_common::GPL_FIX),
            Some(Enforcement::NotEnforced) => CheckResult::pass(id, format!("after reboot into {rel}, modprobe loads {}, whose plain hook exports that kernel still accepts", path.display())),
            _ => CheckResult::warn(id, format!("after reboot into {rel}, modprobe loads {}, which exports the hooks plain, and whether {rel} refuses that is not known", path.display())),
        };
        let r = r.with(
            "kernel rule",
            rule.map_or_else(|| "not judged".into(), |r| r.evidence.clone()),
        );
        return evidence(r);
    }
    evidence(CheckResult::pass(
        id,
        format!(
            "after reboot into {rel}, modprobe loads {} ({}), which has both hooks exported GPL",
            path.display(),
            origin.describe()
        ),
    ))
}

fn dkms_words(s: &DkmsState) -> String {
    match s {
        DkmsState::Installed { version } => {
            format!("dkms status shows {MLNX_NFSRDMA} {version} installed for it")
        }
        DkmsState::Built { version } => {
            format!("dkms status shows {MLNX_NFSRDMA} {version} built but not installed for it")
        }
        DkmsState::NotBuilt {
            versions,
            built_for,
        } => format!(
            "dkms status shows {MLNX_NFSRDMA} ({}) not built for it (built for: {})",
            versions.join(", "),
            if built_for.is_empty() {
                "none".to_string()
            } else {
                built_for.join(", ")
            }
        ),
        DkmsState::Unknown => format!("DKMS does not know {MLNX_NFSRDMA}"),
    }
}

/// One line about an installed kernel that is not running: what its modprobe loads.
pub fn kernel_line(k: &KernelRpcrdma) -> String {
    let file = match (&k.resolution, k.inspected()) {
        (Ok(Resolution::File { path, origin, .. }), Some(f)) => {
            let hooks = if f.symbols.iter().all(|s| s.defined) {
                if f.symbols.iter().all(|s| s.export == Export::Gpl) {
                    "hooks exported GPL"
                } else {
                    "hooks present, not all exported GPL"
                }
            } else {
                "no hooks"
            };
            format!(
                "modprobe loads {} ({}, {hooks})",
                path.display(),
                origin.describe()
            )
        }
        (Ok(Resolution::File { path, .. }), None) => format!(
            "modprobe resolves {}, which could not be inspected",
            path.display()
        ),
        (Ok(Resolution::BuiltIn { .. }), _) => "rpcrdma is built in".into(),
        (Ok(_), _) => "modprobe finds no rpcrdma".into(),
        (Err(e), _) => format!("module tree unreadable: {e}"),
    };
    format!("{file}; {}", dkms_words(&k.dkms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::expect::{remedy, says, seen};
    use crate::checks::Status;
    use crate::host::boot::installed_kernels::InstalledKernel;
    use crate::host::facts_builder::{self as b};
    use crate::host::modules::gpl_rule::GplRule;

    const NEXT: &str = "6.8.0-50-generic";

    /// An installed kernel `NEXT` whose rpcrdma is `rel` with the hooks as given.
    fn next_kernel(rel: &str, hooks: bool, export: Export, dkms: DkmsState) -> KernelRpcrdma {
        let mut file = b::module_file(rel, hooks, export);
        file.path = format!("/lib/modules/{NEXT}/{rel}").into();
        KernelRpcrdma {
            kernel: InstalledKernel {
                release: NEXT.into(),
                image: format!("/boot/vmlinuz-{NEXT}"),
                module_dir: format!("/lib/modules/{NEXT}"),
                running: false,
            },
            resolution: Ok(Resolution::File {
                module: "rpcrdma".into(),
                rel_path: rel.into(),
                path: file.path.clone(),
                origin: crate::host::modules::ModuleOrigin::of(rel),
                deps: Vec::new(),
                exists: true,
            }),
            file: Some(Ok(file)),
            gpl_rule: None,
            dkms,
            frwr_map: None,
        }
    }

    /// The ordinary node whose bootloader starts `NEXT`, installed as `kernel` (if at all).
    fn booting(kernel: Option<KernelRpcrdma>) -> HostFacts {
        HostFacts::builder()
            .with(|f| {
                if let Ok(nb) = &mut f.boot.next_boot {
                    nb.release = Some(NEXT.into());
                    nb.decided_by = format!("GRUB's saved_entry names {NEXT}");
                }
                f.boot.others.extend(kernel);
            })
            .build()
    }

    fn not_built() -> DkmsState {
        DkmsState::NotBuilt {
            versions: vec!["24.10.OFED.24.10.1.1.4.0".into()],
            built_for: vec![b::RELEASE.into()],
        }
    }

    #[test]
    fn passes_when_the_running_kernel_boots_again() {
        let r = run(&HostFacts::builder().build());
        says(
            &r,
            Status::Pass,
            &["the running kernel 6.8.0-45-generic again"],
        );
        assert_eq!(seen(&r, "decided by"), "GRUB's default entry");
    }

    #[test]
    fn passes_a_next_kernel_with_gpl_hooks() {
        let k = next_kernel(
            b::DKMS_RPCRDMA,
            true,
            Export::Gpl,
            DkmsState::Installed {
                version: "24.10".into(),
            },
        );
        let r = run(&booting(Some(k)));
        says(
            &r,
            Status::Pass,
            &[
                &format!("after reboot into {NEXT}"),
                "a DKMS build (updates/dkms/)",
                "exported GPL",
            ],
        );
        assert_eq!(
            seen(&r, "rpcrdma_register_nvfs_dma_ops"),
            "EXPORT_SYMBOL_GPL"
        );
        assert_eq!(
            seen(&r, "decided by"),
            format!("GRUB's saved_entry names {NEXT}")
        );
    }

    #[test]
    fn fails_a_next_kernel_without_hooks_and_gives_the_dkms_command() {
        let k = next_kernel(b::INBOX_RPCRDMA, false, Export::Gpl, not_built());
        let r = run(&booting(Some(k)));
        says(
            &r,
            Status::Fail,
            &[
                "has no nvfs hooks",
                "not built for it (built for: 6.8.0-45-generic)",
            ],
        );
        assert_eq!(seen(&r, "rpcrdma_register_nvfs_dma_ops"), "missing");
        assert_eq!(r.fixes, vec![Fix::NextBootModules]);
        assert_eq!(
            remedy(&r),
            format!("build it for that kernel before rebooting: `dkms install -m mlnx-nfsrdma -v 24.10.OFED.24.10.1.1.4.0 -k {NEXT}`")
        );
    }

    #[test]
    fn fails_a_next_kernel_without_a_module_tree() {
        let r = run(&booting(None));
        says(&r, Status::Fail, &[&format!("no /lib/modules/{NEXT}")]);
        assert_eq!(r.fixes, vec![Fix::NextBootModules]);
    }

    #[test]
    fn a_split_debian_kernel_without_its_modules_names_the_modules_package() {
        const DEB: &str = "7.3.4+deb13-amd64";
        let mut facts = booting(None);
        if let Ok(nb) = &mut facts.boot.next_boot {
            nb.release = Some(DEB.into());
        }
        facts.inventory.debs = Some(vec![
            (format!("linux-image-{DEB}"), "7.3.4-1~bpo13+1".into()),
            (format!("linux-binary-{DEB}"), "7.3.4-1~bpo13+1".into()),
        ]);
        let r = run(&facts);
        says(&r, Status::Fail, &[&format!("no /lib/modules/{DEB}")]);
        let remedy = r.remedy.unwrap_or_default();
        assert!(
            remedy.starts_with(&format!("`apt-get install linux-modules-{DEB}`")),
            "{remedy}"
        );
        assert!(
            remedy.contains(&format!("which linux-image-{DEB} depends on")),
            "{remedy}"
        );
    }

    #[test]
    fn plain_hooks_are_judged_by_that_kernels_rule() {
        let mut k = next_kernel(b::DKMS_RPCRDMA, true, Export::Plain, DkmsState::Unknown);
        let r = run(&booting(Some(k.clone())));
        says(
            &r,
            Status::Warn,
            &["exports the hooks plain", "is not known"],
        );
        assert_eq!(seen(&r, "kernel rule"), "not judged");
        k.gpl_rule = Some(GplRule {
            enforcement: Enforcement::Enforced,
            evidence: "Linux 6.8 refuses".into(),
        });
        let r = run(&booting(Some(k)));
        says(
            &r,
            Status::Fail,
            &["refuses __symbol_get of non-GPL symbols"],
        );
        assert_eq!(seen(&r, "kernel rule"), "Linux 6.8 refuses");
    }

    #[test]
    fn is_unknown_or_skips_where_the_next_boot_cannot_be_told() {
        let r = run(&HostFacts::builder()
            .with(|f| f.boot.next_boot = Err("/boot/grub/grubenv: permission denied".into()))
            .build());
        says(&r, Status::Unknown, &["could not be read", "grubenv"]);
        let r = run(&HostFacts::builder()
            .with(|f| {
                if let Ok(nb) = &mut f.boot.next_boot {
                    nb.release = None;
                    nb.decided_by = "the default entry is a memory test".into();
                }
            })
            .build());
        says(
            &r,
            Status::Skip,
            &["no known Linux kernel (the default entry is a memory test)"],
        );
        let mut k = next_kernel(b::DKMS_RPCRDMA, true, Export::Gpl, DkmsState::Unknown);
        k.file = Some(Err("truncated".into()));
        let r = run(&booting(Some(k)));
        says(&r, Status::Unknown, &["could not be inspected: truncated"]);
    }

    #[test]
    fn names_the_other_installed_kernels() {
        let mut facts = HostFacts::builder().build();
        facts.boot.others.push(next_kernel(
            b::INBOX_RPCRDMA,
            false,
            Export::Gpl,
            DkmsState::Unknown,
        ));
        let r = run(&facts);
        says(&r, Status::Pass, &["running kernel"]);
        assert!(seen(&r, &format!("installed {NEXT}")).contains(
            "the kernel's own module (kernel/), no hooks); DKMS does not know mlnx-nfsrdma"
        ));
    }
}
