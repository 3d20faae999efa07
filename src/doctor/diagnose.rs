//! The diagnosis: [`diagnose`] runs the node judge on the host facts, composes the stack from
//! the stack facts, adds the sections only a human needs, reviews the mounts, and builds the
//! plan; [`Diagnosis`] is what it found, rendered as text or JSON.

use serde::Serialize;

use super::finding::{finding, Finding};
use super::plan::PlanInput;
use super::stack::{Ofed, Stack};
use super::step::Step;
use super::usage::RpcrdmaUsage;
use super::{fstab, gdscheck, mounts, plan, sections, stacks};
use crate::checks::{fix, CheckResult, Verdict, SCHEMA_VERSION};
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::staged::{staged_nfs, STAGE_AREA};
use crate::host::mounts::{read_mount_table, read_staged, MountsError};
use crate::host::stack_facts::StackFacts;
use crate::host::{HostError, HostFacts};
use crate::judge::node;
use crate::nfs::ServerAddrs;
use crate::policy::Policy;
use crate::system::System;

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
/// What doctor consults besides the host's files.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    /// The system: the commands it runs (`ofed_info`, `dkms`, `dmesg`, …) or their recorded
    /// outputs, and the resolver of server names.
    pub system: &'a dyn System,
    /// The policy the checks are judged under.
    pub policy: &'a Policy,
    /// Run the opt-in live registration probe.
    pub probe: bool,
    /// What the helper recorded of the mounts it made (which are meant for GDS, on which port).
    pub declared: &'a crate::policy::intent::Declared,
}

impl std::fmt::Debug for Inputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs")
            .field("probe", &self.probe)
            .finish_non_exhaustive()
    }
}

/// Runs the decision tree.
pub fn diagnose(facts: &HostFacts, inputs: Inputs) -> Result<Diagnosis, HostError> {
    let Inputs {
        system,
        policy,
        probe,
        declared,
    } = inputs;
    let found = StackFacts::read(facts, system)?;
    let stack = stacks::identify(facts, &found);
    let table = read_mount_table(&facts.root);
    let usage = RpcrdmaUsage::with_table(facts, table.as_ref())?;
    // The checks show the kernel's own verdict on earlier loads as evidence.
    let mut with_log = facts.clone();
    with_log.kernel_log = found.kernel_log.clone();
    with_log.gdscheck = found.gdscheck_run.clone();
    let fstab_entries = declared.fstab_entries();
    // What the kernel will do with the lines' nconnect, judged with the node as `check` judges
    // it.
    let planned = node::planned_lines(&facts.kernel, &policy.options, fstab_entries);
    let ask = node::Ask {
        system,
        probe,
        kernel_log: found.kernel_log.as_deref(),
        pointer: fix::TO_PLAN,
    };
    let (with_log, node) = node::judge(with_log, policy, ask, planned);
    let facts = &with_log;
    let mut verdict = node.verdict();
    let mut checks: Vec<CheckResult> = node.results;
    let seen = sections::Seen {
        facts,
        found: &found,
        stack: &stack,
        table: table.as_ref().ok(),
    };
    let mut findings = sections::findings(sections::NODE, &seen);
    findings.extend(gdscheck::findings(facts, &checks));
    for entry in fstab_entries {
        for p in fstab::problems(entry) {
            findings.push(finding("fstab", p));
        }
    }
    let mut gds_mount = fstab_entries.first().map(|e| e.target.clone());
    match &table {
        Ok(table) => {
            let addrs = ServerAddrs::new(system);
            let localio = MountLocalio::with_node(&facts.root, facts.localio.clone(), table);
            let review = mounts::review(table, fstab_entries, declared, policy, &addrs, &localio);
            verdict = verdict.max(review.verdict);
            gds_mount = gds_mount.or(review.gds_mounts.first().cloned());
            findings.extend(review.findings);
            checks.extend(review.checks);
        }
        // A tree without a mount table (a fixture) has no mounts to judge.
        Err(e @ MountsError::Missing { .. }) => findings.push(finding(
            "nfs-mount",
            format!("the mount table could not be read: {e}"),
        )),
        Err(e) => {
            findings.push(finding(
                "nfs-mount",
                format!("the mount table could not be read: {e}"),
            ));
            // Nothing is known of the mounts: never "Nothing to fix" about them.
            verdict = verdict.max(Verdict::ReadyWithWarnings);
            checks.push(
                CheckResult::unknown(
                    crate::checks::catalogue::mount_transport::ID,
                    format!("the NFS mounts on this node could not be judged: {e}"),
                )
                .remedy("fix what stops the mount table from being read, then run nfs-gds doctor again: until then nothing is known of how the mounts carry their I/O"),
            );
        }
    }
    if let Ok(in_flight) = read_staged(&facts.root) {
        let staged = staged_nfs(&in_flight);
        if !staged.is_empty() {
            findings.push(finding(
                "nfs-mount",
                format!(
                    "staged below {STAGE_AREA}, not on any mount point yet: {} — a mount.nfs-gds verifying it now, or one that was killed before it could move or unmount it; the next mount.nfs-gds run or agent pass removes what a dead helper left",
                    staged.join(", ")
                ),
            ));
        }
    }
    findings.extend(sections::findings(sections::CLUSTER, &seen));

    let gpu = &stack.gpu_driver;
    let no_nvidia_stack = !facts.nvidia_fs.loaded
        && !gpu.loaded
        && facts.pci.gpus.is_empty()
        && matches!(stack.ofed, Ofed::None)
        && !stacks::of(&stack).is_vendor()
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
            compat_allowed: facts.cufile.as_ref().is_some_and(|c| c.compat_allowed())
                && facts.nvidia_fs.loaded,
            gds_mount: gds_mount.as_deref(),
            next_boot: facts
                .boot
                .next_boot
                .as_ref()
                .ok()
                .and_then(|nb| nb.release.as_deref())
                .and_then(|r| facts.boot.other(r)),
            modules_locked: facts
                .root
                .read_text_lossy("proc/sys/kernel/modules_disabled")?
                .is_some_and(|t| t.trim() == "1"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::cufile_config;
    use crate::host::Root;
    use crate::system::Fake;

    /// cufile.json is read once, with the host facts: what doctor reports of it is what the
    /// checks judged, even when the file changes while doctor runs.
    #[test]
    fn cufile_json_is_the_one_the_checks_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etc/cufile.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{ "properties": { "allow_compat_mode": false } }"#).unwrap();
        let facts = HostFacts::read(&Root::new(dir.path())).unwrap();
        std::fs::write(&path, r#"{ "properties": { "allow_compat_mode": true } }"#).unwrap();
        let d = diagnose(
            &facts,
            Inputs {
                system: &Fake::new(),
                policy: &Policy::default(),
                probe: false,
                declared: &crate::policy::intent::Declared::default(),
            },
        )
        .unwrap();
        let text: Vec<&str> = d
            .findings
            .iter()
            .filter(|f| f.topic == "cufile-json")
            .map(|f| f.text.as_str())
            .collect();
        assert_eq!(
            text,
            vec!["/etc/cufile.json: allow_compat_mode is false — cuFile fails instead of falling back"]
        );
        let check = d.checks.iter().find(|c| c.id == cufile_config::ID).unwrap();
        assert_eq!(check.status, crate::checks::Status::Pass, "{check:?}");
        assert!(!d
            .plan
            .iter()
            .any(|s| s.title.contains("compatibility mode")));
    }
}
