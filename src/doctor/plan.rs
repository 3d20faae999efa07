//! The remediation plan: ordered steps, each with the reason and the exact commands for the stack
//! doctor found. Steps that are safe to run unattended carry an [`Action`], which
//! `nfs-gds provision --apply` executes; everything else is for the admin to do.

use serde::Serialize;

use super::stack::{Family, Ofed, Provenance, Stack};
use super::usage::RpcrdmaUsage;
use std::collections::BTreeSet;

use crate::checks::{CheckResult, Fix, Status};
use crate::host::boot::boot_kernels::KernelRpcrdma;
use crate::host::boot::dkms::{dkms_state, MLNX_NFSRDMA};
use crate::host::modules::modprobe_config::Origin;
use crate::host::platform::nvidia_fs::GpuDriverFlavour;

/// A step `provision --apply` may run by itself: idempotent, and never disruptive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// `modprobe NAME`.
    LoadModule { module: String },
    /// Rebuild and reinstall a DKMS module for one kernel.
    DkmsRebuild {
        module: String,
        version: String,
        kernel: String,
    },
    /// `depmod -a KERNEL`.
    Depmod { kernel: String },
    /// Regenerate the initramfs for one kernel.
    UpdateInitramfs { family: Family, kernel: String },
    /// `modprobe -r rpcrdma && modprobe rpcrdma`, only while nothing uses it.
    ReloadRpcrdma,
}

impl Action {
    /// The commands the action runs, as `(program, args)`.
    pub fn commands(&self) -> Vec<(String, Vec<String>)> {
        let c = |p: &str, a: &[&str]| (p.to_string(), a.iter().map(|s| s.to_string()).collect());
        match self {
            Action::LoadModule { module } => vec![c("modprobe", &[module])],
            Action::DkmsRebuild {
                module,
                version,
                kernel,
            } => {
                let mv = format!("{module}/{version}");
                vec![
                    c("dkms", &["remove", &mv, "-k", kernel]),
                    c("dkms", &["install", &mv, "-k", kernel, "--force"]),
                ]
            }
            Action::Depmod { kernel } => vec![c("depmod", &["-a", kernel])],
            Action::UpdateInitramfs { family, kernel } => match family {
                Family::Debian => vec![c("update-initramfs", &["-u", "-k", kernel])],
                _ => vec![c("dracut", &["-f", "--kver", kernel])],
            },
            Action::ReloadRpcrdma => vec![
                c("modprobe", &["-r", "rpcrdma"]),
                c("modprobe", &["rpcrdma"]),
            ],
        }
    }

    pub fn command_lines(&self) -> Vec<String> {
        self.commands()
            .into_iter()
            .map(|(p, a)| std::iter::once(p).chain(a).collect::<Vec<_>>().join(" "))
            .collect()
    }
}

/// One step of the plan. A step without an [`Action`] cannot be automated (it needs a reboot, a
/// package choice or a cluster change); the JSON says so as `"manual": true`, derived from the
/// action so the two cannot disagree.
#[derive(Debug, Clone)]
pub struct Step {
    pub title: String,
    /// Why this step is needed, tied to what doctor saw.
    pub why: String,
    /// Commands to run, in order (shell syntax, for people).
    pub commands: Vec<String>,
    /// Set when `provision --apply` may run it.
    pub action: Option<Action>,
}

impl Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = ser.serialize_struct("Step", 5)?;
        st.serialize_field("title", &self.title)?;
        st.serialize_field("why", &self.why)?;
        st.serialize_field("commands", &self.commands)?;
        if let Some(action) = &self.action {
            st.serialize_field("action", action)?;
        } else {
            st.skip_field("action")?;
        }
        st.serialize_field("manual", &self.is_manual())?;
        st.end()
    }
}

impl Step {
    /// No `provision --apply` can run it.
    pub fn is_manual(&self) -> bool {
        self.action.is_none()
    }

    fn manual(title: impl Into<String>, why: impl Into<String>, commands: Vec<String>) -> Self {
        Step {
            title: title.into(),
            why: why.into(),
            commands,
            action: None,
        }
    }

