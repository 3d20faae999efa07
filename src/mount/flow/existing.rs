//! Mounts nfs-gds did not make: one already on DIR, and a remount. Each is judged as `verify`
//! judges it and never unmounted: a failure refuses (32) and says how to mount again.

use super::*;
use crate::host::mount_localio::MountLocalio;

impl Helper<'_> {
    /// Judges a mount nfs-gds did not make (already mounted, remount). It is never unmounted.
    pub(super) fn verify_existing(
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
            registry::verify_mount(
                m,
                table,
                port,
                &declared.asked(m),
                &MountLocalio::read(self.root, table)?,
                Detail::Full,
            ),
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

    pub(super) fn remount(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
    ) -> Result<u8, FlowError> {
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
