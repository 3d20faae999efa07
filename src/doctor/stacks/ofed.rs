//! NVIDIA's OFED recipes per distribution family, shared by the stacks: installing mlnx-nfsrdma
//! (the MLNX_OFED installer, or DOCA-OFED's repository packages), rebuilding mlnx-ofa_kernel and
//! mlnx-nfsrdma with GDS, and upgrading to a release that exports the hooks GPL.

use super::remedy::Remedy;
use crate::doctor::stack::{Family, Ofed, Stack};
use crate::doctor::step::{Action, Step};

/// Why plain exports of the hooks fail on this kernel.
pub const GPL_WHY: &str = "the hooks are exported with plain EXPORT_SYMBOL and this kernel lets __symbol_get take only GPL exports (since 6.6, and in stable backports), so nvidia-fs never registers them";

/// Install NVIDIA's mlnx-nfsrdma with GDS support: MLNX_OFED's installer where it is installed,
/// else DOCA-OFED from NVIDIA's repository.
pub fn install_nfsrdma_step(s: &Stack) -> Step {
    let why = "the rpcrdma modprobe loads is the distribution's own (or none), which never has the nvfs hooks: NVIDIA's mlnx-nfsrdma built with GDS support is needed";
    let commands = match (&s.ofed, s.family) {
        (Ofed::MlnxOfed { .. }, _) => vec![
            "./mlnxofedinstall --with-nvmf --with-nfsrdma --enable-gds --add-kernel-support --dkms".into(),
            "# --enable-gds is implied since MLNX_OFED 5.3; MLNX_OFED ends at 24.10, DOCA-OFED replaces it".into(),
        ],
        (_, Family::Debian) => vec![
            "apt-get install doca-ofed mlnx-nfsrdma-dkms   # after adding NVIDIA's DOCA-Host repository".into(),
        ],
        (_, Family::Rhel) => vec![
            "dnf install doca-ofed mlnx-nfsrdma   # after adding NVIDIA's DOCA-Host repository (DKMS flavour since DOCA 3.2)".into(),
        ],
        (_, Family::Suse) => vec![
            "zypper install doca-ofed mlnx-nfsrdma   # after adding NVIDIA's DOCA-Host repository (DKMS flavour since DOCA 3.2)".into(),
        ],
        (_, Family::Other) => vec!["install DOCA-OFED with its NFS over RDMA package (mlnx-nfsrdma) built with GDS support".into()],
    };
    Step::manual(
        "Install NVIDIA's NFS over RDMA client with GDS support",
        why,
        commands,
    )
}

/// mlnx-nfsrdma compiled no hooks: reconfigure mlnx-ofa_kernel with GDS and rebuild both, then
/// let DKMS rebuild mlnx-nfsrdma for the running kernel when it builds it.
pub fn rebuild_with_gds(s: &Stack) -> Remedy {
    let kernel = s.kernel();
    let why = match s.ofa_gds_config.as_ref() {
        Some((path, false)) => format!("{path} does not set CONFIG_GPU_DIRECT_STORAGE=y: mlnx-ofa_kernel was configured without GDS, so mlnx-nfsrdma compiled no hooks"),
        Some((path, true)) => format!("{path} sets CONFIG_GPU_DIRECT_STORAGE=y, yet the rpcrdma modprobe loads has no hooks: the installed module is an older or foreign build"),
        None => "the installed mlnx-nfsrdma was built without GDS support".to_string(),
    };
    let mut remedy = Remedy::manual(Step::manual(
        "Rebuild mlnx-ofa_kernel and mlnx-nfsrdma with GDS support",
        why,
        rebuild_with_gds_commands(s, kernel),
    ));
    if let Some(e) = s.dkms_entry("mlnx-nfsrdma") {
        remedy.steps.push(Step::auto(
            "Rebuild mlnx-nfsrdma for the running kernel",
            "DKMS rebuilds rpcrdma against the (re)configured mlnx-ofa_kernel",
            Action::DkmsRebuild {
                module: e.module.clone(),
                version: e.version.clone(),
                kernel: kernel.to_string(),
            },
        ));
        remedy.rebuilt = true;
    }
    remedy
}

fn rebuild_with_gds_commands(s: &Stack, kernel: &str) -> Vec<String> {
    if let Ofed::MlnxOfed { .. } = &s.ofed {
        return vec![
            "./mlnxofedinstall --with-nvmf --with-nfsrdma --enable-gds --add-kernel-support --dkms"
                .into(),
        ];
    }
    let versioned = |module: &str| {
        s.dkms_entry(module)
            .map(|e| format!("{module}/{}", e.version))
            .unwrap_or_else(|| format!("{module}/<version>"))
    };
    let ofa = versioned("mlnx-ofed-kernel");
    let nfs = versioned("mlnx-nfsrdma");
    vec![
        "# make sure mlnx-ofa_kernel is configured --with-gds (dkms.conf: `#:# ExtraOption --with-gds`)".into(),
        format!("dkms remove {ofa} -k {kernel} && dkms install {ofa} -k {kernel}"),
        format!("dkms remove {nfs} -k {kernel} && dkms install {nfs} -k {kernel}"),
    ]
}

/// Upgrade NVIDIA's OFED to a release that exports the hooks GPL; for a DKMS build, the
/// unofficial one-line patch as well.
pub fn gpl_upgrade_step(s: &Stack) -> Step {
    let mut commands = vec![match s.family {
        Family::Debian => "apt-get install --only-upgrade doca-ofed mlnx-nfsrdma-dkms   # 24.04 or later exports GPL".into(),
        Family::Rhel => "dnf upgrade doca-ofed mlnx-nfsrdma   # 24.04 or later exports GPL".into(),
        Family::Suse => "zypper update doca-ofed mlnx-nfsrdma   # 24.04 or later exports GPL".into(),
        Family::Other => "upgrade MLNX_OFED / DOCA-OFED to 24.04 or later".into(),
    }];
    if let Some(e) = s.dkms_entry("mlnx-nfsrdma") {
        commands.push(format!(
            "# if this release still exports plain (reported for DOCA 26.01): sed -i 's/EXPORT_SYMBOL(/EXPORT_SYMBOL_GPL(/' /usr/src/mlnx-nfsrdma-{v}/nvfs_rpc_rdma.c && dkms remove mlnx-nfsrdma/{v} -k {k} && dkms install mlnx-nfsrdma/{v} -k {k}   (unofficial)",
            v = e.version,
            k = s.kernel()
        ));
    }
    Step::manual(
        "Install an rpcrdma that exports the hooks GPL",
        GPL_WHY,
        commands,
    )
}
