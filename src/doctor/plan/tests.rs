//! The plan for the stacks and failures doctor meets most.

use super::*;
use crate::checks::catalogue::{
    nvidia_fs_loaded, rpcrdma_fresh, rpcrdma_hook_export, rpcrdma_hooks,
};
use crate::checks::CheckId;
use crate::doctor::stack::{DkmsEntry, Ofed};
use crate::doctor::stacks::test_support::stack;
use crate::doctor::stacks::{inbox, mofed_dkms, mofed_package, vastnfs};
use crate::host::platform::nvidia_fs::GpuDriverFlavour;

/// Results as the checks give them: a failure carries the fix its check names for it.
fn results(pairs: &[(CheckId, Status)]) -> Vec<CheckResult> {
    let fix_of = |id: CheckId| match id {
        nvidia_fs_loaded::ID => Fix::NvidiaFs,
        rpcrdma_hooks::ID => Fix::HookedRpcrdma,
        rpcrdma_hook_export::ID => Fix::GplExport,
        rpcrdma_fresh::ID => Fix::ReloadRpcrdma,
        other => unreachable!("no fix table entry for {other}"),
    };
    pairs
        .iter()
        .map(|(id, st)| {
            let r = CheckResult::new(*id, *st, "x");
            if *st == Status::Fail {
                r.fix(fix_of(*id))
            } else {
                r
            }
        })
        .collect()
}

fn titles(steps: &[Step]) -> Vec<&str> {
    steps.iter().map(|s| s.title.as_str()).collect()
}

fn plan_for(s: &Stack, checks: &[CheckResult], usage: &RpcrdmaUsage) -> Vec<Step> {
    plan(&PlanInput {
        stack: s,
        checks,
        usage,
        compat_allowed: false,
        gds_mount: None,
        next_boot: None,
        modules_locked: false,
    })
}

#[test]
fn inbox_rpcrdma_gets_the_doca_install() {
    let s = stack(Family::Debian, Ofed::None, &inbox::Inbox);
    let c = results(&[
        (nvidia_fs_loaded::ID, Status::Pass),
        (rpcrdma_hooks::ID, Status::Fail),
    ]);
    let p = plan_for(&s, &c, &RpcrdmaUsage::default());
    assert_eq!(
        titles(&p),
        vec!["Install NVIDIA's NFS over RDMA client with GDS support"]
    );
    assert!(
        p[0].commands[0].contains("mlnx-nfsrdma-dkms"),
        "{:?}",
        p[0].commands
    );
}

#[test]
fn mlnx_ofed_gets_installer_flags() {
    let s = stack(
        Family::Rhel,
        Ofed::MlnxOfed {
            version: "23.10-0.5.5.0".into(),
        },
        &inbox::Inbox,
    );
    let c = results(&[(rpcrdma_hooks::ID, Status::Fail)]);
    let p = plan_for(&s, &c, &RpcrdmaUsage::default());
    assert!(p[0].commands[0].contains("--with-nfsrdma --enable-gds --add-kernel-support --dkms"));
}

#[test]
fn dkms_build_without_gds_is_rebuilt_then_indexed_and_reloaded() {
    let mut s = stack(
        Family::Debian,
        Ofed::Doca {
            version: "24.10-1.1.4.0.200".into(),
        },
        &mofed_dkms::MofedDkms,
    );
    s.ofa_gds_config = Some((
        "/usr/src/ofa_kernel/x86_64/6.8.0-45-generic/configure.mk.kernel".into(),
        false,
    ));
    s.dkms = vec![DkmsEntry {
        module: "mlnx-nfsrdma".into(),
        version: "24.10.OFED.24.10.1.1.4.0".into(),
        kernel: Some("6.8.0-45-generic".into()),
        arch: Some("x86_64".into()),
        state: "installed".into(),
    }];
    let c = results(&[(rpcrdma_hooks::ID, Status::Fail)]);
    let p = plan_for(&s, &c, &RpcrdmaUsage::default());
    assert_eq!(
        titles(&p),
        vec![
            "Rebuild mlnx-ofa_kernel and mlnx-nfsrdma with GDS support",
            "Rebuild mlnx-nfsrdma for the running kernel",
            "Refresh the module index",
            "Update the initramfs",
            "Reload rpcrdma",
        ]
    );
    assert!(p[0].why.contains("CONFIG_GPU_DIRECT_STORAGE"));
    assert_eq!(
        p[1].action.as_ref().unwrap().command_lines(),
        vec![
            "dkms remove mlnx-nfsrdma/24.10.OFED.24.10.1.1.4.0 -k 6.8.0-45-generic",
            "dkms install mlnx-nfsrdma/24.10.OFED.24.10.1.1.4.0 -k 6.8.0-45-generic --force",
        ]
    );
    assert_eq!(
        p[3].commands,
        vec!["update-initramfs -u -k 6.8.0-45-generic"]
    );
}

#[test]
fn stale_module_in_use_means_reboot_not_reload() {
    let s = stack(Family::Rhel, Ofed::None, &mofed_package::MofedPackage);
    let c = results(&[
        (rpcrdma_hooks::ID, Status::Pass),
        (rpcrdma_fresh::ID, Status::Fail),
    ]);
    let busy = RpcrdmaUsage {
        refcount: Some(2),
        rdma_mounts: vec!["/mnt/data".into()],
        nfsd_rdma_listener: false,
    };
    let p = plan_for(&s, &c, &busy);
    assert_eq!(titles(&p), vec!["Reboot to load the new rpcrdma"]);
    assert!(p[0].why.contains("/mnt/data"));
    assert!(p[0].action.is_none());
    let p = plan_for(&s, &c, &RpcrdmaUsage::default());
    assert_eq!(p[0].action, Some(Action::ReloadRpcrdma));
}