    fn auto(title: impl Into<String>, why: impl Into<String>, action: Action) -> Self {
        Step {
            title: title.into(),
            why: why.into(),
            commands: action.command_lines(),
            action: Some(action),
        }
    }
}

/// The ClusterPolicy fragment that turns GDS on with the GPU Operator.
pub fn cluster_policy_yaml(host_mofed: bool) -> String {
    [
        "apiVersion: nvidia.com/v1",
        "kind: ClusterPolicy",
        "metadata:",
        "  name: cluster-policy",
        "spec:",
        "  driver:",
        "    kernelModuleType: open      # nvidia-fs >= 2.17.5 needs the open GPU kernel modules",
        "    rdma:",
        "      enabled: true",
        &format!(
            "      useHostMofed: {host_mofed}{}",
            "   # true when DOCA-OFED/MLNX_OFED is installed on the host"
        ),
        "  gds:",
        "    enabled: true               # runs the nvidia-fs container that loads nvidia_fs",
        "",
    ]
    .join("\n")
}

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
}

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
    let kernel = s
        .kernel_release
        .clone()
        .unwrap_or_else(|| "$(uname -r)".into());
    let mut steps = Vec::new();
    let proprietary = s.gpu_driver.flavour == GpuDriverFlavour::Proprietary;
    let operator = s.gpu_operator || s.kubernetes;
    if fixes.contains(&Fix::GpuDriver)
        || (fixes.contains(&Fix::NvidiaFs) && proprietary && !operator)
    {
        steps.push(gpu_driver_step(s));
    }
    if fixes.contains(&Fix::NvidiaFs) {
        steps.extend(nvidia_fs_steps(s));
    }
    let mut rebuilt = false;
    if fixes.contains(&Fix::HookedRpcrdma) {
        rebuilt = hooked_rpcrdma_steps(s, &kernel, &mut steps);
    }
    if fixes.contains(&Fix::GplExport) {
        steps.push(gpl_export_step(s));
    }
    if fixes.contains(&Fix::AbiRpcrdma) {
        rebuilt |= abi_rpcrdma_steps(s, &kernel, fixes.contains(&Fix::HookedRpcrdma), &mut steps);
    }
    if fixes.contains(&Fix::SignModules) {
        steps.push(sign_modules_step(s, &kernel));
    }
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
    if s.kubernetes && fixes.contains(&Fix::HookedRpcrdma) {
        steps.push(Step::manual(
            "Let the Network Operator's DOCA driver load NFS-RDMA",
            "the DOCA driver container skips mlnx-nfsrdma unless ENABLE_NFSRDMA is set",
            vec!["set `ENABLE_NFSRDMA=true` in NicClusterPolicy spec.ofedDriver.env".into()],
        ));
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
    steps
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

/// nvidia_fs is not loaded: the GPU Operator's switch, or the packages (and the open GPU
/// modules nvidia-fs needs).
fn nvidia_fs_steps(s: &Stack) -> Vec<Step> {
    let mut steps = Vec::new();
    if s.gpu_operator || s.kubernetes {
        steps.push(Step::manual(
            "Enable GDS in the GPU Operator",
            "nvidia_fs is not loaded and this node is managed by Kubernetes: the GPU Operator loads it from its nvidia-fs container only when `gds.enabled` is set",
            vec![
                "kubectl patch clusterpolicies.nvidia.com/cluster-policy --type merge -p '{\"spec\":{\"gds\":{\"enabled\":true},\"driver\":{\"kernelModuleType\":\"open\",\"rdma\":{\"enabled\":true}}}}'".into(),
                "# or apply this ClusterPolicy fragment:".into(),
                cluster_policy_yaml(!matches!(s.ofed, Ofed::None)),
            ],
        ));
    } else {
        steps.push(Step::manual(
            "Install the GDS kernel driver (nvidia-fs)",
            "nvidia_fs is not loaded; without it GPU reads over NFS always go through CPU bounce buffers",
            match s.family {
                Family::Debian => vec!["apt-get install nvidia-gds   # pulls nvidia-fs-dkms".into()],
                Family::Rhel => vec!["dnf install nvidia-gds   # pulls nvidia-fs-dkms".into()],
                _ => vec!["install NVIDIA's nvidia-gds / nvidia-fs-dkms package for this distribution".into()],
            },
        ));
        steps.push(Step::auto(
            "Load nvidia_fs",
            "load the driver now (it is loaded at boot once installed)",
            Action::LoadModule {
                module: "nvidia-fs".into(),
            },
        ));
    }
    steps
}

/// nvidia.ko is missing while a GPU is on the bus, or it is the proprietary flavour.
fn gpu_driver_step(s: &Stack) -> Step {
    if s.gpu_driver.loaded {
        return Step::manual(
            "Switch to NVIDIA's open GPU kernel modules",
            "nvidia-fs 2.17.5 and later links nvidia_p2p_* directly and loads only against the open kernel modules; the proprietary nvidia.ko is loaded",
            match s.family {
                Family::Debian => vec!["apt-get install nvidia-open   # or nvidia-driver-<version>-open on Ubuntu".into()],
                _ => vec!["dnf module install nvidia-driver:<version>-open".into()],
            },
        );
    }
    let kernel = s.kernel_release.as_deref().unwrap_or("$(uname -r)");
    Step::manual(
        "Load NVIDIA's GPU driver",
        "an NVIDIA GPU is on the PCI bus but nvidia.ko is not loaded: the usual state after a kernel upgrade where the driver's DKMS build failed",
        vec![
            "dkms status | grep -i nvidia".into(),
            format!("dkms autoinstall -k {kernel}   # builds the open modules for this kernel; its log says why if it fails"),
            "modprobe nvidia".into(),
        ],
    )
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
        _ => vec!["# add iommu=pt to the kernel command line in the boot loader's configuration, then reboot".into()],
    };
    Step::manual(
        "Boot with the IOMMU in passthrough (advisory; not on Grace)",
        "NVIDIA supports GDS with the IOMMU off or in passthrough; translated DMA through the root port is slow or fails",
        commands,
    )
}

