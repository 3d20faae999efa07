//! The findings doctor adds beside the checks: what only a human needs to know about the node.
//!
//! Each section is one function over what was [`Seen`], and the report shows them in the order
//! of [`NODE`] (before the mounts) and [`CLUSTER`] (after them); a new section is a function and
//! its place in one of the lists.

use super::finding::{finding, Finding};
use super::kernel_log::relevant_log_lines;
use super::stack::Stack;
use super::stacks::{self, driver_container};
use crate::host::io::recorded::{record_key, RECORDED_DIR};
use crate::host::mounts::MountTable;
use crate::host::platform::nvidia_fs::GpuDriverFlavour;
use crate::host::stack_facts::StackFacts;
use crate::host::HostFacts;
use crate::kmod::abi::KernelModversions;

/// What the sections read: the host facts (with the kernel log), the stack facts, the stack.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub facts: &'a HostFacts,
    pub found: &'a StackFacts,
    pub stack: &'a Stack,
    /// The mount table, when it could be read.
    pub table: Option<&'a MountTable>,
}

pub type Section = fn(&Seen) -> Vec<Finding>;

/// The node's own software, before the mounts.
pub const NODE: &[Section] = &[
    libcufile_rdma,
    gpu_driver,
    rpcrdma_source,
    ofed_packages,
    io_path,
    not_for_nfs,
    ofa_gds_config,
    kernel_gpl_rule,
    kernel_symbol_crcs,
    installed_kernels,
    kernel_log,
    cufile_json,
];

/// What manages the node from outside, after the mounts.
pub const CLUSTER: &[Section] = &[gpu_operator];

/// The findings of a list of sections, in order.
pub fn findings(sections: &[Section], seen: &Seen) -> Vec<Finding> {
    sections.iter().flat_map(|s| s(seen)).collect()
}

fn libcufile_rdma(seen: &Seen) -> Vec<Finding> {
    vec![finding(
        "libcufile_rdma",
        match &seen.found.libcufile_rdma {
            Some(p) => format!("{p} is installed. It serves cuFile's user-space RDMA only; kernel NFS mounts (rpcrdma) never use it, so it is not the problem here."),
            None => "libcufile_rdma.so is not installed. Kernel NFS mounts never use it (it serves cuFile's user-space RDMA only), so it is not needed for GDS over NFS.".into(),
        },
    )]
}

fn gpu_driver(seen: &Seen) -> Vec<Finding> {
    let gpu = &seen.stack.gpu_driver;
    vec![finding(
        "gpu-driver",
        if gpu.loaded {
            let flavour = match gpu.flavour {
                GpuDriverFlavour::Open => "open kernel modules (required by nvidia-fs 2.17.5 and later)",
                GpuDriverFlavour::Proprietary => "PROPRIETARY kernel module: nvidia-fs 2.17.5 and later does not load against it (`nvidia_fs: Unknown symbol nvidia_p2p_*`)",
                GpuDriverFlavour::Unknown => "flavour unknown (/proc/driver/nvidia/version not readable)",
            };
            format!(
                "nvidia.ko {} is loaded: {flavour}",
                gpu.version.as_deref().unwrap_or("(version unknown)")
            )
        } else {
            "no NVIDIA GPU driver (nvidia.ko) is loaded".into()
        },
    )]
}

fn rpcrdma_source(seen: &Seen) -> Vec<Finding> {
    vec![finding("rpcrdma-source", stacks::describe(seen.stack))]
}

fn ofed_packages(seen: &Seen) -> Vec<Finding> {
    stacks::conflicts::two_ofed_finding(seen.stack)
        .map(|text| finding("ofed-packages", text))
        .into_iter()
        .collect()
}

fn not_for_nfs(seen: &Seen) -> Vec<Finding> {
    super::not_for_nfs::findings(seen.facts, seen.found)
}

fn io_path(seen: &Seen) -> Vec<Finding> {
    super::io_path::findings(seen.facts, seen.table)
}

fn ofa_gds_config(seen: &Seen) -> Vec<Finding> {
    let Some((path, gds)) = &seen.stack.ofa_gds_config else {
        return vec![];
    };
    vec![finding(
        "ofa-gds-config",
        if *gds {
            format!("{path}: CONFIG_GPU_DIRECT_STORAGE=y (mlnx-ofa_kernel configured with GDS)")
        } else {
            format!("{path}: CONFIG_GPU_DIRECT_STORAGE is not y: mlnx-ofa_kernel was configured without GDS, so mlnx-nfsrdma compiles no hooks")
        },
    )]
}

