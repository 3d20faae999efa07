//! `nfs-gds slurm`: nfs-gds's verdict where Slurm acts on it.
//!
//! - `slurm health`, the `HealthCheckProgram` (root, every `HealthCheckInterval`, cluster-wide):
//!   judges the node and every mount meant for GDS as the agent does
//!   ([`super::agent::judge_node_and_mounts`]) and drains the node with one `scontrol update`
//!   when a check at `enforce` fails; resumes it only from a drain of its own; asks slurmctld
//!   nothing on a node that is healthy and that it did not drain ([`crate::slurm::decide`]).
//!   With `--nhc` it only judges and prints the reason, for the NHC check
//!   (`contrib/slurm/nfs-gds.nhc`), since NHC drains and resumes itself.
//! - `slurm prolog`, the `Prolog`: for a job whose `--constraint` asks for the GDS feature, a
//!   node that is not ready fails the prolog (Slurm drains the node and requeues the job). Every
//!   other job is let through before anything is read.
//!
//! Every line also goes to the system log: slurmd keeps neither program's output.

use std::time::Duration;

use clap::{Args, Subcommand};

use super::agent::{judge_node_and_mounts, Judged};
use super::oci_hook::syslog::{self, Severity};
use super::{exit, CmdError, Ctx};
use crate::checks::{CheckResult, Status};
use crate::escape::escape_control;
use crate::host::facts_memo::FactsMemo;
use crate::host::io::env::Env;
use crate::host::io::programs;
use crate::host::mounts::MountTable;
use crate::host::Root;
use crate::policy::{JobWhenUnsure, Level, SLURM_FEATURE};
use crate::slurm::decide::{decide, needs_node_state, Action};
use crate::slurm::health::{Finding, Health};
use crate::slurm::reason::module_of;
use crate::slurm::{constraints, scontrol, state};
use crate::system::Output;

#[derive(Debug, Subcommand)]
pub enum SlurmCommand {
    /// HealthCheckProgram: drain this node when GDS over NFS is not ready, resume it when nfs-gds drained it and it is ready again; exit 0 ready (or not a GDS node), 1 not ready, 2 error
    Health(HealthArgs),
    /// Prolog: fail (exit 1, reason on stderr) for a job whose --constraint asks for the GDS feature when this node is not ready; every other job passes untouched
    Prolog,
}

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// The Slurm node name [default: SLURMD_NODENAME, which wins over this option; else the short host name]
    #[arg(long, value_name = "NAME")]
    pub node_name: Option<String>,
    /// The most seconds the whole check may take; each scontrol gets at most 10 of them
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub timeout: u64,
    /// Judge only, for NHC's check_nfs_gds: print the reason on stdout and exit 1 when not ready; never run scontrol (NHC drains and resumes)
    #[arg(long)]
    pub nhc: bool,
}

pub fn run(cmd: &SlurmCommand, ctx: &Ctx) -> Result<u8, CmdError> {
    match cmd {
        SlurmCommand::Health(args) => health(args, ctx),
        SlurmCommand::Prolog => Ok(prolog(ctx, Env::get())),
    }
}

/// Says `line` on stderr and in the system log.
fn say(root: &Root, severity: Severity, line: &str) {
    let line = escape_control(line);
    errln!("nfs-gds: {line}");
    if let Err(e) = syslog::log(root, severity, &line) {
        tracing::debug!("no system log: {e}");
    }
}

/// A failed or unproven check as a finding about `subject`.
fn finding(r: &CheckResult, subject: &str) -> Option<Finding> {
    if !matches!(r.status, Status::Fail | Status::Warn | Status::Unknown) {
        return None;
    }
    Some(Finding {
        check: r.id,
        subject: subject.to_string(),
        enforced: r.status == Status::Fail && r.level == Some(Level::Enforce),
        summary: r.summary.clone(),
    })
}

/// Whether this is a GDS node at all: the GDS stack is there (nvidia_fs loaded, its devices,
/// its DKMS source, cuFile's configuration), or the node itself declares a mount for GDS (the
/// helper's records, an `nfs-gds` fstab line, mounted now or not). A `[[mount]]` table of a
/// policy file shared by the cluster, or a `proto=rdma` mount, does not make a CPU node one.
fn is_gds_node(judged: &Judged) -> bool {
    let nvfs = &judged.facts.nvidia_fs;
    nvfs.loaded
        || !nvfs.devices.is_empty()
        || !nvfs.source_versions.is_empty()
        || judged.facts.cufile.is_some()
        || judged.declared.declares_any()
}

/// The node's health from the judge: its own checks first (about a module), then each mount's.
/// `gds_wanted`: a job asked for GDS here, so a node without GDS is not ready rather than not
/// applicable.
fn health_of(judged: &Judged, gds_wanted: bool) -> Health {
    let node = judged
        .node
        .results
        .iter()
        .filter_map(|r| finding(r, module_of(r.id)));
    let mounts = judged
        .mounts
        .iter()
        .flat_map(|m| m.checks.iter().filter_map(|r| finding(r, &m.mountpoint)));
    Health::of(
        gds_wanted || is_gds_node(judged),
        node.chain(mounts).collect(),
    )
}

