//! The helper's flow, from a validated request to mount(8)'s exit code.
//!
//! 1. Load rpcrdma (if configured and not loaded), so the module that will carry the mount can
//!    be checked; then the node pre-checks and the transport trap, re-run for up to the policy's
//!    wait while enforced failures remain that may clear by themselves.
//! 2. An enforced failure refuses before mounting (32). `-f` stops here either way, printing the
//!    checks and the plan.
//! 3. Take the mount point's lock (one helper per DIR at a time) and hold SIGTERM, SIGINT and
//!    SIGHUP; pin the mount on top of DIR so that its id and device cannot be reused meanwhile;
//!    mount through the [`Mounter`], noting the mounts on the target before and after, each by
//!    its identity (mount id, device, parent, mount point: the kernel reuses freed ids at once)
//!    and its source: `mount.nfs` exits 0 when the target already carries the same mount, so
//!    only a new identity is a new mount, and only a new mount of SPEC's export is the helper's
//!    ([`sort_new_on`]: by the export the kernel shows, by address, or as the one new mount that
//!    shares an earlier mount's NFS superblock and so is shown under that mount's name).
//! 4. Verify every new mount of SPEC on DIR: its `xprt:` lines and options. An enforced failure
//!    unmounts exactly that mount, by its identity — only if it is still the one on top of the
//!    target — and refuses (32). Several new mounts of SPEC at once (another mount of the same
//!    source ran beside this one) are all judged, and none is unmounted: which one the helper
//!    made cannot be told; the message names them all and the command that removes them. A new
//!    mount of another server or export is someone else's, and left alone.
//! 5. A held signal that arrived meanwhile ends the helper now, with 128 + its number.
//!
//! A remount runs no pre-checks (the transport of an existing mount cannot change): it is
//! passed to `mount.nfs`, then the existing mount is verified; a failure refuses (32) but the
//! mount, which nfs-gds did not make, is left in place.

use std::cell::RefCell;
use std::io::Write;

use super::exit_code::{FAIL, SUCCESS, SYSERR};
use super::identity::{sort_new_on, MountIdentity, NewOnTarget, Ours};
use super::modprobe::Modprobe;
use super::mounter::{MountCall, MountError, MountStatus, Mounter};
use super::request::MountRequest;
use super::target_lock::{self, LockError};
use super::{signals, wait};
use crate::checks::asked::{Asked, AskedBy};
use crate::checks::registry::{self, MountSubject};
use crate::checks::render::plural;
use crate::checks::{fix, render, CheckResult};
use crate::escape::escape_control;
use crate::host::mounts::{read_mount_table, Mount, MountTable, MountsError};
use crate::host::{HostError, HostFacts, Root};
use crate::kmod::RPCRDMA;
use crate::nfs::ServerAddrs;
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
}

impl FlowError {
    fn exit_code(&self) -> u8 {
        match self {
            FlowError::Host(_) | FlowError::Mounts(_) => SYSERR,
            FlowError::Mount(e) => e.exit_code(),
            FlowError::Lock(LockError::Io { .. }) => SYSERR,
            FlowError::Lock(LockError::Busy { .. }) => FAIL,
        }
    }
}

/// The side effects and outputs the flow works with.
pub struct Helper<'a> {
    pub root: &'a Root,
    pub mounter: &'a mut dyn Mounter,
    /// `None` when no modprobe is installed.
    /// `modprobe`; `None` when none is installed.
    pub modprobe: Option<&'a Modprobe>,
    /// Every effect on the machine: running programs, mount(2), umount2, the clock.
    pub system: &'a dyn System,
    /// The `-f` report and plan.
    pub out: &'a mut dyn Write,
    /// Every diagnostic, one line each, prefixed `nfs-gds: `.
    pub err: &'a mut dyn Write,
}

impl std::fmt::Debug for Helper<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Helper")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// One call of the mounter: what it was asked, how it ended, and the table around it.
#[derive(Debug, Clone, Copy)]
struct Attempt<'a> {
    call: &'a MountCall,
    status: MountStatus,
    before: &'a MountTable,
    after: &'a MountTable,
}

