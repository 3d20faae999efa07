//! `nfs-gds doctor`: the whole decision tree for this node, and the fix for its stack.
//!
//! [`diagnose`] runs the same node checks as the mount helper, adds what only a human needs to
//! know (which stack provides rpcrdma, the GPU driver flavour, cufile.json, the kernel log), and
//! builds the remediation [`plan`]. Rendering is in [`render`]; the model serializes to JSON.

pub mod collect;
pub mod cufile;
pub mod fstab;
pub mod mounts;
pub mod plan;
pub mod provision;
pub mod redact;
pub mod render;
pub mod runner;
pub mod stack;
pub mod usage;

use serde::Serialize;

use crate::checks::{fix, registry, CheckResult, Verdict, SCHEMA_VERSION};
use crate::host::mounts::read_mount_table;
use crate::host::platform::nvidia_fs::GpuDriverFlavour;
use crate::host::{HostError, HostFacts};
use crate::policy::Policy;
use crate::verdict;
use plan::{PlanInput, Step};
use runner::Runner;
use stack::{Ofed, Provenance, Stack};
use usage::RpcrdmaUsage;

/// Something doctor noticed that is not a pass/fail check: context for the admin.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub topic: String,
    pub text: String,
}

fn finding(topic: &str, text: impl Into<String>) -> Finding {
    Finding {
        topic: topic.to_string(),
        text: text.into(),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    pub schema_version: u32,
    /// Always `doctor`, like the `command` of `check` and `verify` documents.
    pub command: String,
    pub root: String,
    pub kernel_release: Option<String>,
    /// One sentence for the top of the report.
    pub headline: String,
    pub verdict: Verdict,
    /// No NVIDIA GPU or GDS component at all was found.
    pub no_nvidia_stack: bool,
    pub checks: Vec<CheckResult>,
    pub findings: Vec<Finding>,
    pub stack: Stack,
    pub rpcrdma_usage: RpcrdmaUsage,
    pub plan: Vec<Step>,
}

/// The kernel log lines that explain a failed registration, or a refused load of rpcrdma or
/// nvidia_fs ([`crate::host::modules::kernel_log`]).
pub fn relevant_log_lines(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| {
            crate::host::modules::kernel_log::is_gds_load_failure(l)
                || l.contains("symbol_get of non-GPLONLY")
                || l.contains("nvfs registration failed")
                || l.contains("deregister funtion not found")
                || l.contains("nvidia_fs: Unknown symbol")
                || l.contains("uses symbols from proprietary module")
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// What doctor consults besides the host's files.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    /// The commands it runs (`ofed_info`, `dkms`, `dmesg`, …), or their recorded outputs.
    pub runner: &'a dyn Runner,
    /// The policy the checks are judged under.
    pub policy: &'a Policy,
    /// Run the opt-in live registration probe.
    pub probe: bool,
    /// The cuFile configuration `CUFILE_ENV_PATH_JSON` names on this machine, if any.
    pub cufile_override: Option<&'a str>,
    /// What the helper recorded of the mounts it made (which are meant for GDS, on which port).
    pub declared: &'a crate::policy::intent::Declared,
}

impl std::fmt::Debug for Inputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs")
            .field("probe", &self.probe)
            .field("cufile_override", &self.cufile_override)
            .finish_non_exhaustive()
    }
}