/// Judges the node and its mounts as the agent does, under the policy in force.
fn judge(ctx: &Ctx, policy: &crate::policy::Policy, gds_wanted: bool) -> Result<Health, CmdError> {
    let mut table = MountTable::default();
    let judged = judge_node_and_mounts(ctx, policy, false, &mut FactsMemo::default(), &mut table)?;
    Ok(health_of(&judged, gds_wanted))
}

/// The time left of the check's `--timeout`, on the host's clock.
struct Budget<'c> {
    ctx: &'c Ctx,
    deadline: Duration,
    timeout: u64,
}

impl Budget<'_> {
    /// How long the next `scontrol` may take: at most [`scontrol::LIMIT`], and what is left.
    fn next_limit(&self) -> Result<Duration, CmdError> {
        let left = self.deadline.saturating_sub(self.ctx.host.system().now());
        if left.is_zero() {
            return Err(format!(
                "the check ran out of its {} s (--timeout) before asking slurmctld",
                self.timeout
            )
            .into());
        }
        Ok(left.min(scontrol::LIMIT))
    }

    /// Runs `scontrol ARGS` within the budget: its stdout, or why it gave none.
    fn scontrol(&self, args: &[String]) -> Result<String, CmdError> {
        let root = &self.ctx.host.root;
        let shown = format!("scontrol {}", args.join(" "));
        let program = programs::find(root, scontrol::PROGRAM).ok_or_else(|| {
            format!(
                "cannot ask slurmctld: scontrol is not installed (searched {}{})",
                programs::SEARCH_PATH,
                if root.is_host() {
                    String::new()
                } else {
                    format!(" below {}", root.dir().display())
                }
            )
        })?;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let limit = self.next_limit()?;
        match self.ctx.host.system().run_host(&program, &args, limit) {
            Output::Missing => Err(format!("cannot run {}", program.display()).into()),
            Output::Ran {
                code: Some(0),
                stdout,
                ..
            } => Ok(stdout),
            Output::Ran {
                code: None, stderr, ..
            } => Err(format!("`{shown}` did not finish: {}", stderr.trim()).into()),
            Output::Ran {
                code: Some(code),
                stderr,
                ..
            } => Err(format!(
                "`{shown}` failed (exit {code}): {} | fix: is slurmctld up and reachable from this node?",
                stderr.lines().next().unwrap_or("").trim()
            )
            .into()),
        }
    }
}

/// The Slurm node name: `SLURMD_NODENAME`, else `--node-name`, else the short host name.
fn node_name(ctx: &Ctx, env: &Env, given: Option<&str>) -> Result<String, CmdError> {
    let name = match env.slurmd_nodename.as_deref().or(given) {
        Some(n) => n.to_string(),
        None => {
            let text = ctx
                .host
                .root
                .read_text_lossy("proc/sys/kernel/hostname")?
                .ok_or("cannot tell the node name: no SLURMD_NODENAME, no --node-name, and no proc/sys/kernel/hostname")?;
            let full = text.trim();
            full.split('.').next().unwrap_or(full).to_string()
        }
    };
    scontrol::check_node_name(&name)?;
    Ok(name)
}

/// `slurm health`.
fn health(args: &HealthArgs, ctx: &Ctx) -> Result<u8, CmdError> {
    let root = &ctx.host.root;
    let budget = Budget {
        ctx,
        deadline: ctx.host.system().now() + Duration::from_secs(args.timeout),
        timeout: args.timeout,
    };
    let health = judge(ctx, &ctx.policy()?, false)?;
    let warned = match &health {
        Health::Warned(w) => w.as_slice(),
        Health::NotReady { all, .. } => all.as_slice(),
        _ => &[],
    };
    for w in warned.iter().filter(|f| !f.enforced) {
        say(root, Severity::Warning, &format!("warning: {}", w.line()));
    }
    if args.nhc {
        return nhc_answer(&health);
    }
    let drained_by_us = state::drained_by_us(root)?;
    let node = if needs_node_state(&health, drained_by_us) {
        let name = node_name(ctx, Env::get(), args.node_name.as_deref())?;
        let shown = budget.scontrol(&scontrol::show_node(&name))?;
        Some((scontrol::parse_show_node(&shown, &name)?, name))
    } else {
        None
    };
    let action = decide(&health, drained_by_us, node.as_ref().map(|(n, _)| n));
    act(
        &budget,
        &health,
        action,
        node.as_ref().map(|(_, name)| name.as_str()),
    )?;
    Ok(health_code(&health))
}

fn health_code(health: &Health) -> u8 {
    if health.is_not_ready() {
        exit::NOT_READY
    } else {
        exit::READY
    }
}

