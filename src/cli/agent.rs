//! `nfs-gds agent`: re-checks the node and its RDMA mounts periodically and publishes the result
//! for NFD (labels), Prometheus (textfile collector), an init container (readiness file) and
//! anything that reads a status JSON.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use clap::Args;

use super::context::{CmdError, Ctx};
use super::exit;
use crate::agent::judged::{judge_node_and_mounts, Judged};
use crate::agent::outputs::{self, Outputs};
use crate::agent::schedule::{self, MAX_INTERVAL_SECS};
use crate::agent::shutdown::{Shutdown, Wake};
use crate::agent::{labels, metrics, Pass};
use crate::checks::Verdict;
use crate::host::facts_memo::FactsMemo;
use crate::host::mounts::MountTable;
use crate::host::platform::nvfs_stats::read_nvfs_stats;
use crate::host::HostFacts;

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Check once, write the outputs, and exit (0 ready, 1 not ready, 2 error); run from a timer,
    /// pass its period as --interval so the labels outlive the gap between runs
    #[arg(long)]
    pub once: bool,
    /// Seconds between checks (with --once: between runs of the timer); labels expire after three
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..=MAX_INTERVAL_SECS)
    )]
    pub interval: u64,
    #[command(flatten)]
    pub probe: super::shared::ProbeArgs,
    /// NFD features.d directory [default: <root>/etc/kubernetes/node-feature-discovery/features.d, used only if it exists]
    #[arg(long, value_name = "DIR")]
    pub nfd_dir: Option<PathBuf>,
    /// node_exporter textfile directory [default: <root>/var/lib/prometheus/node-exporter, used only if it exists]
    #[arg(long, value_name = "DIR")]
    pub textfile_dir: Option<PathBuf>,
    /// Where to write the status JSON [default: <root>/run/nfs-gds/status.json]
    #[arg(long, value_name = "FILE")]
    pub status_file: Option<PathBuf>,
    /// The file that exists while the node is ready, for init containers [default: <root>/run/nfs-gds/ready]
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// Check nothing: exit 0 when the running agent's last pass (the time of its status file) is
    /// at most two intervals old, 1 otherwise (the DaemonSet's liveness and readiness probe)
    #[arg(long, conflicts_with_all = ["once", "probe"])]
    pub health: bool,
}

/// Where this agent writes.
fn outputs_of(args: &AgentArgs, ctx: &Ctx) -> Outputs {
    Outputs::resolve(
        &ctx.host.root,
        args.nfd_dir.as_deref(),
        args.textfile_dir.as_deref(),
        args.status_file.as_deref(),
        args.ready_file.as_deref(),
    )
}

/// `--health`: whether the last pass is recent, from the status file every pass rewrites.
fn health(args: &AgentArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let status = outputs_of(args, ctx).status;
    let interval = Duration::from_secs(args.interval);
    let status = status.path();
    match std::fs::metadata(&status).and_then(|m| m.modified()) {
        Ok(at) if schedule::is_fresh(at, ctx.host.system().wall_clock(), interval) => {
            outln!(
                "nfs-gds agent: alive (last pass {})",
                humantime::format_rfc3339_seconds(at)
            );
            Ok(exit::READY)
        }
        Ok(at) => {
            outln!(
                "nfs-gds agent: stale: the last pass ({}, {}) is more than {} x {} s old",
                humantime::format_rfc3339_seconds(at),
                status.display(),
                schedule::STALE_INTERVALS,
                args.interval
            );
            Ok(exit::NOT_READY)
        }
        Err(e) => {
            outln!("nfs-gds agent: no pass yet ({}: {e})", status.display());
            Ok(exit::NOT_READY)
        }
    }
}

/// Reads and judges everything once ([`judge_node_and_mounts`]) into a pass.
fn check_node<'t>(
    args: &AgentArgs,
    ctx: &Ctx,
    memo: &mut FactsMemo,
    table: &'t mut MountTable,
    at: SystemTime,
) -> Result<(Pass<'t>, HostFacts), CmdError> {
    let policy = ctx.policy()?;
    let Judged {
        facts,
        node,
        mounts,
        table_path,
        ..
    } = judge_node_and_mounts(
        &ctx.host.root,
        ctx.host.system(),
        &policy,
        args.probe.probe,
        memo,
        table,
    )?;
    let node = node.into_report(
        "agent",
        &ctx.host.root.dir().display().to_string(),
        facts.kernel.release.clone(),
        None,
    );
    let pass = Pass {
        node,
        mounts,
        mount_table: table_path.display().to_string(),
        at,
        interval: Duration::from_secs(args.interval),
        nvfs_stats: read_nvfs_stats(&ctx.host.root)?,
        oci_hook: crate::agent::hook_counts::read(&ctx.host.root),
        nri_connected: crate::agent::nri_gate::connected(&ctx.host.root),
    };
    Ok((pass, facts))
}

