//! The remediation plan: ordered steps, each with the reason and the exact commands for the stack
//! doctor found. Steps that are safe to run unattended carry an [`Action`], which
//! `nfs-gds provision --apply` executes; everything else is for the admin to do.
//!
//! What fixes rpcrdma depends on the stack that provides it, and each stack of the
//! [catalogue](super::stacks) says so itself; the GPU side is in [`gpu`], module signing per
//! distribution in [`mok`], the steps in [`step`].

pub mod gpu;
pub mod mok;

use std::collections::BTreeSet;

use super::stack::{Family, Ofed, Stack};
use super::stacks::{self, driver_container};
use super::step::{Action, Step};
use super::usage::RpcrdmaUsage;
use crate::checks::catalogue::known_bad_versions;
use crate::checks::{CheckResult, Fix, Status};
use crate::host::boot::boot_kernels::KernelRpcrdma;
use crate::host::boot::dkms::{dkms_state, MLNX_NFSRDMA};
use crate::host::modules::modprobe_config::Origin;
use crate::host::platform::nvidia_fs::GpuDriverFlavour;
use crate::kmod::btf::FrwrGeneration;
pub use gpu::gds_node_needs;

/// Everything the planner looks at.
#[derive(Debug)]
pub struct PlanInput<'a> {
    pub stack: &'a Stack,
    pub checks: &'a [CheckResult],
    pub usage: &'a RpcrdmaUsage,
    /// `allow_compat_mode` in cufile.json lets applications fall back silently.
    pub compat_allowed: bool,
    /// A mount point meant for GDS, for the example commands.
    pub gds_mount: Option<&'a str>,
    /// The kernel the next boot starts, when it is not the running one.
    pub next_boot: Option<&'a KernelRpcrdma>,
    /// `kernel.modules_disabled` is 1: the running kernel loads no module until it reboots.
    pub modules_locked: bool,
}

/// The fixes whose steps install, load or reload a kernel module.
const LOAD_MODULES: &[Fix] = &[
    Fix::NvidiaFs,
    Fix::RebuildNvidiaFs,
    Fix::UpgradeNvidiaFs,
    Fix::HookedRpcrdma,
    Fix::GplExport,
    Fix::AbiRpcrdma,
    Fix::SignModules,
    Fix::ReloadRpcrdma,
];