/// `--nhc`: the reason on stdout when not ready (NHC's `die` message), nothing when not.
fn nhc_answer(health: &Health) -> Result<u8, CmdError> {
    match health {
        Health::NotReady { reason, first, .. } => {
            errln!("nfs-gds: not ready: {}", escape_control(&first.line()));
            outln!("{reason}");
            Ok(exit::NOT_READY)
        }
        _ => Ok(exit::READY),
    }
}

/// Carries out `action` on `node` (named when slurmctld was asked).
fn act(
    budget: &Budget,
    health: &Health,
    action: Action,
    node: Option<&str>,
) -> Result<(), CmdError> {
    let root = &budget.ctx.host.root;
    let node = node.unwrap_or_default();
    let problem = match health {
        Health::NotReady { first, .. } => first.line(),
        _ => String::new(),
    };
    match action {
        Action::Nothing => {
            let said = match health {
                Health::NotApplicable => {
                    "not a GDS node (no nvidia_fs, no mount declared for GDS): nothing to do"
                }
                _ => "ready",
            };
            outln!("nfs-gds slurm health: {said}");
        }
        Action::Drain(reason) => {
            budget.scontrol(&scontrol::drain(node, &reason))?;
            state::remember(root, node, reason.as_str()).map_err(|e| {
                format!(
                    "drained {node}, but cannot record it in {}: {e}",
                    state::path(root).display()
                )
            })?;
            say(
                root,
                Severity::Err,
                &format!("drained node {node} ({reason}): {problem} | fix: run `nfs-gds doctor` on the node; it is resumed by the next check that finds it ready"),
            );
        }
        Action::KeepOurs => {
            if let Health::NotReady { reason, .. } = health {
                state::remember(root, node, reason.as_str())?;
            }
            outln!(
                "nfs-gds slurm health: node {node} stays drained by nfs-gds: {}",
                escape_control(&problem)
            );
        }
        Action::KeepTheirs { reason } => {
            let reason = reason.unwrap_or_else(|| "no reason given".into());
            if state::forget(root)? {
                tracing::debug!("forgot the drain of ours that {reason:?} replaced");
            }
            let what = if health.is_not_ready() {
                format!("not ready ({problem}), but node {node} is already held for another reason, which it keeps: {reason}")
            } else {
                format!("ready, but node {node} is held for another reason, which it keeps (not resumed): {reason}")
            };
            say(root, Severity::Notice, &what);
        }
        Action::Resume => {
            budget.scontrol(&scontrol::resume(node))?;
            state::forget(root)?;
            say(
                root,
                Severity::Notice,
                &format!("resumed node {node}: GDS over NFS is ready again"),
            );
        }
        Action::Forget => {
            state::forget(root)?;
            say(
                root,
                Severity::Notice,
                &format!("ready; node {node} was already resumed by someone else"),
            );
        }
    }
    Ok(())
}

/// `slurm prolog`: the exit code slurmd acts on. Decided from the environment first: a job with
/// no constraint, or one that does not ask for the feature, passes before anything else is
/// read.
fn prolog(ctx: &Ctx, env: &Env) -> u8 {
    let Some(asked) = env.slurm_job_constraints.as_deref() else {
        return exit::READY;
    };
    let root = &ctx.host.root;
    let policy = ctx.policy();
    let feature = policy
        .as_ref()
        .map_or(SLURM_FEATURE.to_string(), |p| p.slurm.feature.clone());
    if !constraints::asks_for(asked, &feature) {
        return exit::READY;
    }
    let job = format!(
        "job {}",
        env.slurm_job_id.as_deref().unwrap_or("(no SLURM_JOB_ID)")
    );
    let when_unsure = policy
        .as_ref()
        .map_or(JobWhenUnsure::default(), |p| p.slurm.when_unsure);
    let judged = policy
        .map_err(CmdError::from)
        .and_then(|p| judge(ctx, &p, true));
    match judged {
        Ok(Health::NotReady { reason, all, .. }) => {
            for f in all.iter().filter(|f| f.enforced) {
                say(
                    root,
                    Severity::Err,
                    &format!(
                        "{job} asks for {feature}, but this node is not ready for GDS over NFS: {}",
                        f.line()
                    ),
                );
            }
            say(root, Severity::Err, &format!("failing the prolog for {job} ({reason}): Slurm drains this node and requeues the job | fix: run `nfs-gds doctor` on the node"));
            exit::NOT_READY
        }
        Ok(Health::Warned(w)) => {
            for f in w {
                say(
                    root,
                    Severity::Warning,
                    &format!("warning: {job}: {}", f.line()),
                );
            }
            exit::READY
        }
        Ok(_) => exit::READY,
        Err(e) => {
            let e = e.to_string();
            match when_unsure {
                JobWhenUnsure::Start => {
                    say(root, Severity::Notice, &format!("warning: starting {job} unjudged: {e} (the policy's [slurm] when-unsure = \"start\")"));
                    exit::READY
                }
                JobWhenUnsure::Refuse => {
                    say(root, Severity::Err, &format!("failing the prolog for {job}: cannot judge this node for GDS: {e} (the policy's [slurm] when-unsure = \"refuse\")"));
                    exit::NOT_READY
                }
            }
        }
    }
}
