//! `nfs-gds slurm`: nfs-gds's verdict where Slurm acts on it.
//!
//! - `slurm health`, the `HealthCheckProgram` (root, every `HealthCheckInterval`, cluster-wide):
//!   judges the node and every mount meant for GDS as the agent does
//!   ([`crate::agent::judged::judge_node_and_mounts`]) and drains the node with one `scontrol update`
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

use super::context::{CmdError, Ctx};
use super::exit;
use crate::agent::judged::{judge_node_and_mounts, Judged};
use crate::checks::{CheckResult, Status};
use crate::escape::escape_control;
use crate::host::facts_memo::FactsMemo;
use crate::host::io::env::Env;
use crate::host::io::programs;
use crate::host::mounts::MountTable;
use crate::host::syslog::{self, Severity};
use crate::host::Root;
use crate::policy::{JobWhenUnsure, Level, SLURM_FEATURE};
use crate::slurm::decide::{decide, needs_node_state, Action};
use crate::slurm::health::{Finding, GdsNode, Health};
use crate::slurm::reason::module_of;
use crate::slurm::{constraints, scontrol, state};
use crate::system::{Output, System};

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

/// What makes this node a GDS node ([`GdsNode`]), from the facts the judge read.
fn gds_node(judged: &Judged) -> GdsNode {
    let nvfs = &judged.facts.nvidia_fs;
    GdsNode {
        driver: nvfs.loaded || !nvfs.devices.is_empty(),
        declared_mount: judged.declared.declares_any(),
        installed: !nvfs.source_versions.is_empty(),
        gpu: !judged.facts.pci.gpus.is_empty(),
    }
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
        gds_wanted || gds_node(judged).is_one(),
        node.chain(mounts).collect(),
    )
}

/// Judges the node and its mounts as the agent does, under the policy in force.
fn judge(ctx: &Ctx, policy: &crate::policy::Policy, gds_wanted: bool) -> Result<Health, CmdError> {
    let mut table = MountTable::default();
    let judged = judge_node_and_mounts(
        &ctx.host.root,
        ctx.host.system(),
        policy,
        false,
        &mut FactsMemo::default(),
        &mut table,
    )?;
    Ok(health_of(&judged, gds_wanted))
}

/// The time left of the check's `--timeout`, on the host's clock, and where `scontrol` runs.
struct Budget<'c> {
    system: &'c dyn System,
    root: &'c Root,
    deadline: Duration,
    timeout: u64,
}

impl<'c> Budget<'c> {
    /// `timeout` seconds from now.
    fn start(system: &'c dyn System, root: &'c Root, timeout: u64) -> Self {
        Budget {
            system,
            root,
            deadline: system.now() + Duration::from_secs(timeout),
            timeout,
        }
    }