/// A kernel built without CONFIG_MODVERSIONS (Debian from 6.18): what replaced the CRC refusal
/// an admin may remember.
fn kernel_symbol_crcs(seen: &Seen) -> Vec<Finding> {
    use crate::kmod::crcless_load::BtfPolicy;
    let load = &seen.facts.rpcrdma_load;
    let KernelModversions::Disabled { evidence } = &load.modversions else {
        return vec![];
    };
    let btf = match load.crcless_kernel.as_ref().map(|k| &k.btf_policy) {
        Some(BtfPolicy::Enforced { evidence }) => format!("and it refuses a module whose BTF does not validate against /sys/kernel/btf/vmlinux (`failed to validate module [rpcrdma] BTF`; {evidence}), though a module whose BTF has a distilled base (an out-of-tree build on Debian 13, DKMS's included) is relocated onto the kernel's types by name instead, and one without BTF loads on its vermagic alone"),
        Some(BtfPolicy::NotEnforced { evidence }) => format!("and it does not refuse a module for its BTF ({evidence})"),
        _ => "and, unless CONFIG_MODULE_ALLOW_BTF_MISMATCH is set, its BTF".into(),
    };
    vec![finding(
        "symbol-crcs",
        format!("this kernel checks no symbol CRCs ({evidence}): a module built for another build no longer fails with `disagrees about version of symbol`. The loader compares its whole vermagic instead (`version magic '…' should be '…'` for another release or build options) {btf}. rpcrdma-abi and nvidia-fs-abi judge exactly that."),
    )]
}

fn kernel_gpl_rule(seen: &Seen) -> Vec<Finding> {
    seen.facts
        .gpl_rule
        .iter()
        .map(|rule| {
            finding(
                "kernel-gpl-rule",
                format!(
                    "GPL-only __symbol_get is {}: {}",
                    rule.enforcement.as_str(),
                    rule.evidence
                ),
            )
        })
        .collect()
}

fn installed_kernels(seen: &Seen) -> Vec<Finding> {
    let boot = &seen.facts.boot;
    boot.installed
        .iter()
        .map(|k| {
            let next = boot
                .next_boot
                .as_ref()
                .is_ok_and(|nb| nb.release.as_deref() == Some(k.release.as_str()));
            let role = match (k.running, next) {
                (true, true) => " (running, and the next boot)",
                (true, false) => " (running)",
                (false, true) => " (the next boot)",
                (false, false) => "",
            };
            let text = match boot.other(&k.release) {
                Some(o) => crate::checks::catalogue::next_boot::kernel_line(o),
                None => "judged by the checks above".to_string(),
            };
            finding("installed-kernel", format!("{}{role}: {text}", k.release))
        })
        .collect()
}

/// What the kernel log would show of a failed registration.
const REGISTRATION_FAILURE: &str =
    "`failing symbol_get of non-GPLONLY symbol rpcrdma_register_nvfs_dma_ops`";

fn kernel_log(seen: &Seen) -> Vec<Finding> {
    let Some(log) = &seen.found.kernel_log else {
        // Below a root, commands are never run: their outputs are the tree's recorded ones.
        let why = if seen.facts.root.context().is_machine() {
            "the kernel log could not be read (dmesg needs root)".to_string()
        } else {
            format!(
                "the tree below --root has no recorded kernel log ({RECORDED_DIR}/{}; `nfs-gds collect` run as root keeps it)",
                record_key("dmesg", &[])
            )
        };
        return vec![finding(
            "kernel-log",
            format!("{why}; registration failures would show as {REGISTRATION_FAILURE}"),
        )];
    };
    let lines = relevant_log_lines(log);
    if lines.is_empty() {
        return vec![finding(
            "kernel-log",
            "the kernel log has no nvidia-fs registration or symbol_get failures",
        )];
    }
    lines
        .into_iter()
        .map(|l| finding("kernel-log", l))
        .collect()
}

fn cufile_json(seen: &Seen) -> Vec<Finding> {
    seen.facts
        .cufile
        .iter()
        .map(|c| {
            finding(
                "cufile-json",
                match (&c.parse_error, c.compat_allowed()) {
                    (Some(e), _) => format!("{} could not be parsed ({e}); cuFile's default allows compat mode", c.path),
                    (None, true) => format!("{}: allow_compat_mode is {} — applications silently fall back to POSIX I/O when GDS is unavailable; run once with CUFILE_ALLOW_COMPAT_MODE=false to prove GDS", c.path, if c.allow_compat_mode.is_some() { "true" } else { "unset (default true)" }),
                    (None, false) => format!("{}: allow_compat_mode is false — cuFile fails instead of falling back", c.path),
                },
            )
        })
        .collect()
}

fn gpu_operator(seen: &Seen) -> Vec<Finding> {
    driver_container::describe(seen.stack)
        .map(|text| finding("gpu-operator", text))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::stack::{Family, Ofed};
    use crate::doctor::stacks::{inbox, test_support};
    use crate::host::Root;

    fn kernel_log_below(root: Root) -> String {
        let facts = HostFacts::builder().with(|f| f.root = root).build();
        let stack = test_support::stack(Family::Debian, Ofed::None, &inbox::Inbox);
        let found = StackFacts::default();
        let seen = Seen {
            facts: &facts,
            found: &found,
            stack: &stack,
            table: None,
        };
        let f = kernel_log(&seen);
        assert_eq!(f.len(), 1, "{f:?}");
        f[0].text.clone()
    }

    /// Below a root nothing runs dmesg: a tree without its recorded output is told so, and root
    /// would not help.
    #[test]
    fn a_tree_without_a_recorded_kernel_log_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let text = kernel_log_below(Root::new(dir.path()));
        assert!(
            text.starts_with(
                "the tree below --root has no recorded kernel log (nfs-gds-commands/dmesg;"
            ),
            "{text}"
        );
        assert!(!text.contains("needs root"), "{text}");
        let text = kernel_log_below(Root::host());
        assert!(text.contains("(dmesg needs root)"), "{text}");
    }
}