/// What happened when the helper tried to take back a refused mount.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Undo {
    Unmounted,
    /// The unmount was attempted and failed, or the mount is still there afterwards.
    Failed(String),
    /// The helper did not touch it: it is no longer the mount on top of the target.
    NotAttempted(String),
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
    let probe = policy.runs_probe(false);
    if probe {
        facts.run_probe(None);
    }
    let mut results = registry::node_checks(&facts, probe);
    let table = read_mount_table(root)?;
    results.extend(registry::before_mount(&MountSubject::Planned {
        server: &req.source.server,
        version: req.options.version,
        table: &table,
        asked: &[Asked::new(AskedBy::Helper, req.options.option_string())],
        kernel: Some(&facts.kernel),
    }));
    let results = results
        .into_iter()
        .map(|r| r.with_pointer(fix::TO_DOCTOR))
        .collect();
    Ok((results, facts))
}

impl Helper<'_> {
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

    fn print_judgement_lines(&mut self, j: &Judgement) {
        for line in journal_lines(j) {
            self.say(&line);
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
                    "WARNING: {why}: whoever can change it can swap {} for another directory while mount.nfs resolves it; nfs-gds checks where the mount appears, but keep mount points below directories only root can change",
                    req.target.display()
                ));
            }
        }

        let call = req.call();
        // One helper per mount point, and every held signal noted, from before the table is
        // read until the new mount is verified, undone or recorded.
        let _lock = target_lock::take(self.root, &req.target, self.system)?;
        let hold = signals::Hold::start();
        let before = read_mount_table(self.root)?;
        // The mount on top now cannot give its id or device to a mount that appears meanwhile.
        let pin = before
            .topmost_at(&req.target)
            .and_then(|m| self.mounter.pin(&MountIdentity::of(&m.info)));
        if let Some(sig) = hold.caught() {
            self.say(&format!(
                "stopped by {sig} before mounting; nothing was mounted on {}",
                req.target.display()
            ));
            return Ok(signals::exit_code(sig));
        }
        let status = self.mounter.mount(self.system, &call)?;
        let after = read_mount_table(self.root)?;
        drop(pin);
        let attempt = Attempt {
            call: &call,
            status,
            before: &before,
            after: &after,
        };
        let code = self.judge_new(req, policy, &attempt)?;
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

    /// Finds what the mount call made on the target and judges it: every new mount of SPEC on
    /// DIR, by identity and source; a new mount of another source is someone else's.
    fn judge_new(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
        attempt: &Attempt,
    ) -> Result<u8, FlowError> {
        let Attempt {
            status,
            before,
            after,
            ..
        } = *attempt;
        let addrs = ServerAddrs::new(self.system);
        let NewOnTarget { ours, others } =
            sort_new_on(before, after, &req.target, &req.source, &addrs);
        if !others.is_empty() {
            self.say(&format!(
                "during this mount, {} of another server or export appeared on {}: {}; not nfs-gds's, so it is neither judged nor unmounted here",
                if others.len() == 1 { "a mount" } else { "mounts" },
                req.target.display(),
                Self::list(&others)
            ));
        }
        for (m, why) in &ours {
            if let Ours::SharedSuperblock {
                first_id,
                first_source,
            } = why
            {
                self.say(&format!(
                    "the kernel shows the new mount on {} (mount id {}) as {}: it shares the NFS superblock of mount id {first_id} ({first_source}), which was there before, and with it that mount's client and transport; it is the only new NFS mount, so it is the one nfs-gds made",
                    req.target.display(),
                    m.info.mount_id,
                    m.info.source()
                ));
            }
        }
        let ours: Vec<&Mount> = ours.into_iter().map(|(m, _)| m).collect();
        let status_code = if status.success() {
            SUCCESS
        } else {
            status.exit_code()
        };
        // The helper knows exactly what it passed: the kernel's own list may have dropped some
        // of it (nconnect=, on kernels that ignore it for NFSv4.x over RDMA).
        let asked = [Asked::new(AskedBy::Helper, req.options.option_string())];
        match ours.as_slice() {
            [] => self.no_new_mount(req, policy, attempt, &others, &addrs),
            [new] => {
                let new = *new;
                let id = new.info.mount_id;
                let post = judge(
                    registry::after_mount(new, after, req.options.port, &asked),
                    policy,
                );
                if post.refused() {
                    let identity = self.mounter.identify(MountIdentity::of(&new.info));
                    let undo = self.undo(&identity);
                    self.refuse_after_mount(req, id, &post, &undo);
                    return Ok(FAIL);
                }
                self.keep(req, new, &post, after);
                Ok(status_code)
            }
            several => {
                let judged: Vec<(&Mount, Judgement)> = several
                    .iter()
                    .map(|m| {
                        let post = judge(
                            registry::after_mount(m, after, req.options.port, &asked),
                            policy,
                        );
                        (*m, post)
                    })
                    .collect();
                if judged.iter().any(|(_, post)| post.refused()) {
                    self.refuse_several(req, &judged);
                    return Ok(FAIL);
                }
                for (m, post) in &judged {
                    self.keep(req, m, post, after);
                }
                Ok(status_code)
            }
        }
    }

    /// "path (mount id N)" for each mount.
    fn list(mounts: &[&Mount]) -> String {
        mounts
            .iter()
            .map(|m| {
                format!(
                    "{} of {} (mount id {})",
                    m.info.mount_point().display(),
                    m.info.source(),
                    m.info.mount_id
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
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
        // Not made with this request's options: it is judged as verify and the agent judge it,
        // on the port and with the asks the node declared for it (the helper's record, the
        // fstab line), the request's port where nothing was recorded.
        let declared = read_declared(self.root)?;
        let port = expected_port(m, &declared, req.options.port);
        let post = judge(
            registry::after_mount(m, table, port, &declared.asked(m)),
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

    /// Unmounts `mount` if, and only if, it is still the mount on top of its mount point.
    /// The unmounter checks the identity again on the mount it holds, so a mount replaced
    /// between this look and the unmount is not taken down.
    fn undo(&mut self, mount: &MountIdentity) -> Undo {
        match read_mount_table(self.root) {
            Err(e) => return Undo::NotAttempted(format!("the mount table cannot be read ({e})")),
            Ok(now) => match now.topmost_at(&mount.mount_point) {
                Some(m) if mount.matches(&m.info) => {}
                Some(m) if m.info.mount_id == mount.mount_id => {
                    return Undo::NotAttempted(format!(
                        "the mount on top of it (id {}) is another mount that reuses the id",
                        m.info.mount_id
                    ))
                }
                Some(m) => {
                    return Undo::NotAttempted(format!(
                        "another mount (id {}) is now on top of it",
                        m.info.mount_id
                    ))
                }
                None => return Undo::NotAttempted("it is no longer mounted".into()),
            },
        }
        if let Err(e) = self.mounter.unmount(self.system, mount) {
            return Undo::Failed(e.to_string());
        }
        match read_mount_table(self.root) {
            Ok(now) if mount.find(&now).is_some() => {
                Undo::Failed("it is still in the mount table after unmounting".into())
            }
            Ok(_) => Undo::Unmounted,
            Err(e) => Undo::Failed(format!("the mount table cannot be read afterwards ({e})")),
        }
    }

    fn refuse_after_mount(&mut self, req: &MountRequest, id: u32, post: &Judgement, undo: &Undo) {
        let outcome = match undo {
            Undo::Unmounted => "it was unmounted again".to_string(),
            Undo::Failed(_) => "UNMOUNTING IT FAILED".to_string(),
            Undo::NotAttempted(_) => "it was NOT unmounted".to_string(),
        };
        self.say(&format!(
            "REFUSED {}: the new mount (id {id}) failed {} under policy enforce; {outcome}",
            Self::subject(req),
            plural(post.refusals.len(), "check")
        ));
        self.print_judgement_lines(post);
        let command = self.mounter.unmount_command(&req.target);
        match undo {
            Undo::Unmounted => {}
            Undo::Failed(why) => self.say(&format!(
                "THE REFUSED MOUNT IS STILL MOUNTED on {} (mount id {id}): {why}; unmount it now: {command}",
                req.target.display()
            )),
            Undo::NotAttempted(why) => self.say(&format!(
                "the refused mount (id {id}) was left alone because {why}; check `findmnt {}` and unmount it by hand: {command}",
                req.target.display()
            )),
        }
        self.say(DOCTOR_HINT);
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
        let _ = writeln!(
            self.out,
            "  mount:   {}",
            escape_control(&self.mounter.plan(&req.call()))
        );
        let _ = writeln!(
            self.out,
            "  verify:  a new mount id on {}; every xprt: line rdma; proto={}; port={}",
            escape_control(&req.target.display().to_string()),
            req.options.netid,
            req.options.port
        );
        let any_enforced = registry::all()
            .iter()
            .any(|c| policy.level(c.id) == Level::Enforce);
        let _ = writeln!(
            self.out,
            "  refuse:  {}",
            if any_enforced {
                "unmount that mount again if an enforced check fails"
            } else {
                "never (no check is enforced)"
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

#[cfg(test)]
mod tests;
mod unclear;
