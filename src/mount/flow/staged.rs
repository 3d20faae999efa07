//! What the mount call left at the run's staging point, and what becomes of it: judged there,
//! then moved onto DIR or unmounted. Everything on the staging point is the helper's own by
//! construction (nobody else mounts in its directory), so nothing here asks the mount table
//! which mount is whose; a mount on DIR is only ever compared with the staged one, never taken
//! for it.

use super::{FlowError, Helper};
use crate::checks::asked::{Asked, AskedBy};
use crate::checks::registry;
use crate::checks::render::plural;
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::{read_mount_table, read_mount_table_in_flight, Mount, MountTable};
use crate::mount::exit_code::{FAIL, SUCCESS, SYSERR};
use crate::mount::identity::MountIdentity;
use crate::mount::mounter::MountStatus;
use crate::mount::mover::HeldTarget;
use crate::mount::request::MountRequest;
use crate::mount::stage::Stage;
use crate::policy::MountPolicy;
use crate::verdict::{judge, Judgement, DOCTOR_HINT};

/// Whether two mounts show the same filesystem at the same place in it: DIR already carries the
/// very mount the staging point got (NFS shares one superblock between mounts of an export).
fn same_mount(a: &Mount, b: &Mount) -> bool {
    a.info.device_number() == b.info.device_number() && a.info.root() == b.info.root()
}