/// On this machine, removes what mount.nfs-gds runs that died left below the staging area
/// ([`crate::mount::stage`]); live runs' directories are never touched. Said on stderr; a
/// failure (no right to unmount, an agent in a container of its own) only logged.
fn sweep_staging(ctx: &Ctx) {
    if !ctx.host.is_machine() {
        return;
    }
    let Ok(mut mounter) = ctx.host.mounter(crate::policy::Backend::Auto) else {
        return;
    };
    match crate::mount::stage::sweep(&ctx.host.root, ctx.host.system(), mounter.as_mut()) {
        Ok(swept) => {
            for s in swept {
                errln!("nfs-gds agent: cleaned up after a mount.nfs-gds that did not finish: {s}");
            }
        }
        Err(e) => tracing::debug!("staging area not swept: {e}"),
    }
}

fn summary_line(pass: &Pass) -> String {
    format!(
        "nfs-gds agent: {} (gds-nfs={}; {} RDMA mount{}, {} not ready)",
        pass.verdict().as_str().to_uppercase(),
        pass.tier().as_str(),
        pass.mounts.len(),
        if pass.mounts.len() == 1 { "" } else { "s" },
        pass.mounts_not_ready()
    )
}

/// What a pass leaves behind besides its outputs: its summary line and whether the node is
/// its verdict.
struct Outcome {
    line: String,
    verdict: Verdict,
}

/// One pass, reading the mount table into `table` (the caller's, so `--once` can leave it to
/// the process exit: freeing the thousands of mounts of a large node one by one costs more
/// than a pass's outputs).
fn one_pass(
    args: &AgentArgs,
    ctx: &Ctx,
    memo: &mut FactsMemo,
    table: &mut MountTable,
) -> Result<Outcome, CmdError> {
    sweep_staging(ctx);
    let (pass, facts) = check_node(args, ctx, memo, table, ctx.host.system().wall_clock())?;
    let out = outputs_of(args, ctx);
    let nvfs = facts.nvidia_fs.version.clone().unwrap_or_default();
    let kernel = facts.kernel.release.unwrap_or_default();
    let line = summary_line(&pass);
    let mut files: Vec<(&outputs::Target, outputs::Fill)> = Vec::new();
    if let Some(target) = &out.features {
        let extra = [
            ("nvidia-fs.version", nvfs.clone()),
            ("kernel", kernel.clone()),
        ];
        let text = labels::features_file(&pass, &extra).map_err(std::io::Error::other);
        files.push((target, Box::new(move |w| w.write_all(text?.as_bytes()))));
    }
    if let Some(target) = &out.textfile {
        let info = [("kernel_release", kernel), ("nvidia_fs_version", nvfs)];
        let pass = &pass;
        files.push((
            target,
            Box::new(move |w| metrics::write_prometheus_file(pass, &info, w)),
        ));
    }
    files.push((&out.status, Box::new(|w| pass.write_status_json(w))));
    outputs::publish(&out.ready, pass.is_ready(), &line, files)?;
    Ok(Outcome {
        line,
        verdict: pass.verdict(),
    })
}

pub fn run(args: &AgentArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    // A pass is finished and its outputs written whatever becomes of stderr.
    super::err_out::keep_going();
    if args.health {
        return health(args, ctx);
    }
    if args.once {
        let mut table = MountTable::default();
        let pass = one_pass(args, ctx, &mut FactsMemo::default(), &mut table);
        // The process ends here; its memory goes back with it.
        std::mem::forget(table);
        let pass = pass?;
        outln!("{}", pass.line);
        return Ok(exit::of(pass.verdict));
    }
    tracing::info!("checking every {} s", args.interval);
    let mut trim = super::memory::Trim::default();
    let shutdown = Shutdown::listen()?;
    let mut last = None;
    // The node facts, kept from pass to pass while their inputs are unchanged.
    let mut memo = FactsMemo::default();
    let signal = loop {
        match one_pass(args, ctx, &mut memo, &mut MountTable::default()) {
            Ok(Outcome { line, .. }) => {
                if last.as_ref() != Some(&line) {
                    errln!("{line}");
                    last = Some(line);
                }
            }
            // A failed pass is logged and retried; the previous outputs stay until they expire.
            Err(e) => errln!(
                "nfs-gds agent: {}",
                crate::escape::escape_control(&e.to_string())
            ),
        }
        trim.maybe(ctx.host.system().now());
        if let Some(sig) = shutdown.stopping() {
            break sig;
        }
        if let Wake::Stop(sig) = shutdown.wait(Duration::from_secs(args.interval)) {
            break sig;
        }
    };
    // A stopped agent vouches for nothing: its readiness file goes; the other outputs expire.
    let ready = outputs_of(args, ctx).ready;
    let path = crate::escape::escape_control(&ready.path().display().to_string()).into_owned();
    if ready.remove()? {
        errln!("nfs-gds agent: stopped by signal {signal}; removed {path}");
    } else {
        errln!("nfs-gds agent: stopped by signal {signal}; there was no {path} to remove");
    }
    Ok(exit::READY)
}