/// The rpcrdma modprobe loads has no hooks: what installs or rebuilds one for this stack.
/// Returns whether a step rebuilds module files (which then need depmod and an initramfs).
fn hooked_rpcrdma_steps(s: &Stack, kernel: &str, steps: &mut Vec<Step>) -> bool {
    let mut rebuilt = false;
    match s.provenance {
        Provenance::Inbox | Provenance::Missing | Provenance::BuiltIn | Provenance::OtherOutOfTree => {
            steps.push(install_nfsrdma_step(s));
        }
        Provenance::MofedDkms | Provenance::MofedPackage => {
            let configured = s.ofa_gds_config.as_ref();
            let why = match configured {
                Some((path, false)) => format!("{path} does not set CONFIG_GPU_DIRECT_STORAGE=y: mlnx-ofa_kernel was configured without GDS, so mlnx-nfsrdma compiled no hooks"),
                Some((path, true)) => format!("{path} sets CONFIG_GPU_DIRECT_STORAGE=y, yet the rpcrdma modprobe loads has no hooks: the installed module is an older or foreign build"),
                None => "the installed mlnx-nfsrdma was built without GDS support".to_string(),
            };
            steps.push(Step::manual(
                "Rebuild mlnx-ofa_kernel and mlnx-nfsrdma with GDS support",
                why,
                rebuild_with_gds_commands(s, kernel),
            ));
            if let Some(e) = s.dkms_entry("mlnx-nfsrdma") {
                steps.push(Step::auto(
                    "Rebuild mlnx-nfsrdma for the running kernel",
                    "DKMS rebuilds rpcrdma against the (re)configured mlnx-ofa_kernel",
                    Action::DkmsRebuild {
                        module: e.module.clone(),
                        version: e.version.clone(),
                        kernel: kernel.to_string(),
                    },
                ));
                rebuilt = true;
            }
        }
        Provenance::Vastnfs => steps.push(Step::manual(
            "Reinstall the VAST NFS client for this kernel",
            "vastnfs compiles the hooks in unconditionally, so a vastnfs rpcrdma without them is a damaged or foreign build",
            vec!["reinstall the vastnfs package built for this kernel (see VAST's install guide), then reboot".into()],
        )),
        Provenance::NvidiaKernel => steps.push(Step::manual(
            "Update the linux-nvidia kernel",
            "NVIDIA's kernels compile the hooks into the inbox rpcrdma; this one has none",
            vec!["apt-get install --only-upgrade linux-nvidia   # then reboot".into()],
        )),
    }
    rebuilt
}

