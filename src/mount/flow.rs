//! The helper's flow, from a validated request to mount(8)'s exit code.
//!
//! 1. Load rpcrdma (if configured and not loaded), so the module that will carry the mount can
//!    be checked; then the node pre-checks and the transport trap, re-run for up to the policy's
//!    wait while enforced failures remain that may clear by themselves.
//! 2. An enforced failure refuses before mounting (32). `-f` stops here either way, printing the
//!    checks and the plan.
//! 3. Take the mount point's lock (one helper per DIR at a time), hold SIGTERM, SIGINT and
//!    SIGHUP, and open DIR (never triggering its automount). Make this run's own directory below
//!    the staging area ([`super::stage`]) and mount there, with `-n`: nobody else mounts there, so
//!    the mount on it is the helper's by construction, whatever name the kernel shows.
//! 4. Judge that mount where it is ([`staged`]): a refused mount is unmounted from the staging
//!    point and never appears on DIR; an accepted one is moved onto DIR through the descriptor
//!    opened in step 3 and recorded. When DIR's top mount already is this very mount (the same
//!    device and root: a second `mount` of the same line), nothing is stacked: the staged copy
//!    is unmounted and the existing mount is judged as `verify` judges it.
//! 5. The run's staging directory is removed; a held signal that arrived meanwhile ends the
//!    helper now, with 128 + its number.
//!
//! A remount runs no pre-checks (the transport of an existing mount cannot change): it is
//! passed to `mount.nfs`, then the existing mount is verified; a failure refuses (32) but the
//! mount, which nfs-gds did not make, is left in place.

use std::cell::RefCell;
use std::io::Write;

use super::exit_code::{FAIL, SUCCESS, SYSERR};
use super::modprobe::Modprobe;
use super::mounter::{MountError, Mounter};
use super::mover::MoveError;
use super::request::MountRequest;
use super::stage::{Stage, StageError, Swept};
use super::target_lock::{self, LockError};
use super::{signals, wait};
use crate::checks::asked::{Asked, AskedBy};
use crate::checks::registry::{self, Detail, MountSubject};
use crate::checks::render::plural;
use crate::checks::{fix, render, CheckResult};
use crate::escape::escape_control;
use crate::host::mounts::staged::STAGE_AREA;
use crate::host::mounts::{read_mount_table, Mount, MountTable, MountsError};
use crate::host::{HostError, HostFacts, Root};
use crate::judge::node::{self, Ask};
use crate::kmod::RPCRDMA;
use crate::policy::intent::{expected_port, read_declared};
use crate::policy::{Level, MountPolicy};
use crate::system::System;
use crate::verdict::{journal_lines, judge, Judgement, DOCTOR_HINT};

const PREFIX: &str = "nfs-gds: ";