    /// How long the next `scontrol` may take: at most [`scontrol::LIMIT`], and what is left.
    fn next_limit(&self) -> Result<Duration, CmdError> {
        let left = self.deadline.saturating_sub(self.system.now());
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
        let root = self.root;
        let shown = format!("scontrol {}", args.join(" "));
        let program = programs::find(root, scontrol::PROGRAM).ok_or_else(|| {
            format!(
                "cannot ask slurmctld: scontrol is not installed (searched {}{})",
                programs::SEARCH_PATH,
                if root.context().is_machine() {
                    String::new()
                } else {
                    format!(" below {}", root.dir().display())
                }
            )
        })?;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let limit = self.next_limit()?;
        match self.system.run_host(&program, &args, limit) {
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
    let budget = Budget::start(ctx.host.system(), root, args.timeout);
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
    // Said once the work is done: a closed stdout ends the command only after it.
    let outcome = carry_out(&budget, &health, drained_by_us, || {
        node_name(ctx, Env::get(), args.node_name.as_deref())
    })?;
    outln!("nfs-gds slurm health: {}", escape_control(&outcome));
    Ok(health_code(&health))
}

/// What the health check does with slurmctld for `health`: asks `scontrol show node` only when
/// that decides anything ([`needs_node_state`]; `node_name` is asked then too), then drains,
/// resumes, keeps or forgets ([`decide`]).
fn carry_out(
    budget: &Budget,
    health: &Health,
    drained_by_us: bool,
    node_name: impl FnOnce() -> Result<String, CmdError>,
) -> Result<String, CmdError> {
    let node = if needs_node_state(health, drained_by_us) {
        let name = node_name()?;
        let shown = budget.scontrol(&scontrol::show_node(&name))?;
        Some((scontrol::parse_show_node(&shown, &name)?, name))
    } else {
        None
    };
    let action = decide(health, drained_by_us, node.as_ref().map(|(n, _)| n));
    act(
        budget,
        health,
        action,
        node.as_ref().map(|(_, name)| name.as_str()),
    )
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

/// Carries out `action` on `node` (named when slurmctld was asked): what changed is said on
/// stderr and in the system log; the one-line outcome is returned, for stdout.
fn act(
    budget: &Budget,
    health: &Health,
    action: Action,
    node: Option<&str>,
) -> Result<String, CmdError> {
    let root = budget.root;
    let node = node.unwrap_or_default();
    let problem = match health {
        Health::NotReady { first, .. } => first.line(),
        _ => String::new(),
    };
    let outcome = match action {
        Action::Nothing => match health {
            Health::NotApplicable => {
                "not a GDS node (no nvidia_fs, no mount declared for GDS): nothing to do".into()
            }
            Health::Warned(_) => "ready, with warnings".into(),
            _ => "ready".into(),
        },
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
            format!("not ready: drained node {node} ({reason})")
        }
        Action::KeepOurs => {
            if let Health::NotReady { reason, .. } = health {
                state::remember(root, node, reason.as_str())?;
            }
            format!("not ready: node {node} stays drained by nfs-gds ({problem})")
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
            what
        }
        Action::Resume => {
            budget.scontrol(&scontrol::resume(node))?;
            state::forget(root)?;
            let what = format!("resumed node {node}: GDS over NFS is ready again");
            say(root, Severity::Notice, &what);
            format!("ready: {what}")
        }
        Action::Forget => {
            state::forget(root)?;
            let what = format!("ready; node {node} was already resumed by someone else");
            say(root, Severity::Notice, &what);
            what
        }
    };
    Ok(outcome)
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
    let judged = policy.and_then(|p| judge(ctx, &p, true));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::{nvidia_fs_devices, rpcrdma_hooks};
    use crate::slurm::health::tests::finding;
    use crate::slurm::scontrol::tests::show;
    use crate::system::{Answer, Call, Fake};

    /// A root with an `scontrol` to find, and a fake system whose `scontrol show node` shows
    /// gpu01 in `state` with `reason` and whose every other `scontrol` succeeds.
    fn slurmctld(state: &str, reason: Option<&str>) -> (tempfile::TempDir, Root, Fake) {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("usr/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("scontrol"), "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("scontrol"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let root = Root::new(dir.path());
        let shown = show(state, reason);
        let fake = Fake::new().on(move |call| match call {
            Call::Run { args, .. } => Some(Answer::Output(Output::Ran {
                code: Some(0),
                stdout: if args[0] == "show" {
                    shown.clone()
                } else {
                    String::new()
                },
                stderr: String::new(),
            })),
            _ => None,
        });
        (dir, root, fake)
    }

    /// The scontrol calls, as their arguments.
    fn scontrol_calls(fake: &Fake, root: &Root) -> Vec<String> {
        let prefix = format!("run {} ", root.join("usr/bin/scontrol").display());
        fake.calls()
            .iter()
            .filter_map(|c| c.strip_prefix(&prefix))
            .map(|c| c.trim_end_matches(" (at most 10 s)").to_string())
            .collect()
    }

    fn not_ready() -> Health {
        Health::of(true, vec![finding(rpcrdma_hooks::ID, "rpcrdma", true)])
    }

    fn warned() -> Health {
        Health::of(
            true,
            vec![finding(nvidia_fs_devices::ID, "nvidia_fs", false)],
        )
    }

    const SHOW: &str = "show node gpu01";
    const DRAIN: &str = "update NodeName=gpu01 State=DRAIN Reason=nfs-gds: rpcrdma-hooks rpcrdma";
    const RESUME: &str = "update NodeName=gpu01 State=RESUME";
    const OURS: Option<&str> = Some("nfs-gds: rpcrdma-hooks rpcrdma");

    /// One row: the health, whether nfs-gds drained the node, the state and reason slurmctld
    /// shows, the scontrol calls made, and whether the record of a drain is left.
    type Row = (
        Health,
        bool,
        &'static str,
        Option<&'static str>,
        Vec<&'static str>,
        bool,
    );

    /// Every row of the decision table: health × drained by nfs-gds × what slurmctld shows, the
    /// scontrol calls made and whether the record of a drain is left.
    #[test]
    fn the_decision_table_counts_every_scontrol_call() {
        let cases: Vec<Row> = vec![
            (Health::Ready, false, "IDLE", None, vec![], false),
            (warned(), false, "IDLE", None, vec![], false),
            (Health::NotApplicable, false, "IDLE", None, vec![], false),
            // Not asked, so a reason of ours without the record changes nothing.
            (Health::Ready, false, "IDLE+DRAIN", OURS, vec![], false),
            (
                Health::Ready,
                true,
                "IDLE+DRAIN",
                OURS,
                vec![SHOW, RESUME],
                false,
            ),
            (
                warned(),
                true,
                "IDLE+DRAIN",
                OURS,
                vec![SHOW, RESUME],
                false,
            ),
            (
                Health::NotApplicable,
                true,
                "IDLE+DRAIN",
                OURS,
                vec![SHOW, RESUME],
                false,
            ),
            (
                Health::Ready,
                true,
                "IDLE+DRAIN",
                Some("bad DIMM"),
                vec![SHOW],
                false,
            ),
            (
                Health::Ready,
                true,
                "DOWN*",
                Some("Not responding"),
                vec![SHOW],
                false,
            ),
            (Health::Ready, true, "IDLE", None, vec![SHOW], false),
            (not_ready(), false, "IDLE", None, vec![SHOW, DRAIN], true),
            (not_ready(), true, "MIXED", None, vec![SHOW, DRAIN], true),
            (not_ready(), true, "IDLE+DRAIN", OURS, vec![SHOW], true),
            (not_ready(), false, "IDLE+DRAIN", OURS, vec![SHOW], true),
            (
                not_ready(),
                false,
                "IDLE+DRAIN",
                Some("bad DIMM"),
                vec![SHOW],
                false,
            ),
            (
                not_ready(),
                true,
                "DOWN+DRAIN",
                Some("reboot"),
                vec![SHOW],
                false,
            ),
        ];
        for (health, drained_by_us, state, reason, want, recorded) in cases {
            let (_dir, root, fake) = slurmctld(state, reason);
            if drained_by_us {
                state::remember(&root, "gpu01", "nfs-gds: rpcrdma-hooks rpcrdma").unwrap();
            }
            let budget = Budget::start(&fake, &root, 30);
            let mut asked_name = false;
            carry_out(&budget, &health, drained_by_us, || {
                asked_name = true;
                Ok("gpu01".into())
            })
            .unwrap_or_else(|e| panic!("{health:?} {drained_by_us} {state}: {e}"));
            let case = format!("{health:?}, drained by us {drained_by_us}, {state} {reason:?}");
            assert_eq!(scontrol_calls(&fake, &root), want, "{case}");
            assert_eq!(asked_name, !want.is_empty(), "{case}");
            assert_eq!(state::drained_by_us(&root), Ok(recorded), "{case}");
        }
    }

    #[test]
    fn each_scontrol_gets_at_most_ten_seconds_and_what_is_left_of_the_timeout() {
        let (_dir, root, fake) = slurmctld("IDLE", None);
        let budget = Budget::start(&fake, &root, 30);
        budget.scontrol(&scontrol::show_node("gpu01")).unwrap();
        (&fake as &dyn System).sleep(Duration::from_secs(26));
        budget.scontrol(&scontrol::show_node("gpu01")).unwrap();
        let calls = fake.calls();
        assert!(
            calls[0].ends_with("show node gpu01 (at most 10 s)"),
            "{calls:?}"
        );
        assert!(
            calls[1].ends_with("show node gpu01 (at most 4 s)"),
            "{calls:?}"
        );
        (&fake as &dyn System).sleep(Duration::from_secs(5));
        let e = budget.scontrol(&scontrol::resume("gpu01")).unwrap_err();
        assert!(e.to_string().contains("ran out of its 30 s"), "{e}");
        assert_eq!(fake.calls().len(), 2, "nothing is run past the deadline");
    }

    #[test]
    fn no_scontrol_a_failing_or_a_stopped_one_is_an_error_that_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let fake = Fake::new();
        let budget = Budget::start(&fake, &root, 30);
        let e = carry_out(&budget, &not_ready(), false, || Ok("gpu01".into())).unwrap_err();
        assert!(e.to_string().contains("scontrol is not installed"), "{e}");
        assert_eq!(fake.calls(), Vec::<String>::new());

        for (answer, said) in [
            (
                Output::Ran {
                    code: Some(1),
                    stdout: String::new(),
                    stderr: "slurm_load_node error: Unable to contact slurm controller\n".into(),
                },
                "failed (exit 1): slurm_load_node error: Unable to contact slurm controller",
            ),
            (
                Output::Ran {
                    code: None,
                    stdout: String::new(),
                    stderr: "scontrol did not finish within 10 s and was stopped".into(),
                },
                "did not finish: scontrol did not finish within 10 s",
            ),
        ] {
            let (_dir, root, _) = slurmctld("IDLE", None);
            let fake = Fake::new().on(move |call| match call {
                Call::Run { .. } => Some(Answer::Output(answer.clone())),
                _ => None,
            });
            let budget = Budget::start(&fake, &root, 30);
            let e = carry_out(&budget, &not_ready(), false, || Ok("gpu01".into())).unwrap_err();
            assert!(e.to_string().contains(said), "{e}");
            assert_eq!(scontrol_calls(&fake, &root), [SHOW]);
            assert_eq!(state::drained_by_us(&root), Ok(false));
        }
    }
}