/// The rpcrdma modprobe loads was built against other ib_core/rdma_cm CRCs than the installed
/// ones. Returns whether a step rebuilds module files. `hooked` says the hooks step already
/// installs a new rpcrdma (then only a rebuild-specific step is added).
fn abi_rpcrdma_steps(s: &Stack, kernel: &str, hooked: bool, steps: &mut Vec<Step>) -> bool {
    let why = "the rpcrdma modprobe loads was built against other ib_core/rdma_cm symbol CRCs than the installed modules export: modprobe refuses it (`disagrees about version of symbol`) and mount.nfs then reports a misleading \"incorrect mount option\"";
    match s.provenance {
        Provenance::Inbox
        | Provenance::Missing
        | Provenance::BuiltIn
        | Provenance::OtherOutOfTree => {
            if !hooked {
                let mut step = install_nfsrdma_step(s);
                step.title = "Install the mlnx-nfsrdma built for this MOFED".into();
                step.why = why.into();
                steps.push(step);
            }
            false
        }
        Provenance::MofedDkms => match s.dkms_entry("mlnx-nfsrdma") {
            Some(e) if !hooked => {
                steps.push(Step::auto(
                    "Rebuild mlnx-nfsrdma against the installed mlnx-ofa_kernel",
                    why,
                    Action::DkmsRebuild {
                        module: e.module.clone(),
                        version: e.version.clone(),
                        kernel: kernel.to_string(),
                    },
                ));
                true
            }
            Some(_) => false,
            None => {
                steps.push(Step::manual(
                    "Rebuild mlnx-nfsrdma against the installed mlnx-ofa_kernel",
                    why,
                    vec![format!("dkms install mlnx-nfsrdma/<version> -k {kernel} --force   # the version of `dkms status mlnx-nfsrdma`")],
                ));
                false
            }
        },
        Provenance::MofedPackage => {
            steps.push(Step::manual(
                "Install the mlnx-nfsrdma package of the installed MOFED version",
                why,
                vec![
                    "ofed_info -s   # the installed MLNX_OFED / DOCA-OFED version".into(),
                    match s.family {
                        Family::Debian => "apt-get install --reinstall mlnx-nfsrdma   # from the same DOCA-Host / MLNX_OFED repository".into(),
                        _ => "dnf reinstall mlnx-nfsrdma   # from the same DOCA-Host / MLNX_OFED repository".into(),
                    },
                ],
            ));
            false
        }
        Provenance::Vastnfs | Provenance::NvidiaKernel => {
            steps.push(Step::manual(
                "Reinstall rpcrdma built against the installed RDMA stack",
                why,
                vec!["reinstall the package that provides rpcrdma, built for this kernel and the installed MOFED".into()],
            ));
            false
        }
    }
}

/// The next boot starts a kernel whose module tree has no hooked rpcrdma: build mlnx-nfsrdma
/// for it (DKMS, as `dkms status` or the DKMS tree knows it) and refresh its initramfs.
fn next_boot_step(s: &Stack, k: &KernelRpcrdma) -> Step {
    let rel = &k.kernel.release;
    let from_status = dkms_state(&s.dkms, MLNX_NFSRDMA, rel).fix(MLNX_NFSRDMA, rel);
    let mut commands: Vec<String> = match from_status.or_else(|| k.dkms_fix()) {
        Some(cmd) => vec![format!("{cmd}   # needs the headers of {rel}")],
        None => install_nfsrdma_step(s).commands,
    };
    commands.push(match s.family {
        Family::Debian => format!("update-initramfs -u -k {rel}"),
        _ => format!("dracut -f --kver {rel}"),
    });
    Step::manual(
        format!("Build mlnx-nfsrdma for {rel} before rebooting"),
        format!("the next boot starts {rel}, whose modprobe would load an rpcrdma without the nvfs hooks (or none): GDS silently falls back after the reboot"),
        commands,
    )
}