/// Builds the ordered plan: one group of steps per kind of fix the failing checks call for, in
/// the order of [`Fix`], then a proof run.
pub fn plan(input: &PlanInput) -> Vec<Step> {
    let s = input.stack;
    // A failure calls for all its fixes; a warning only for the advisory ones.
    let fixes: BTreeSet<Fix> = input
        .checks
        .iter()
        .flat_map(|c| {
            c.fixes.iter().copied().filter(move |f| match c.status {
                Status::Fail => true,
                Status::Warn => f.is_advisory(),
                _ => false,
            })
        })
        .collect();
    let kernel = s.kernel().to_string();
    let mut steps = Vec::new();
    let proprietary = s.gpu_driver.flavour == GpuDriverFlavour::Proprietary;
    let operator = driver_container::manages(s);
    if fixes.contains(&Fix::GpuDriver)
        || (fixes.contains(&Fix::NvidiaFs) && proprietary && !operator)
    {
        steps.push(gpu::gpu_driver_step(s));
    }
    if fixes.contains(&Fix::NvidiaFs) {
        steps.extend(gpu::nvidia_fs_steps(s));
    }
    if fixes.contains(&Fix::RebuildNvidiaFs) {
        steps.push(gpu::rebuild_nvidia_fs_step(s));
    }
    if fixes.contains(&Fix::UpgradeNvidiaFs) {
        // The release that fixes it is the known-bad check's evidence.
        let fixed_in = input
            .checks
            .iter()
            .flat_map(|c| &c.evidence)
            .find(|e| e.what == known_bad_versions::NVIDIA_FS_FIXED_IN);
        if let Some(e) = fixed_in {
            steps.push(gpu::upgrade_nvidia_fs_step(s, &e.seen));
        }
    }
    // What fixes rpcrdma is the providing stack's to say.
    let mut rebuilt = false;
    let hooked = fixes.contains(&Fix::HookedRpcrdma);
    if hooked {
        let remedy = stacks::of(s).hooked(s);
        rebuilt = remedy.rebuilt;
        steps.extend(remedy.steps);
    }
    if fixes.contains(&Fix::GplExport) {
        steps.push(stacks::of(s).gpl_export(s));
    }
    if fixes.contains(&Fix::AbiRpcrdma) {
        let remedy = stacks::of(s).abi(s, hooked);
        rebuilt |= remedy.rebuilt;
        steps.extend(remedy.steps);
    }
    if fixes.contains(&Fix::SignModules) {
        steps.push(mok::sign_modules_step(s, &kernel));
    }
    if fixes.contains(&Fix::StackConflict) {
        let remedy = super::stacks::conflicts::removal_steps(s);
        rebuilt |= remedy.rebuilt;
        steps.extend(remedy.steps);
    }
    // Two OFED stacks in the package database are a conflict whatever the checks say.
    let remedy = super::stacks::conflicts::two_ofed_steps(s);
    rebuilt |= remedy.rebuilt;
    steps.extend(remedy.steps);
    // Rebuilt module files need a fresh index and initramfs, then the new build loaded.
    if rebuilt {
        steps.push(Step::auto(
            "Refresh the module index",
            "so modprobe resolves the rebuilt rpcrdma",
            Action::Depmod {
                kernel: kernel.clone(),
            },
        ));
        steps.push(Step::auto(
            "Update the initramfs",
            "an initramfs that carries rpcrdma would otherwise load the old build at boot",
            Action::UpdateInitramfs {
                family: s.family,
                kernel,
            },
        ));
    }
    if let (true, Some(k)) = (fixes.contains(&Fix::NextBootModules), input.next_boot) {
        steps.push(next_boot_step(s, k));
    }
    if fixes.contains(&Fix::ReloadRpcrdma) || rebuilt {
        steps.push(reload_step(input.usage));
    }
    if hooked {
        steps.extend(driver_container::nfsrdma_step(s));
    }
    for c in input
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail && c.fixes.contains(&Fix::ModprobeConfig))
    {
        let lines = c.found_at.iter().map(comment_out_command).collect();
        steps.push(Step::manual(
            "Remove the modprobe configuration that stops rpcrdma",
            c.summary.clone(),
            lines,
        ));
    }
    for c in input
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail && c.fixes.contains(&Fix::Mount))
    {
        steps.push(Step::manual(
            format!("Fix the mount ({})", c.id),
            c.summary.clone(),
            c.remedy.iter().cloned().collect(),
        ));
    }
    if fixes.contains(&Fix::IommuPassthrough) {
        steps.push(iommu_step(s));
    }
    if fixes.contains(&Fix::AcsOff) {
        steps.push(Step::manual(
            "Disable ACS on the bridges nvidia-fs lists (advisory)",
            "with ACS on a PCIe switch, P2P DMA between the NIC and the GPU under it detours through the root complex",
            vec![
                "cat /proc/driver/nvidia-fs/bridges".into(),
                "# in the BIOS, or at every boot for each bridge listed:".into(),
                "setpci -s <bridge> ECAP_ACS+0x6.w=0000".into(),
            ],
        ));
    }
    if input.compat_allowed {
        steps.push(Step::manual(
            "Prove GDS once with compatibility mode off",
            "cufile.json allows compat mode, so applications fall back to POSIX I/O silently; a strict run fails instead of falling back",
            vec![
                format!(
                    "CUFILE_ALLOW_COMPAT_MODE=false gdsio -f {}/gdsio.test -d 0 -w 4 -s 1G -x 0 -I 1",
                    input.gds_mount.unwrap_or("/mnt/data")
                ),
                "# GDS: 20+ GB/s and `XferType: GPUD`; fallback: about 6 GB/s, or `file register error` in strict mode".into(),
            ],
        ));
    }
    if input.modules_locked && LOAD_MODULES.iter().any(|f| fixes.contains(f)) {
        modules_locked_first(&mut steps);
    }
    steps
}

/// On a kernel that loads no more modules (`kernel.modules_disabled = 1`, which stays set until
/// the next boot), nothing that loads a module can work now: say so first, and leave every step
/// to the admin (`provision --apply` would only fail at its `modprobe`).
fn modules_locked_first(steps: &mut Vec<Step>) {
    for s in steps.iter_mut() {
        s.action = None;
    }
    steps.insert(
        0,
        Step::manual(
            "This kernel loads no more modules: the steps below take effect only after a reboot",
            "kernel.modules_disabled is 1 (set by a hardening profile or a sysctl once the boot's modules were loaded); it cannot be unset without rebooting, so nvidia_fs and a hooked rpcrdma can neither be loaded nor reloaded now",
            vec![
                "grep -rs modules_disabled /etc/sysctl.conf /etc/sysctl.d/ /usr/lib/sysctl.d/ /run/sysctl.d/".into(),
                "# make sure nvidia_fs and rpcrdma are loaded before it is set (/etc/modules-load.d/), or set it later in the boot; then do the steps below and reboot".into(),
            ],
        ),
    );
}

