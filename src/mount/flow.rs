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
//!
//! This file orchestrates; each other part has its room: the checks before mounting
//! ([`prechecks`]), the judgement of the staged mount ([`staged`]), mounts nfs-gds did not make
//! ([`existing`]), `-f` ([`dry_run`]), and every line the helper says ([`say`]).

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
        if self.root.context().is_machine() {
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
}

mod dry_run;
mod existing;
mod prechecks;
mod say;
mod staged;
#[cfg(test)]
mod tests;