/// The kernel enforces module signatures and a GDS module file is unsigned (or its key is
/// not enrolled): DKMS signs what it builds with its MOK, which the firmware must trust.
fn sign_modules_step(s: &Stack, kernel: &str) -> Step {
    let mut commands = vec![
        "dkms generate_mok   # DKMS 3.x: creates /var/lib/dkms/mok.key and mok.pub unless they exist".to_string(),
    ];
    for package in ["mlnx-nfsrdma", "nvidia-fs"] {
        if let Some(e) = s.dkms_entry(package) {
            commands.push(format!(
                "dkms remove {p}/{v} -k {kernel} && dkms install {p}/{v} -k {kernel}   # rebuilt, and signed with that key",
                p = e.module,
                v = e.version
            ));
        }
    }
    if s.provenance == Provenance::MofedPackage {
        commands.push("# prebuilt MLNX_OFED / DOCA kmods are signed by NVIDIA: enroll the public key the package ships instead".into());
    }
    commands.push("mokutil --import /var/lib/dkms/mok.pub   # asks for a one-time password".into());
    commands.push(
        "systemctl reboot   # then choose Enroll MOK in the MOK manager and enter that password"
            .into(),
    );
    Step::manual(
        "Sign the GDS modules with an enrolled Machine Owner Key",
        "the kernel enforces module signatures and the module modprobe would load is not signed by a key it trusts: it is refused with `Key was rejected by service`",
        commands,
    )
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

/// For a machine with no NVIDIA stack at all: what a GDS node would need, not fixes to apply.
pub fn gds_node_needs(s: &Stack) -> Vec<Step> {
    let driver = match s.family {
        Family::Debian => "apt-get install nvidia-open nvidia-gds   # from NVIDIA's CUDA repository",
        Family::Rhel => "dnf module install nvidia-driver:open-dkms && dnf install nvidia-gds   # from NVIDIA's CUDA repository",
        _ => "install NVIDIA's open GPU kernel modules and nvidia-gds (nvidia-fs)",
    };
    vec![
        Step::manual(
            "If this node should use GDS: an NVIDIA GPU with the open kernel modules, and nvidia-fs",
            "GDS moves NFS data straight into GPU memory through nvidia_fs, which needs NVIDIA's open GPU kernel modules",
            vec![driver.to_string()],
        ),
        install_nfsrdma_step(s),
        Step::manual(
            "Mount with nfs-gds so a missing piece fails loudly",
            "the mount helper checks all of the above before mounting over RDMA, and verifies `xprt: rdma` afterwards",
            vec![
                "# an /etc/fstab line, with your server, export and mount point:".into(),
                "# server:/export  /mnt/data  nfs-gds  _netdev,vers=4.2  0 0".into(),
            ],
        ),
    ]
}

fn install_nfsrdma_step(s: &Stack) -> Step {
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
        _ => vec!["install DOCA-OFED with its NFS over RDMA package (mlnx-nfsrdma) built with GDS support".into()],
    };
    Step::manual(
        "Install NVIDIA's NFS over RDMA client with GDS support",
        why,
        commands,
    )
}

fn rebuild_with_gds_commands(s: &Stack, kernel: &str) -> Vec<String> {
    match &s.ofed {
        Ofed::MlnxOfed { .. } => vec![
            "./mlnxofedinstall --with-nvmf --with-nfsrdma --enable-gds --add-kernel-support --dkms"
                .into(),
        ],
        _ => {
            let ofa = s
                .dkms_entry("mlnx-ofed-kernel")
                .map(|e| format!("mlnx-ofed-kernel/{}", e.version))
                .unwrap_or_else(|| "mlnx-ofed-kernel/<version>".into());
            let nfs = s
                .dkms_entry("mlnx-nfsrdma")
                .map(|e| format!("mlnx-nfsrdma/{}", e.version))
                .unwrap_or_else(|| "mlnx-nfsrdma/<version>".into());
            vec![
                "# make sure mlnx-ofa_kernel is configured --with-gds (dkms.conf: `#:# ExtraOption --with-gds`)".into(),
                format!("dkms remove {ofa} -k {kernel} && dkms install {ofa} -k {kernel}"),
                format!("dkms remove {nfs} -k {kernel} && dkms install {nfs} -k {kernel}"),
            ]
        }
    }
}

