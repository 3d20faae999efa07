//! The check model: every verdict nfs-gds gives is a list of [`CheckResult`]s.
//!
//! Each check has a stable [`CheckId`] (used in the policy file, JSON, metrics and labels), a
//! [`Status`], the evidence it saw and a remedy. The same results feed the mount helper, `check`,
//! `verify`, `doctor` and `agent`; [`render`] turns them into text for people or JSON.

pub mod asked;
pub mod catalogue;
pub mod check;
pub mod fix;
pub mod known_bad;
pub mod level;
pub mod registry;
pub mod render;
pub mod sized;

use serde::{Deserialize, Serialize};

use crate::host::modules::modprobe_config::Origin;

pub use fix::Fix;
pub use level::Level;

/// Version of the JSON documents (`check --json`, `verify --json`, …). Bumped on any change that
/// could break a reader; additions of fields or check ids do not bump it.
pub const SCHEMA_VERSION: u32 = 1;

/// The stable identity of a check: its kebab-case name, declared once in its catalogue file.
/// Serialized as that string; parsed only against the registry, which knows every id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CheckId(&'static str);

impl CheckId {
    /// For the catalogue files, which each declare their own id.
    pub const fn new(name: &'static str) -> Self {
        CheckId(name)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for CheckId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// The outcome of one check. Ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The check does not apply here (e.g. freshness of a module that is not loaded).
    Skip,
    Pass,
    /// Not proven wrong, but not proven right either; the summary says why.
    Warn,
    /// The facts needed could not be read; the summary says which and why.
    Unknown,
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Skip => "skip",
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Unknown => "unknown",
            Status::Fail => "fail",
        }
    }
}

/// One fact a check looked at: what it is, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub what: String,
    pub seen: String,
}

impl Evidence {
    pub fn new(what: impl Into<String>, seen: impl Into<String>) -> Self {
        Evidence {
            what: what.into(),
            seen: seen.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    pub id: CheckId,
    pub status: Status,
    /// One sentence: what was found.
    pub summary: String,
    pub evidence: Vec<Evidence>,
    /// What to do about it; absent when nothing needs doing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    /// The steps of doctor's plan a failure of this check calls for.
    #[serde(skip)]
    pub fixes: Vec<Fix>,
    /// The configuration lines the check found what it reports at, as values for doctor's
    /// plan to act on (the evidence shows them as text).
    #[serde(skip)]
    pub found_at: Vec<Origin>,
    /// The level the policy judged it at; absent where no policy applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
}

impl CheckResult {
    pub fn new(id: CheckId, status: Status, summary: impl Into<String>) -> Self {
        CheckResult {
            id,
            status,
            summary: summary.into(),
            evidence: Vec::new(),
            remedy: None,
            fixes: Vec::new(),
            found_at: Vec::new(),
            level: None,
        }
    }

    pub fn pass(id: CheckId, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Pass, summary)
    }

    pub fn fail(id: CheckId, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Fail, summary)
    }

    pub fn warn(id: CheckId, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Warn, summary)
    }

    pub fn unknown(id: CheckId, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Unknown, summary)
    }

    pub fn skip(id: CheckId, summary: impl Into<String>) -> Self {
        Self::new(id, Status::Skip, summary)
    }

    pub fn with(mut self, what: impl Into<String>, seen: impl Into<String>) -> Self {
        self.evidence.push(Evidence::new(what, seen));
        self
    }

    pub fn remedy(mut self, remedy: impl Into<String>) -> Self {
        self.remedy = Some(remedy.into());
        self
    }

    /// Names a step of doctor's plan that fixes this failure.
    pub fn fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    /// That the check found what it reports at the configuration line `origin`.
    pub fn at(mut self, origin: Origin) -> Self {
        self.found_at.push(origin);
        self
    }

    /// The remedy with `pointer` appended where doctor has a stack-specific plan for the
    /// failure: [`fix::TO_DOCTOR`] for every command but doctor, [`fix::TO_PLAN`] in doctor.
    /// [`Self::with`] when there is something to say.
    pub fn with_if(self, what: impl Into<String>, seen: Option<String>) -> Self {
        match seen {
            Some(seen) => self.with(what, seen),
            None => self,
        }
    }

    pub fn with_pointer(mut self, pointer: &str) -> Self {
        if let (Some(remedy), true) = (&mut self.remedy, fix::doctor_plans(&self.fixes)) {
            remedy.push_str(pointer);
        }
        self
    }
}

/// The overall verdict of a list of results. Ordered from best to worst.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// No check failed and none was unsure.
    #[default]
    Ready,
    /// No check failed, but some could not be proven (warn / unknown).
    ReadyWithWarnings,
    NotReady,
}

impl Verdict {
    pub fn of(results: &[CheckResult]) -> Verdict {
        let worst = results
            .iter()
            .map(|r| r.status)
            .max()
            .unwrap_or(Status::Pass);
        match worst {
            Status::Fail => Verdict::NotReady,
            Status::Warn | Status::Unknown => Verdict::ReadyWithWarnings,
            Status::Pass | Status::Skip => Verdict::Ready,
        }
    }

    pub fn is_ready(self) -> bool {
        self != Verdict::NotReady
    }

    /// The word for the verdict in labels, metrics and JSON (serde's name for it).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ready => "ready",
            Verdict::ReadyWithWarnings => "ready-with-warnings",
            Verdict::NotReady => "not-ready",
        }
    }
}

/// A complete, self-describing result document, as printed by `--json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    /// The command that produced it: `check`, `verify`, `mount`, …
    pub command: String,
    /// The root the facts were read from (`/` on a real host).
    pub root: String,
    pub kernel_release: Option<String>,
    /// What was checked when not the node as a whole (a mount point, a module file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub verdict: Verdict,
    pub checks: Vec<CheckResult>,
}

impl Report {
    pub fn new(
        command: &str,
        root: &str,
        kernel_release: Option<String>,
        subject: Option<String>,
        checks: Vec<CheckResult>,
    ) -> Self {
        Report {
            schema_version: SCHEMA_VERSION,
            command: command.to_string(),
            root: root.to_string(),
            kernel_release,
            subject,
            verdict: Verdict::of(&checks),
            checks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_is_the_worst_status() {
        use catalogue::{nvidia_fs_loaded, rpcrdma_hook_export, rpcrdma_hooks};
        let p = CheckResult::pass(nvidia_fs_loaded::ID, "ok");
        let w = CheckResult::warn(rpcrdma_hook_export::ID, "unsure");
        let f = CheckResult::fail(rpcrdma_hooks::ID, "missing");
        assert_eq!(Verdict::of(std::slice::from_ref(&p)), Verdict::Ready);
        assert_eq!(
            Verdict::of(&[p.clone(), w.clone()]),
            Verdict::ReadyWithWarnings
        );
        assert_eq!(Verdict::of(&[p, w, f]), Verdict::NotReady);
    }
}