/// The command that comments out the configuration line at `origin`; the kernel command line
/// is edited in the bootloader instead.
fn comment_out_command(origin: &Origin) -> String {
    if origin.file == "/proc/cmdline" {
        "remove the `modprobe.blacklist=` entry naming rpcrdma from the kernel command line (GRUB_CMDLINE_LINUX), then update the bootloader".to_string()
    } else {
        format!("sed -i '{}s/^/# /' {}", origin.line, origin.file)
    }
}

/// The IOMMU translates the GPUs' or NICs' DMA: boot with it in passthrough.
fn iommu_step(s: &Stack) -> Step {
    let commands = match s.family {
        Family::Rhel => vec!["grubby --update-kernel=ALL --args=iommu=pt".into(), "systemctl reboot".into()],
        Family::Debian => vec![
            "# add iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub, then:".into(),
            "update-grub".into(),
            "systemctl reboot".into(),
        ],
        Family::Suse => vec![
            "# add iommu=pt to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then:".into(),
            "grub2-mkconfig -o /boot/grub2/grub.cfg".into(),
            "systemctl reboot".into(),
        ],
        Family::Other => vec!["# add iommu=pt to the kernel command line in the boot loader's configuration, then reboot".into()],
    };
    Step::manual(
        "Boot with the IOMMU in passthrough (advisory; not on Grace)",
        "NVIDIA supports GDS with the IOMMU off or in passthrough; translated DMA through the root port is slow or fails",
        commands,
    )
}

/// The next boot starts a kernel whose module tree has no hooked rpcrdma: build mlnx-nfsrdma
/// for it (DKMS, as `dkms status` or the DKMS tree knows it) and refresh its initramfs.
fn next_boot_step(s: &Stack, k: &KernelRpcrdma) -> Step {
    let rel = &k.kernel.release;
    let from_status = dkms_state(&s.dkms, MLNX_NFSRDMA, rel).fix(MLNX_NFSRDMA, rel);
    let mut commands: Vec<String> = match from_status.or_else(|| k.dkms_fix()) {
        Some(cmd) => vec![format!("{cmd}   # needs the headers of {rel}")],
        None => super::stacks::ofed::install_nfsrdma_step(s).commands,
    };
    commands.push(match s.family {
        Family::Debian => format!("update-initramfs -u -k {rel}"),
        _ => format!("dracut -f --kver {rel}"),
    });
    let mut why = format!("the next boot starts {rel}, whose modprobe would load an rpcrdma without the nvfs hooks (or none): GDS silently falls back after the reboot");
    if k.frwr_map == Some(FrwrGeneration::XdrCursor) {
        why.push_str(&format!("; {rel}'s own rpcrdma has the reworked frwr_map() of 7.2 and later (struct rpcrdma_xdr_cursor replaced rpcrdma_mr_seg), so the likely cause is a hook patch not yet re-ported to it: ask {} whether its hooked rpcrdma supports {rel}", hook_provider(s)));
        commands.push(format!("nfs-gds inspect-module /lib/modules/{rel}/kernel/net/sunrpc/xprtrdma/rpcrdma.ko.xz   # frwr_map: rpcrdma_xdr_cursor"));
    }
    Step::manual(
        format!("Build mlnx-nfsrdma for {rel} before rebooting"),
        why,
        commands,
    )
}

/// Who to ask for a hooked rpcrdma: the installed OFED, else the package of the rpcrdma the
/// running kernel loads.
fn hook_provider(s: &Stack) -> String {
    match (&s.ofed, &s.rpcrdma_package) {
        (Ofed::Doca { version }, _) => format!("NVIDIA (DOCA-OFED {version}, whose mlnx-nfsrdma carries the hooks)"),
        (Ofed::MlnxOfed { version }, _) => format!("NVIDIA (MLNX_OFED {version}; MLNX_OFED ends at 24.10, DOCA-OFED follows it)"),
        (_, Some(package)) => format!("the provider of {package}, which carries the running kernel's hooked rpcrdma"),
        _ => "the provider of the hooked rpcrdma the running kernel loads (NVIDIA for DOCA's mlnx-nfsrdma and the linux-nvidia kernels)".into(),
    }
}

/// The loaded rpcrdma is not the build on disk: reload it when nothing uses it, else reboot.
fn reload_step(usage: &RpcrdmaUsage) -> Step {
    if usage.in_use() {
        Step::manual(
            "Reboot to load the new rpcrdma",
            format!(
                "the loaded rpcrdma is not the build on disk, and it cannot be reloaded now: {}",
                usage.reasons().join("; ")
            ),
            vec!["systemctl reboot".into()],
        )
    } else {
        Step::auto(
            "Reload rpcrdma",
            "the loaded rpcrdma is not the build on disk, and nothing uses it right now",
            Action::ReloadRpcrdma,
        )
    }
}

#[cfg(test)]
mod tests;