fn gpl_export_step(s: &Stack) -> Step {
    let why = "the hooks are exported with plain EXPORT_SYMBOL and this kernel lets __symbol_get take only GPL exports (since 6.6, and in stable backports), so nvidia-fs never registers them";
    match s.provenance {
        Provenance::Vastnfs => Step::manual(
            "Upgrade the VAST NFS client",
            format!("{why}; vastnfs 4.0 exports them plain"),
            vec!["install a vastnfs release that exports the nvfs hooks GPL (ask VAST support for your kernel)".into()],
        ),
        _ => {
            let mut commands = vec![match s.family {
                Family::Debian => "apt-get install --only-upgrade doca-ofed mlnx-nfsrdma-dkms   # 24.04 or later exports GPL".into(),
                Family::Rhel => "dnf upgrade doca-ofed mlnx-nfsrdma   # 24.04 or later exports GPL".into(),
                _ => "upgrade MLNX_OFED / DOCA-OFED to 24.04 or later".into(),
            }];
            if let Some(e) = s.dkms_entry("mlnx-nfsrdma") {
                commands.push(format!(
                    "# if this release still exports plain (reported for DOCA 26.01): sed -i 's/EXPORT_SYMBOL(/EXPORT_SYMBOL_GPL(/' /usr/src/mlnx-nfsrdma-{v}/nvfs_rpc_rdma.c && dkms remove mlnx-nfsrdma/{v} -k {k} && dkms install mlnx-nfsrdma/{v} -k {k}   (unofficial)",
                    v = e.version,
                    k = s.kernel_release.as_deref().unwrap_or("$(uname -r)")
                ));
            }
            Step::manual("Install an rpcrdma that exports the hooks GPL", why, commands)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::{
        nvidia_fs_loaded, rpcrdma_fresh, rpcrdma_hook_export, rpcrdma_hooks,
    };
    use crate::checks::CheckId;
    use crate::doctor::stack::{DkmsEntry, OsRelease};
    use crate::host::platform::nvidia_fs::{GpuDriver, GpuDriverFlavour};

    fn stack(family: Family, ofed: Ofed, provenance: Provenance) -> Stack {
        Stack {
            os: OsRelease::default(),
            family,
            kernel_release: Some("6.8.0-45-generic".into()),
            arch: Some("x86_64".into()),
            ofed,
            dkms: vec![],
            rpcrdma_package: None,
            provenance,
            vastnfs_version: None,
            ofa_gds_config: None,
            gpu_driver: GpuDriver {
                loaded: true,
                version: Some("570.86".into()),
                flavour: GpuDriverFlavour::Open,
                evidence: None,
            },
            gpu_operator: false,
            operator_validations: vec![],
            kubernetes: false,
        }
    }

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
        })
    }

    #[test]
    fn inbox_rpcrdma_gets_the_doca_install() {
        let s = stack(Family::Debian, Ofed::None, Provenance::Inbox);
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
            Provenance::Inbox,
        );
        let c = results(&[(rpcrdma_hooks::ID, Status::Fail)]);
        let p = plan_for(&s, &c, &RpcrdmaUsage::default());
        assert!(
            p[0].commands[0].contains("--with-nfsrdma --enable-gds --add-kernel-support --dkms")
        );
    }

    #[test]
    fn dkms_build_without_gds_is_rebuilt_then_indexed_and_reloaded() {
        let mut s = stack(
            Family::Debian,
            Ofed::Doca {
                version: "24.10-1.1.4.0.200".into(),
            },
            Provenance::MofedDkms,
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
        let s = stack(Family::Rhel, Ofed::None, Provenance::MofedPackage);
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
            Provenance::MofedPackage,
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
        let v = stack(Family::Debian, Ofed::None, Provenance::Vastnfs);
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
            Provenance::MofedDkms,
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
        let mut s = stack(Family::Debian, Ofed::None, Provenance::Inbox);
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
}