/// Runs the decision tree.
pub fn diagnose(facts: &HostFacts, inputs: Inputs) -> Result<Diagnosis, HostError> {
    let Inputs {
        runner,
        policy,
        probe,
        ..
    } = inputs;
    let stack = Stack::detect(facts, runner)?;
    let table = read_mount_table(&facts.root);
    let usage = RpcrdmaUsage::with_table(facts, table.as_ref())?;
    let kernel_log = runner.run("dmesg", &[]).ok_stdout().map(str::to_string);
    // The checks show the kernel's own verdict on earlier loads as evidence.
    let mut with_log = facts.clone();
    with_log.kernel_log = kernel_log.clone();
    if probe {
        with_log.run_probe(kernel_log.clone());
    }
    let facts = &with_log;
    let node = verdict::judge(
        registry::node_checks(facts, probe)
            .into_iter()
            .map(|r| r.with_pointer(fix::TO_PLAN))
            .collect(),
        &policy.for_node(),
    );
    let mut verdict = node.verdict();
    let mut checks: Vec<CheckResult> = node.results;
    let cufile = cufile::read_cufile(&facts.root, inputs.cufile_override)?;
    let libcufile = cufile::find_libcufile_rdma(&facts.root)?;

    let mut findings = Vec::new();
    findings.push(finding(
        "libcufile_rdma",
        match &libcufile {
            Some(p) => format!("{p} is installed. It serves cuFile's user-space RDMA only; kernel NFS mounts (rpcrdma) never use it, so it is not the problem here."),
            None => "libcufile_rdma.so is not installed. Kernel NFS mounts never use it (it serves cuFile's user-space RDMA only), so it is not needed for GDS over NFS.".into(),
        },
    ));
    let gpu = &stack.gpu_driver;
    findings.push(finding(
        "gpu-driver",
        if gpu.loaded {
            let flavour = match gpu.flavour {
                GpuDriverFlavour::Open => "open kernel modules (required by nvidia-fs 2.17.5 and later)",
                GpuDriverFlavour::Proprietary => "PROPRIETARY kernel module: nvidia-fs 2.17.5 and later does not load against it (`nvidia_fs: Unknown symbol nvidia_p2p_*`)",
                GpuDriverFlavour::Unknown => "flavour unknown (/proc/driver/nvidia/version not readable)",
            };
            format!("nvidia.ko {} is loaded: {flavour}", gpu.version.as_deref().unwrap_or("(version unknown)"))
        } else {
            "no NVIDIA GPU driver (nvidia.ko) is loaded".into()
        },
    ));
    findings.push(finding("rpcrdma-source", describe_provenance(&stack)));
    if let Some((path, gds)) = &stack.ofa_gds_config {
        findings.push(finding(
            "ofa-gds-config",
            if *gds {
                format!("{path}: CONFIG_GPU_DIRECT_STORAGE=y (mlnx-ofa_kernel configured with GDS)")
            } else {
                format!("{path}: CONFIG_GPU_DIRECT_STORAGE is not y: mlnx-ofa_kernel was configured without GDS, so mlnx-nfsrdma compiles no hooks")
            },
        ));
    }
    if let Some(rule) = &facts.gpl_rule {
        findings.push(finding(
            "kernel-gpl-rule",
            format!(
                "GPL-only __symbol_get is {}: {}",
                rule.enforcement.as_str(),
                rule.evidence
            ),
        ));
    }
    for k in &facts.boot.installed {
        let next = facts
            .boot
            .next_boot
            .as_ref()
            .is_ok_and(|nb| nb.release.as_deref() == Some(k.release.as_str()));
        let role = match (k.running, next) {
            (true, true) => " (running, and the next boot)",
            (true, false) => " (running)",
            (false, true) => " (the next boot)",
            (false, false) => "",
        };
        let text = match facts.boot.other(&k.release) {
            Some(o) => crate::checks::catalogue::next_boot::kernel_line(o),
            None => "judged by the checks above".to_string(),
        };
        findings.push(finding(
            "installed-kernel",
            format!("{}{role}: {text}", k.release),
        ));
    }
    match &kernel_log {
        Some(log) => {
            let lines = relevant_log_lines(log);
            if lines.is_empty() {
                findings.push(finding("kernel-log", "the kernel log has no nvidia-fs registration or symbol_get failures"));
            } else {
                for l in lines {
                    findings.push(finding("kernel-log", l));
                }
            }
        }
        None => findings.push(finding("kernel-log", "the kernel log could not be read (dmesg needs root); registration failures would show as `failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops`")),
    }
    if let Some(c) = &cufile {
        findings.push(finding(
            "cufile-json",
            match (&c.parse_error, c.compat_allowed()) {
                (Some(e), _) => format!("{} could not be parsed ({e}); cuFile's default allows compat mode", c.path),
                (None, true) => format!("{}: allow_compat_mode is {} — applications silently fall back to POSIX I/O when GDS is unavailable; run once with CUFILE_ALLOW_COMPAT_MODE=false to prove GDS", c.path, if c.allow_compat_mode.is_some() { "true" } else { "unset (default true)" }),
                (None, false) => format!("{}: allow_compat_mode is false — cuFile fails instead of falling back", c.path),
            },
        ));
    }
    let fstab_entries = facts
        .root
        .read_text_lossy("etc/fstab")?
        .map(|t| fstab::parse_nfs_gds_entries(&t))
        .unwrap_or_default();
    for entry in &fstab_entries {
        for p in fstab::problems(entry) {
            findings.push(finding("fstab", p));
        }
    }
    let mut gds_mount = fstab_entries.first().map(|e| e.target.clone());
    match &table {
        Ok(table) => {
            let review = mounts::review(table, &fstab_entries, inputs.declared, policy);
            verdict = verdict.max(review.verdict);
            gds_mount = gds_mount.or(review.gds_mounts.first().cloned());
            findings.extend(review.findings);
            checks.extend(review.checks);
        }
        Err(e) => findings.push(finding(
            "nfs-mount",
            format!("the mount table could not be read: {e}"),
        )),
    }
    if stack.gpu_operator {
        findings.push(finding(
            "gpu-operator",
            format!(
                "GPU Operator node; validations present: {}. Note the operator's nvidia-fs validation only runs `lsmod | grep nvidia_fs` and never checks that rpcrdma registered.",
                if stack.operator_validations.is_empty() { "none".to_string() } else { stack.operator_validations.join(", ") }
            ),
        ));
    }

    let no_nvidia_stack = !facts.nvidia_fs.loaded
        && !gpu.loaded
        && facts.pci.gpus.is_empty()
        && matches!(stack.ofed, Ofed::None)
        && matches!(stack.provenance, Provenance::Inbox | Provenance::Missing)
        && !stack.gpu_operator
        && stack.vastnfs_version.is_none();
    let gpu_without_driver = facts.pci.gpus.first().filter(|_| !gpu.loaded);
    let headline = if let Some(g) = gpu_without_driver {
        format!("GPU {} present, nvidia.ko not loaded: nothing on this node can use GPUDirect Storage until NVIDIA's driver loads.", g.address)
    } else if no_nvidia_stack {
        "No NVIDIA GPU or GPUDirect Storage stack on this machine: NFS here can only use CPU buffers. A GDS node needs nvidia_fs (with NVIDIA's open GPU driver) and an rpcrdma built with the nvfs hooks (DOCA-OFED mlnx-nfsrdma), mounted over RDMA.".to_string()
    } else {
        match verdict {
            Verdict::Ready => "GPUDirect Storage over NFS/RDMA should be used on this node.".into(),
            Verdict::ReadyWithWarnings => "Nothing is known to be broken, but some checks warn or could not prove their facts; see the warnings.".into(),
            Verdict::NotReady => "GPUDirect Storage over NFS/RDMA would silently fall back to CPU bounce buffers on this node.".into(),
        }
    };
    let plan = if no_nvidia_stack {
        plan::gds_node_needs(&stack)
    } else {
        plan::plan(&PlanInput {
            stack: &stack,
            checks: &checks,
            usage: &usage,
            compat_allowed: cufile.as_ref().is_some_and(|c| c.compat_allowed())
                && facts.nvidia_fs.loaded,
            gds_mount: gds_mount.as_deref(),
            next_boot: facts
                .boot
                .next_boot
                .as_ref()
                .ok()
                .and_then(|nb| nb.release.as_deref())
                .and_then(|r| facts.boot.other(r)),
        })
    };
    Ok(Diagnosis {
        schema_version: SCHEMA_VERSION,
        command: "doctor".into(),
        root: facts.root.dir().display().to_string(),
        kernel_release: facts.kernel.release.clone(),
        headline,
        verdict,
        no_nvidia_stack,
        checks,
        findings,
        stack,
        rpcrdma_usage: usage,
        plan,
    })
}

