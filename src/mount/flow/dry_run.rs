//! `-f`: the checks and the plan, printed as `check` prints them, with the verdict the policy
//! gives; nothing is mounted.

use super::*;

impl Helper<'_> {
    pub(super) fn fake(
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
}