#[test]
fn plain_exports_get_the_gpl_upgrade() {
    let s = stack(
        Family::Rhel,
        Ofed::MlnxOfed {
            version: "23.10-0.5.5.0".into(),
        },
        &mofed_package::MofedPackage,
    );
    let c = results(&[
        (rpcrdma_hooks::ID, Status::Pass),
        (rpcrdma_hook_export::ID, Status::Fail),
    ]);
    let p = plan_for(&s, &c, &RpcrdmaUsage::default());
    assert_eq!(
        titles(&p),
        vec!["Install an rpcrdma that exports the hooks GPL"]
    );
    assert!(p[0].commands[0].contains("dnf upgrade"));
    let v = stack(Family::Debian, Ofed::None, &vastnfs::Vastnfs);
    let p = plan_for(&v, &c, &RpcrdmaUsage::default());
    assert_eq!(titles(&p), vec!["Upgrade the VAST NFS client"]);
}

#[test]
fn gpu_operator_nodes_get_the_cluster_policy() {
    let mut s = stack(
        Family::Debian,
        Ofed::Doca {
            version: "24.10-1".into(),
        },
        &mofed_dkms::MofedDkms,
    );
    s.gpu_operator = true;
    s.kubernetes = true;
    let c = results(&[(nvidia_fs_loaded::ID, Status::Fail)]);
    let p = plan_for(&s, &c, &RpcrdmaUsage::default());
    assert_eq!(titles(&p), vec!["Enable GDS in the GPU Operator"]);
    let yaml = p[0]
        .commands
        .iter()
        .find(|c| c.contains("kind: ClusterPolicy"))
        .unwrap();
    assert!(yaml.contains("kernelModuleType: open"));
    assert!(yaml.contains("useHostMofed: true"));
    assert!(yaml.contains("gds:\n    enabled: true"));
}

#[test]
fn proprietary_driver_is_switched_before_installing_nvidia_fs() {
    let mut s = stack(Family::Debian, Ofed::None, &inbox::Inbox);
    s.gpu_driver.flavour = GpuDriverFlavour::Proprietary;
    let c = results(&[(nvidia_fs_loaded::ID, Status::Fail)]);
    let p = plan_for(&s, &c, &RpcrdmaUsage::default());
    assert_eq!(
        titles(&p),
        vec![
            "Switch to NVIDIA's open GPU kernel modules",
            "Install the GDS kernel driver (nvidia-fs)",
            "Load nvidia_fs",
        ]
    );
}

/// nvidia-fs 2.17.5 is on the known-bad list (corruption for buffers of 4 GiB or more): its
/// warning gets a plan step naming the release that fixed it and the family's upgrade.
#[test]
fn a_known_bad_nvidia_fs_gets_its_upgrade() {
    use crate::checks::check::Scope;
    use crate::host::HostFacts;
    let facts = HostFacts::builder()
        .with(|f| {
            f.nvidia_fs.loaded = true;
            f.nvidia_fs.version = Some("2.17.5".into());
        })
        .build();
    let Scope::Node(run) = known_bad_versions::CHECK.scope else {
        unreachable!("known-bad-versions is a node check")
    };
    let check = run(&facts);
    assert_eq!(check.status, Status::Warn, "{check:?}");
    let s = stack(Family::Rhel, Ofed::None, &inbox::Inbox);
    let p = plan_for(&s, &[check], &RpcrdmaUsage::default());
    assert_eq!(
        titles(&p),
        vec!["Upgrade nvidia-fs to 2.28.4 or later (advisory)"]
    );
    assert!(
        p[0].commands[0].starts_with("dnf upgrade nvidia-gds nvidia-fs-dkms"),
        "{:?}",
        p[0].commands
    );
}

#[test]
fn a_kernel_that_loads_no_more_modules_is_said_first_and_nothing_is_run() {
    let s = stack(Family::Debian, Ofed::None, &inbox::Inbox);
    let c = results(&[
        (nvidia_fs_loaded::ID, Status::Pass),
        (rpcrdma_hooks::ID, Status::Fail),
    ]);
    let unlocked = plan_for(&s, &c, &RpcrdmaUsage::default());
    let locked = plan(&PlanInput {
        stack: &s,
        checks: &c,
        usage: &RpcrdmaUsage::default(),
        compat_allowed: false,
        gds_mount: None,
        next_boot: None,
        modules_locked: true,
    });
    assert_eq!(locked.len(), unlocked.len() + 1);
    assert_eq!(
        locked[0].title,
        "This kernel loads no more modules: the steps below take effect only after a reboot"
    );
    assert!(locked[0].why.contains("kernel.modules_disabled is 1"));
    assert!(
        locked.iter().all(|s| s.is_manual()),
        "provision --apply runs nothing"
    );
    assert_eq!(titles(&locked[1..]), titles(&unlocked));
    // Nothing to load, nothing said: a plan without module steps is left as it is.
    let only_proof = plan(&PlanInput {
        stack: &s,
        checks: &results(&[(nvidia_fs_loaded::ID, Status::Pass)]),
        usage: &RpcrdmaUsage::default(),
        compat_allowed: true,
        gds_mount: None,
        next_boot: None,
        modules_locked: true,
    });
    assert_eq!(
        titles(&only_proof),
        vec!["Prove GDS once with compatibility mode off"]
    );
}