fn describe_provenance(s: &Stack) -> String {
    let ofed = match &s.ofed {
        Ofed::MlnxOfed { version } => format!("MLNX_OFED {version}"),
        Ofed::Doca { version } => format!("DOCA-OFED {version}"),
        Ofed::Other { line } => format!("OFED ({line})"),
        Ofed::None => "no MLNX_OFED/DOCA-OFED (ofed_info absent)".into(),
    };
    let what = match s.provenance {
        Provenance::Inbox => "the distribution kernel's inbox rpcrdma (never has the nvfs hooks)",
        Provenance::NvidiaKernel => {
            "the inbox rpcrdma of an NVIDIA linux-nvidia kernel (hooks compiled in)"
        }
        Provenance::Vastnfs => "VAST's NFS client bundle (vastnfs)",
        Provenance::MofedDkms => "mlnx-nfsrdma built by DKMS",
        Provenance::MofedPackage => "a prebuilt mlnx-nfsrdma package",
        Provenance::OtherOutOfTree => "an out-of-tree rpcrdma of unknown origin",
        Provenance::BuiltIn => "rpcrdma built into the kernel",
        Provenance::Missing => "",
    };
    let mut text = if s.provenance == Provenance::Missing {
        format!("no rpcrdma module was found for this kernel; {ofed}")
    } else {
        format!("rpcrdma comes from {what}; {ofed}")
    };
    if let Some(p) = &s.rpcrdma_package {
        text.push_str(&format!("; file owned by package {p}"));
    }
    if let Some(v) = &s.vastnfs_version {
        text.push_str(&format!("; vastnfs bundle {v}"));
    }
    let dkms: Vec<String> = s
        .dkms
        .iter()
        .filter(|e| {
            e.module.starts_with("mlnx") || e.module == "nvidia-fs" || e.module == "vastnfs"
        })
        .map(|e| {
            format!(
                "{}/{} {}: {}",
                e.module,
                e.version,
                e.kernel.as_deref().unwrap_or(""),
                e.state
            )
        })
        .collect();
    if !dkms.is_empty() {
        text.push_str(&format!("; dkms: {}", dkms.join(", ")));
    }
    text
}
