//! Prints, as JSON, what the host readers say about every installed kernel of a node tree (or
//! only the running one): its module tree's rpcrdma, what modprobe's configuration does to
//! `modprobe rpcrdma` and to the kernel's requests, the DKMS state of mlnx-nfsrdma and
//! nvidia-fs, signature enforcement, and which kernel the next boot starts. A way to look at a
//! real node or VM through these readers, and what `benches/all-kernels.sh` times.
//!
//! Usage: boot-facts [--root DIR] [--running-only]

use std::process::ExitCode;

use nfs_gds::host::boot::dkms::{self, MLNX_NFSRDMA, NVIDIA_FS};
use nfs_gds::host::boot::installed_kernels::{self, read_installed_kernels};
use nfs_gds::host::boot::next_boot::read_next_boot;
use nfs_gds::host::kernel::KernelInfo;
use nfs_gds::host::modules::kernel_config::read_kernel_config;
use nfs_gds::host::modules::modprobe_config::read_modprobe_config;
use nfs_gds::host::modules::modprobe_effect::{
    explain_request, TreeIndex, KERNEL_REQUEST_LEGACY, KERNEL_REQUEST_RDMA6,
};
use nfs_gds::host::modules::sig_enforcement::{
    judge_boot, judge_running, SignatureEvidence, CONFIG_OPTIONS,
};
use nfs_gds::host::{HostError, Root};
use nfs_gds::kmod::RPCRDMA;
use serde_json::{json, Value};

fn main() -> ExitCode {
    let mut root = Root::host();
    let mut running_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--root" => match args.next() {
                Some(d) => root = Root::new(d),
                None => return usage("--root needs a directory"),
            },
            "--running-only" => running_only = true,
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    match report(&root, running_only) {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("boot-facts: {e}");
            ExitCode::from(2)
        }
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("boot-facts: {msg}\nusage: boot-facts [--root DIR] [--running-only]");
    ExitCode::from(2)
}

fn report(root: &Root, running_only: bool) -> Result<Value, HostError> {
    let running = KernelInfo::read(root)?;
    let mut kernels = read_installed_kernels(root, running.release.as_deref())?;
    let next_boot = read_next_boot(root, &kernels)?;
    if running_only {
        kernels.retain(|k| k.running);
    }
    let evidence = SignatureEvidence::read(root)?;
    let dkms_entries = dkms::read_dkms_tree(root)?;
    let mut out = Vec::new();
    for k in &kernels {
        let tree = installed_kernels::module_tree(root, k)?;
        let index = TreeIndex::new(root, &tree);
        let is_next = next_boot.release.as_deref() == Some(k.release.as_str());
        let cmdline = if k.running {
            evidence.cmdline.clone()
        } else if is_next {
            next_boot.cmdline.clone()
        } else {
            None
        };
        let config = read_modprobe_config(root, Some(&tree.dir_rel), cmdline.as_deref())?;
        let requests: Vec<Value> = [RPCRDMA, KERNEL_REQUEST_LEGACY, KERNEL_REQUEST_RDMA6]
            .iter()
            .map(|r| json!(explain_request(&config, &index, r)))
            .collect();
        let kconfig = read_kernel_config(root, &k.release, CONFIG_OPTIONS)?;
        let signatures = if k.running {
            judge_running(&evidence, kconfig.as_ref())
        } else {
            judge_boot(&evidence.secure_boot, cmdline.as_deref(), kconfig.as_ref())
        };
        let dkms_state: Vec<Value> = [MLNX_NFSRDMA, NVIDIA_FS]
            .iter()
            .map(|p| {
                let s = dkms::dkms_state(&dkms_entries, p, &k.release);
                json!({ "package": p, "state": s, "fix": s.fix(p, &k.release) })
            })
            .collect();
        out.push(json!({
            "kernel": k,
            "next_boot": is_next,
            "rpcrdma": tree.resolve(root, RPCRDMA).map_err(|e| e.to_string()),
            "requests": requests,
            "dkms": dkms_state,
            "signatures": signatures,
        }));
    }
    Ok(json!({ "next_boot": next_boot, "kernels": out }))
}
