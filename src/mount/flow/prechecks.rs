//! The checks before mounting: rpcrdma loaded first when the policy says so, then the node
//! judge's checks and the planned mount's (the transport trap, what the kernel will do with the
//! options), re-run for up to the policy's wait while enforced failures remain that may clear by
//! themselves.

use super::say::write_line;
use super::*;

/// The node checks and the transport trap, after loading rpcrdma when that is configured.
/// Notes for the admin (a failed modprobe) go to `note`.
pub(super) fn precheck(
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
    let mut results = node::checks(&mut facts, policy, Ask::new(system, false));
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

impl Helper<'_> {
    /// The pre-checks, waited for as the policy says (not under `-f`), with the facts the last
    /// round judged.
    pub(super) fn prechecks(
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
}