impl Helper<'_> {
    /// Settles the staging point after the mount call ended with `status`; the result is the
    /// exit code. Nothing is left on the staging point when this returns, unless an unmount
    /// failed, which is said.
    pub(super) fn settle(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
        stage: &Stage,
        target: &HeldTarget,
        status: MountStatus,
    ) -> u8 {
        let table = match read_mount_table_in_flight(self.root) {
            Ok(t) => t,
            Err(e) => {
                self.say(&format!(
                    "cannot read the mount table after mounting ({e}); nothing was moved onto {}",
                    req.target.display()
                ));
                self.take_back_all(stage);
                return SYSERR;
            }
        };
        let staged = table.topmost_at(stage.mount_point()).cloned();
        let Some(staged) = staged else {
            if !status.success() {
                self.say(&format!(
                    "{} failed ({status}); nothing was mounted on {}",
                    self.program(req),
                    req.target.display()
                ));
                return status.exit_code();
            }
            self.say(&format!(
                "the mount of {} reported success, but nothing appeared at its staging point; nothing was mounted on {}",
                req.spec,
                req.target.display()
            ));
            return FAIL;
        };
        // A mount that appeared is judged even when mount.nfs then failed (it was stopped by a
        // signal the helper passed on): kept, it is moved, and mount.nfs's status passed on.
        let status_code = if status.success() {
            SUCCESS
        } else {
            status.exit_code()
        };
        match self.settle_mount(req, policy, &table, &staged, target) {
            Ok(SUCCESS) => status_code,
            Ok(code) => code,
            Err(e) => {
                self.say(&e.to_string());
                self.take_back_all(stage);
                e.exit_code()
            }
        }
    }

    fn settle_mount(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
        table: &MountTable,
        staged: &Mount,
        target: &HeldTarget,
    ) -> Result<u8, FlowError> {
        let identity = self.mounter.identify(MountIdentity::of(&staged.info));
        // No second copy of a mount on DIR: `mount DIR` or `mount -a` again.
        if let Some(top) = table.topmost_at(&req.target) {
            if same_mount(top, staged) {
                let id = top.info.mount_id;
                if let Err(why) = self.take_back(&identity) {
                    self.say(&format!(
                        "the second copy nfs-gds mounted at its staging point (id {}) could not be unmounted: {why}; the next nfs-gds helper or agent run removes it",
                        identity.mount_id
                    ));
                }
                self.say(&format!(
                    "{} was already mounted (mount id {id}, {}) and nfs-gds stacks no second copy of it; verifying that mount",
                    req.target.display(),
                    top.info.source()
                ));
                let now = read_mount_table(self.root)?;
                return self.verify_existing(
                    req,
                    policy,
                    &now,
                    id,
                    "it was there before nfs-gds ran",
                );
            }
        }
        // The helper knows exactly what it passed: the kernel's own list may have dropped some
        // of it (nconnect=, on kernels that ignore it for NFSv4.x over RDMA).
        let asked = [Asked::new(AskedBy::Helper, req.options.option_string())];
        let post = judge(
            registry::after_mount(
                staged,
                table,
                req.options.port,
                &asked,
                &MountLocalio::read(self.root, table)?,
            ),
            policy,
        );
        if post.refused() {
            let undone = self.take_back(&identity);
            self.refuse_staged(req, &post, undone);
            return Ok(FAIL);
        }
        if let Err(e) = self.mounter.move_onto(self.system, &identity, target) {
            let undone = self.take_back(&identity);
            self.say(&format!(
                "{e}; {}",
                match undone {
                    Ok(()) => format!(
                        "the mount was unmounted again and nothing was mounted on {}",
                        req.target.display()
                    ),
                    Err(why) => format!("AND IT COULD NOT BE UNMOUNTED: {why}"),
                }
            ));
            return Ok(FAIL);
        }
        // A move keeps the mount's id: the mount on DIR with that id is the one judged above.
        let after = read_mount_table(self.root)?;
        let moved = after
            .mounts
            .iter()
            .find(|m| m.info.mount_id == identity.mount_id && m.info.mount_point() == req.target);
        match moved {
            Some(moved) => self.keep(req, moved, &post, &after),
            None => self.say(&format!(
                "the mount (id {}) was moved onto {}, but the mount table no longer shows it there: someone unmounted or moved it meanwhile",
                identity.mount_id,
                req.target.display()
            )),
        }
        Ok(SUCCESS)
    }

    /// The program (or call) the mounter runs, as its plan names it first.
    fn program(&self, req: &MountRequest) -> String {
        let plan = self.mounter.plan(&req.call());
        plan.split(' ').next().unwrap_or("mount").to_string()
    }

    /// Unmounts the helper's own staged mount, by its identity.
    fn take_back(&mut self, identity: &MountIdentity) -> Result<(), String> {
        self.mounter
            .unmount(self.system, identity)
            .map_err(|e| e.to_string())?;
        match read_mount_table_in_flight(self.root) {
            Ok(now) if identity.find(&now).is_some() => {
                Err("it is still in the mount table after unmounting".into())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(format!("the mount table cannot be read afterwards ({e})")),
        }
    }

    /// Unmounts whatever is on the run's staging point, topmost first: all of it is the
    /// helper's. Said when something cannot be undone; the stage then stays for the next sweep.
    pub(super) fn take_back_all(&mut self, stage: &Stage) {
        let table = match read_mount_table_in_flight(self.root) {
            Ok(t) => t,
            Err(e) => {
                self.say(&format!(
                    "cannot read the mount table ({e}): whatever mount.nfs left at {} stays until the next nfs-gds helper or agent run removes it",
                    stage.mount_point().display()
                ));
                return;
            }
        };
        let mut ours: Vec<MountIdentity> = table
            .mounts
            .iter()
            .filter(|m| m.info.mount_point().starts_with(stage.mount_point()))
            .map(|m| MountIdentity::of(&m.info))
            .collect();
        ours.reverse();
        for m in ours {
            let identity = self.mounter.identify(m);
            if let Err(why) = self.take_back(&identity) {
                self.say(&format!(
                    "the mount at {} (id {}) could not be unmounted: {why}; the next nfs-gds helper or agent run removes it",
                    stage.mount_point().display(),
                    identity.mount_id
                ));
            }
        }
    }

    fn refuse_staged(&mut self, req: &MountRequest, post: &Judgement, undone: Result<(), String>) {
        let outcome = match &undone {
            Ok(()) => format!(
                "it was unmounted before it reached {}, where nothing was mounted",
                req.target.display()
            ),
            Err(_) => format!(
                "it never reached {}, but UNMOUNTING IT FAILED",
                req.target.display()
            ),
        };
        self.say(&format!(
            "REFUSED {}: the new mount failed {} under policy enforce; {outcome}",
            Self::subject(req),
            plural(post.refusals.len(), "check")
        ));
        self.print_judgement_lines(post);
        if let Err(why) = undone {
            self.say(&format!(
                "the refused mount stays below {} ({why}); the next nfs-gds helper or agent run removes it, or unmount it by hand",
                crate::host::mounts::staged::STAGE_AREA
            ));
        }
        self.say(DOCTOR_HINT);
    }
}