#[derive(Debug, thiserror::Error)]
enum FlowError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Mounts(#[from] MountsError),
    #[error(transparent)]
    Mount(#[from] MountError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Stage(#[from] StageError),
    #[error(transparent)]
    Target(#[from] MoveError),
}

impl FlowError {
    fn exit_code(&self) -> u8 {
        match self {
            FlowError::Host(_) | FlowError::Mounts(_) => SYSERR,
            FlowError::Mount(e) => e.exit_code(),
            FlowError::Lock(LockError::Io { .. }) => SYSERR,
            FlowError::Lock(LockError::Busy { .. }) => FAIL,
            FlowError::Stage(StageError::Busy { .. }) => FAIL,
            FlowError::Stage(_) => SYSERR,
            FlowError::Target(MoveError::NotADirectory { .. }) => FAIL,
            FlowError::Target(_) => SYSERR,
        }
    }
}

/// The side effects and outputs the flow works with.
pub struct Helper<'a> {
    pub root: &'a Root,
    pub mounter: &'a mut dyn Mounter,
    /// `modprobe`; `None` when none is installed.
    pub modprobe: Option<&'a Modprobe>,
    /// Every effect on the machine: running programs, mount(2), umount2, the clock.
    pub system: &'a dyn System,
    /// The `-f` report and plan.
    pub out: &'a mut dyn Write,
    /// Every diagnostic, one line each, prefixed `nfs-gds: `.
    pub err: &'a mut dyn Write,
    /// While a mount is staged: the staging point and DIR, so that the checks' lines name DIR,
    /// where the admin asked for the mount, never a path only nfs-gds uses.
    shown_as: Option<(String, String)>,
}

impl std::fmt::Debug for Helper<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Helper")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// One diagnostic line. What it quotes (a SPEC, a path, a line of a file) may hold a newline or
/// a terminal escape; those are escaped so that nothing can forge a line of its own.
fn write_line(w: &mut dyn Write, line: &str) {
    let _ = writeln!(w, "{PREFIX}{}", escape_control(line));
}

/// The node checks and the transport trap, after loading rpcrdma when that is configured.
/// Notes for the admin (a failed modprobe) go to `note`.
fn precheck(
    root: &Root,
    system: &dyn System,
    modprobe: Option<&Modprobe>,
    req: &MountRequest,
    policy: &MountPolicy,
    load_tried: &mut bool,
    note: &mut dyn FnMut(String),
) -> Result<(Vec<CheckResult>, HostFacts), FlowError> {
    let mut facts = HostFacts::read(root)?;
    let wants_load = policy.modprobe_rpcrdma
        && !req.fake
        && !facts.rpcrdma.loaded
        && !facts.rpcrdma.is_builtin();
    if wants_load {
        match modprobe {
            Some(modprobe) => match modprobe.load(system, RPCRDMA) {
                Ok(()) => facts = HostFacts::read(root)?,
                Err(e) if !*load_tried => note(format!(
                    "could not load {RPCRDMA} before checking ({e}); the checks judge the module file only"
                )),
                Err(_) => {}
            },
            None if !*load_tried => note(format!(
                "no modprobe in {} below {}; the kernel loads {RPCRDMA} when mounting, so only the module file is checked",
                crate::host::io::programs::SEARCH_PATH,
                root.dir().display()
            )),
            None => {}
        }
        *load_tried = true;
    }
    let mut results = node::checks(&mut facts, policy, Ask::new(false));
    let table = read_mount_table(root)?;
    let planned = registry::before_mount(&MountSubject::Planned {
        server: &req.source.server,
        version: req.options.version,
        table: &table,
        asked: &[Asked::new(AskedBy::Helper, req.options.option_string())],
        kernel: Some(&facts.kernel),
    });
    results.extend(planned.into_iter().map(|r| r.with_pointer(fix::TO_DOCTOR)));
    Ok((results, facts))
}

impl<'a> Helper<'a> {
    /// The flow with these effects and outputs.
    pub fn new(
        root: &'a Root,
        mounter: &'a mut dyn Mounter,
        modprobe: Option<&'a Modprobe>,
        system: &'a dyn System,
        out: &'a mut dyn Write,
        err: &'a mut dyn Write,
    ) -> Self {
        Helper {
            root,
            mounter,
            modprobe,
            system,
            out,
            err,
            shown_as: None,
        }
    }

    /// Runs the request; the result is mount(8)'s exit code.
    pub fn run(&mut self, req: &MountRequest, policy: &MountPolicy) -> u8 {
        let result = if req.options.remount {
            self.remount(req, policy)
        } else {
            self.mount(req, policy)
        };
        match result {
            Ok(code) => code,
            Err(e) => {
                self.say(&e.to_string());
                e.exit_code()
            }
        }
    }

    fn say(&mut self, line: &str) {
        write_line(self.err, line);
    }

    fn subject(req: &MountRequest) -> String {
        format!("{} on {}", req.spec, req.target.display())
    }

    /// The lines of a judgement; a staged mount's checks name DIR, where the admin asked for
    /// the mount, not the staging point.
    fn print_judgement_lines(&mut self, j: &Judgement) {
        for line in journal_lines(j) {
            match &self.shown_as {
                Some((staged, target)) if line.contains(staged.as_str()) => {
                    write_line(self.err, &line.replace(staged.as_str(), target))
                }
                _ => write_line(self.err, &line),
            }
        }
    }

    /// The pre-checks, waited for as the policy says (not under `-f`), with the facts the last
    /// round judged.
    fn prechecks(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
    ) -> Result<(Judgement, HostFacts), FlowError> {
        let root = self.root;
        let system = self.system;
        let modprobe = self.modprobe;
        let err = RefCell::new(&mut *self.err);
        let mut load_tried = false;
        let limit = if req.fake {
            std::time::Duration::ZERO
        } else {
            policy.wait
        };
        let mut last_facts = None;
        let judgement = wait::until_accepted(
            limit,
            system,
            || {
                let (results, facts) = precheck(
                    root,
                    system,
                    modprobe,
                    req,
                    policy,
                    &mut load_tried,
                    &mut |l| write_line(*err.borrow_mut(), &l),
                )?;
                last_facts = Some(facts);
                Ok::<_, FlowError>(judge(results, policy))
            },
            |l| write_line(*err.borrow_mut(), &l),
        )?;
        let facts = last_facts.unwrap_or_else(|| unreachable!("until_accepted attempts once"));
        Ok((judgement, facts))
    }

    fn mount(&mut self, req: &MountRequest, policy: &MountPolicy) -> Result<u8, FlowError> {
        let (pre, facts) = self.prechecks(req, policy)?;
        if req.fake {
            return self.fake(req, policy, &pre, &facts);
        }
        if pre.refused() {
            self.say(&format!(
                "REFUSED to mount {}: {} failed under policy enforce; nothing was mounted",
                Self::subject(req),
                plural(pre.refusals.len(), "check")
            ));
            self.print_judgement_lines(&pre);
            self.say(DOCTOR_HINT);
            return Ok(FAIL);
        }
        self.warn_if_needed(req, &pre, "mounting");
        if self.root.is_host() {
            if let Some((_, why)) = super::target_path::swappable_entry(&req.target) {
                self.say(&format!(
                    "WARNING: {why}: whoever can change it can swap {} for another directory before nfs-gds opens it; nfs-gds moves the mount through the directory it opened, but keep mount points below directories only root can change",
                    req.target.display()
                ));
            }
        }

        // One helper per mount point, and every held signal noted, from before DIR is opened
        // until the mount is moved onto it, unmounted, or recorded.
        let _lock = target_lock::take(self.root, &req.target, self.system)?;
        let hold = signals::Hold::start();
        // DIR is held from now on: the move goes through this descriptor, whatever is swapped
        // into the path meanwhile.
        let target = self.mounter.hold_target(&req.target)?;
        let (stage, swept) = Stage::make(self.root, self.system, self.mounter)?;
        self.report_swept(&swept);
        if let Some(sig) = hold.caught() {
            self.say(&format!(
                "stopped by {sig} before mounting; nothing was mounted on {}",
                req.target.display()
            ));
            return Ok(signals::exit_code(sig));
        }
        let call = req.staged_call(stage.mount_point());
        if req.verbose > 0 {
            self.say(&format!(
                "mounting {} at the staging point {}: it is verified there and moved onto {} only if the policy lets it stand",
                req.spec,
                stage.mount_point().display(),
                req.target.display()
            ));
        }
        self.shown_as = Some((
            stage.mount_point().display().to_string(),
            req.target.display().to_string(),
        ));
        let status = self.mounter.mount(self.system, &call);
        let code = match status {
            Ok(status) => self.settle(req, policy, &stage, &target, status),
            Err(e) => {
                // The mounter could not run; anything it left on the staging point is taken
                // back all the same.
                self.say(&e.to_string());
                self.take_back_all(&stage);
                e.exit_code()
            }
        };
        self.shown_as = None;
        drop(stage);
        match hold.caught() {
            Some(sig) => {
                self.say(&format!(
                    "{sig} arrived while mounting {}: nfs-gds finished with the mount first (as said above) and stops now",
                    Self::subject(req)
                ));
                Ok(signals::exit_code(sig))
            }
            None => Ok(code),
        }
    }

    /// Says what a sweep of the staging area took back from helpers that died.
    fn report_swept(&mut self, swept: &[Swept]) {
        for s in swept {
            self.say(&format!(
                "cleaned up after an nfs-gds helper that did not finish: {s}"
            ));
        }
    }

    /// A new mount that passed: warnings, the record for the agent, the proof under `-v`.
    fn keep(&mut self, req: &MountRequest, new: &Mount, post: &Judgement, after: &MountTable) {
        self.warn_if_needed(req, post, "mounted");
        let options = req.options.option_string();
        if let Err(e) = super::record::write_record(
            self.root,
            new,
            &req.spec,
            req.options.port,
            &options,
            after,
        ) {
            self.say(&format!(
                "{e}; nfs-gds agent will not know this mount was meant for RDMA"
            ));
        }
        if req.verbose > 0 && post.warnings.is_empty() {
            self.say(&format!(
                "mounted {} (mount id {}): {}",
                Self::subject(req),
                new.info.mount_id,
                Self::proof(new)
            ));
        }
    }

    /// Judges a mount nfs-gds did not make (already mounted, remount). It is never unmounted.
    fn verify_existing(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
        table: &MountTable,
        id: u32,
        why_kept: &str,
    ) -> Result<u8, FlowError> {
        let Some(m) = table.by_id(id) else {
            self.say(&format!(
                "mount id {id} on {} is gone; nothing to verify",
                req.target.display()
            ));
            return Ok(FAIL);
        };
        // Not made with this request's options: it is judged as verify and the agent judge it
        // (every mount check, the trap among them as context),
        // on the port and with the asks the node declared for it (the helper's record, the
        // fstab line), the request's port where nothing was recorded.
        let declared = read_declared(self.root)?;
        let port = expected_port(m, &declared, req.options.port);
        let post = judge(
            registry::verify_mount(m, table, port, &declared.asked(m), Detail::Full),
            policy,
        );
        if post.refused() {
            self.say(&format!(
                "REFUSED {}: the mount on it (id {id}) failed {} under policy enforce; {why_kept}, so nfs-gds leaves it mounted: unmount it (`{}`) and mount again",
                req.target.display(),
                plural(post.refusals.len(), "check"),
                self.mounter.unmount_command(&req.target)
            ));
            self.print_judgement_lines(&post);
            self.say(DOCTOR_HINT);
            return Ok(FAIL);
        }
        self.warn_if_needed(req, &post, "keeping");
        if req.verbose > 0 && post.warnings.is_empty() {
            self.say(&format!(
                "verified {} (mount id {id}): {}",
                req.target.display(),
                Self::proof(m)
            ));
        }
        Ok(SUCCESS)
    }

    fn proof(m: &Mount) -> String {
        format!(
            "{} over {}, proto={}, port={}",
            if m.transports().len() == 1 {
                "runs".to_string()
            } else {
                format!("all {} transports run", m.transports().len())
            },
            m.transports().join("+"),
            m.option("proto").unwrap_or("?"),
            m.port()
                .map_or_else(|| "unknown (rpcbind)".to_string(), |p| p.to_string())
        )
    }

    /// Prints the warnings of a judgement that did not refuse.
    fn warn_if_needed(&mut self, req: &MountRequest, j: &Judgement, doing: &str) {
        if j.warnings.is_empty() {
            return;
        }
        let failed = j.failed_warnings();
        if failed > 0 {
            self.say(&format!(
                "WARNING: {doing} {} although {} failed (policy warn): GPU I/O may silently go through bounce buffers",
                Self::subject(req),
                plural(failed, "check")
            ));
        }
        self.print_judgement_lines(j);
    }

    fn fake(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
        pre: &Judgement,
        facts: &HostFacts,
    ) -> Result<u8, FlowError> {
        // The judged verdict, as `check` prints it, not the policy-blind one of the results.
        let report = pre.clone().into_report(
            "mount",
            &self.root.dir().display().to_string(),
            facts.kernel.release.clone(),
            Some(Self::subject(req)),
        );
        let _ = write!(
            self.out,
            "{}",
            render::text(&report, render::TextStyle::default())
        );
        let _ = writeln!(self.out, "plan (-f: nothing is run):");
        let rpcrdma = &facts.rpcrdma;
        if policy.modprobe_rpcrdma && !rpcrdma.loaded && !rpcrdma.is_builtin() {
            let line = match self.modprobe {
                Some(l) => l.plan(RPCRDMA),
                None => format!("(no modprobe found; the kernel loads {RPCRDMA} at mount time)"),
            };
            let _ = writeln!(self.out, "  load:    {}", escape_control(&line));
        }
        if !policy.wait.is_zero() {
            let _ = writeln!(
                self.out,
                "  wait:    up to {} s for failing checks that may clear",
                policy.wait.as_secs()
            );
        }
        // SPEC, DIR and the options are quoted as given: escaped, as every message is.
        let staging = std::path::Path::new(STAGE_AREA).join("RUN/mnt");
        let dir = escape_control(&req.target.display().to_string()).into_owned();
        let _ = writeln!(
            self.out,
            "  mount:   {}",
            escape_control(&self.mounter.plan(&req.staged_call(&staging)))
        );
        let _ = writeln!(
            self.out,
            "  verify:  the mount at that staging point (RUN: this run's own directory); every xprt: line rdma; proto={}; port={}",
            req.options.netid,
            req.options.port
        );
        let any_enforced = registry::all()
            .iter()
            .any(|c| policy.level(c.id) == Level::Enforce);
        let _ = writeln!(
            self.out,
            "  move:    onto {dir}{}",
            if any_enforced {
                " if no enforced check fails"
            } else {
                ""
            }
        );
        let _ = writeln!(
            self.out,
            "  refuse:  {}",
            if any_enforced {
                format!("unmount it from the staging point if an enforced check fails; nothing ever appears on {dir}")
            } else {
                "never (no check is enforced)".to_string()
            }
        );
        if pre.refused() {
            self.say(&format!(
                "would REFUSE to mount {}: {} failed under policy enforce",
                Self::subject(req),
                plural(pre.refusals.len(), "check")
            ));
            self.print_judgement_lines(pre);
            self.say(DOCTOR_HINT);
            return Ok(FAIL);
        }
        self.warn_if_needed(req, pre, "would mount");
        Ok(SUCCESS)
    }

    fn remount(&mut self, req: &MountRequest, policy: &MountPolicy) -> Result<u8, FlowError> {
        let call = req.call();
        if req.verbose > 0 {
            self.say("remount: the transport of an existing mount cannot change, so no pre-checks; the mount is verified afterwards");
        }
        if req.fake {
            let _ = writeln!(self.out, "plan (-f: nothing is run):");
            let _ = writeln!(
                self.out,
                "  remount: {}",
                escape_control(&self.mounter.plan(&call))
            );
            let _ = writeln!(
                self.out,
                "  verify:  the mount on {}: every xprt: line rdma; proto=rdma|rdma6; port={}",
                escape_control(&req.target.display().to_string()),
                req.options.port
            );
            return Ok(SUCCESS);
        }
        let status = self.mounter.mount(self.system, &call)?;
        if !status.success() {
            self.say(&format!(
                "the remount of {} failed ({status})",
                req.target.display()
            ));
            return Ok(status.exit_code());
        }
        let after = read_mount_table(self.root)?;
        let Some(id) = after.topmost_at(&req.target).map(|m| m.info.mount_id) else {
            self.say(&format!(
                "the remount reported success, but nothing is mounted on {}",
                req.target.display()
            ));
            return Ok(FAIL);
        };
        self.verify_existing(
            req,
            policy,
            &after,
            id,
            "the remount was applied to a mount nfs-gds did not make",
        )
    }
}

mod staged;
#[cfg(test)]
mod tests;
