//! What a check is: the one item of the registry that declares everything about itself (id,
//! doc line, scope and how to run it, default level, whether waiting can clear it), and what a
//! mount check looks at.

use super::asked::Asked;
use super::level::Level;
use super::{CheckId, CheckResult};
use crate::host::kernel::KernelInfo;
use crate::host::mount_localio::MountLocalio;
use crate::host::mounts::{Mount, MountTable};
use crate::host::HostFacts;
use crate::nfs::{NfsVersion, ServerHost};

/// What a mount check looks at.
#[derive(Debug, Clone, Copy)]
pub enum MountSubject<'a> {
    /// Before mounting `server` with `version`: only the mounts that exist, the options the
    /// mount asks for (the helper's `-o`), and the running kernel when known.
    Planned {
        server: &'a ServerHost,
        version: NfsVersion,
        table: &'a MountTable,
        asked: &'a [Asked],
        kernel: Option<&'a KernelInfo>,
    },
    /// A mount that exists, expected on `port`, with what the layers above the checks know it
    /// asked for (the kernel's own list is in `mount`) and what LOCALIO could do to it.
    Existing {
        mount: &'a Mount,
        table: &'a MountTable,
        port: u16,
        asked: &'a [Asked],
        localio: &'a MountLocalio,
    },
}

impl<'a> MountSubject<'a> {
    /// A mount that exists ([`MountSubject::Existing`]).
    pub fn existing(
        mount: &'a Mount,
        table: &'a MountTable,
        port: u16,
        asked: &'a [Asked],
        localio: &'a MountLocalio,
    ) -> Self {
        MountSubject::Existing {
            mount,
            table,
            port,
            asked,
            localio,
        }
    }
}

/// How much a mount check says of a mount that is fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every result with its summary and evidence.
    Full,
    /// A pass may come bare (no summary, no evidence): for a caller that keeps nothing of a
    /// mount whose checks all pass or skip, and asks again with `Full` for any other mount.
    /// The agent judges thousands of mounts a pass, nearly all of them fine; saying why each
    /// is fine was a third of its work. The status is the same either way.
    StatusOnly,
}

impl Detail {
    /// A pass of `id`, said in full by `say`, or bare when only the status is wanted.
    pub fn pass(self, id: CheckId, say: impl FnOnce() -> CheckResult) -> CheckResult {
        match self {
            Detail::Full => say(),
            Detail::StatusOnly => CheckResult::pass(id, String::new()),
        }
    }
}

/// When a check runs, and on what.
#[derive(Debug, Clone, Copy)]
pub enum Scope {
    /// Before any mount, on the node's facts.
    Node(fn(&HostFacts) -> CheckResult),
    /// Like `Node`, but only when the live registration probe was asked for (its outcome is in
    /// the facts then).
    Probe(fn(&HostFacts) -> CheckResult),
    /// Before a mount (on the mounts that exist), and again when an existing mount is verified.
    BeforeMount(fn(&MountSubject, Detail) -> CheckResult),
    /// Before a mount only, on what it asks for: an existing mount is judged by what it got
    /// (the after-mount checks), so `verify` does not run these.
    Planned(fn(&MountSubject, Detail) -> CheckResult),
    /// On a mount that exists: the one just made, or one being verified.
    AfterMount(fn(&MountSubject, Detail) -> CheckResult),
}

/// Everything there is to know about one check.
#[derive(Debug)]
pub struct Check {
    /// The stable id: policy keys, JSON, labels, metrics.
    pub id: CheckId,
    /// One line for the guide's check table and `policy show`: what passing means.
    pub doc: &'static str,
    pub scope: Scope,
    /// The level when the policy does not name the check; a policy `default` can only loosen it.
    pub default_level: Level,
    /// Whether re-reading the facts can make a failure pass (a module still loading at boot),
    /// so the helper's bounded wait is worth it.
    pub waitable: bool,
}

impl Check {
    pub fn is_node(&self) -> bool {
        matches!(self.scope, Scope::Node(_))
    }

    pub fn is_mount(&self) -> bool {
        matches!(
            self.scope,
            Scope::BeforeMount(_) | Scope::AfterMount(_) | Scope::Planned(_)
        )
    }

    /// Runs a node or probe check; `None` for mount checks.
    pub fn run_on_node(&self, facts: &HostFacts) -> Option<CheckResult> {
        match self.scope {
            Scope::Node(run) | Scope::Probe(run) => Some(traced(run(facts))),
            _ => None,
        }
    }

    /// Runs a mount check, saying as much as `detail` asks; `None` for node checks.
    pub fn run_on_mount(&self, subject: &MountSubject, detail: Detail) -> Option<CheckResult> {
        match self.scope {
            Scope::BeforeMount(run) | Scope::AfterMount(run) | Scope::Planned(run) => {
                Some(traced(run(subject, detail)))
            }
            _ => None,
        }
    }
}

/// A check's verdict under `-vv`: which check decided what, and why (its summary quotes what it
/// was given, so it is escaped).
fn traced(r: CheckResult) -> CheckResult {
    tracing::debug!(
        "check {}: {}: {}",
        r.id,
        r.status.as_str(),
        crate::escape::escape_control(&r.summary)
    );
    r
}
