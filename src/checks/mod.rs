//! The check model: every verdict nfs-gds gives is a list of [`CheckResult`]s.
//!
//! Each check has a stable [`CheckId`] (used in the policy file, JSON, metrics and labels), a
//! [`Status`], the evidence it saw and a remedy. The same results feed the mount helper, `check`,
//! `verify`, `doctor` and `agent`; [`render`] turns them into text for people or JSON.

pub mod mount;
pub mod node;
pub mod probe;
pub mod render;

use serde::{Deserialize, Serialize};

/// Version of the JSON documents (`check --json`, `verify --json`, …). Bumped on any change that
/// could break a reader; additions of fields or check ids do not bump it.
pub const SCHEMA_VERSION: u32 = 1;

/// The stable identity of a check. The kebab-case string is the public name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckId {
    /// `nvidia_fs` is loaded.
    NvidiaFsLoaded,
    /// `/dev/nvidia-fs*` nodes exist.
    NvidiaFsDevices,
    /// modprobe resolves `rpcrdma` to a readable module file (or it is built in).
    RpcrdmaModule,
    /// That file defines both nvfs hooks.
    RpcrdmaHooks,
    /// The hooks are exported in a way this kernel's `__symbol_get` accepts.
    RpcrdmaHookExport,
    /// The loaded rpcrdma (if any) carries the hooks, per `/proc/kallsyms`.
    RpcrdmaLoaded,
    /// The loaded rpcrdma is the same build as the file on disk.
    RpcrdmaFresh,
    /// Live probe: opening `/dev/nvidia-fs0` makes rpcrdma register with nvidia-fs.
    NvfsRegistration,
    /// No existing non-RDMA mount of the same server (NFSv4 would silently reuse its transport).
    TransportTrap,
    /// Every `xprt:` line of the mount is `rdma`.
    MountTransport,
    /// The mount's options carry `proto=rdma|rdma6` and the expected port.
    MountOptions,
}

impl CheckId {
    pub const ALL: [CheckId; 11] = [
        CheckId::NvidiaFsLoaded,
        CheckId::NvidiaFsDevices,
        CheckId::RpcrdmaModule,
        CheckId::RpcrdmaHooks,
        CheckId::RpcrdmaHookExport,
        CheckId::RpcrdmaLoaded,
        CheckId::RpcrdmaFresh,
        CheckId::NvfsRegistration,
        CheckId::TransportTrap,
        CheckId::MountTransport,
        CheckId::MountOptions,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::NvidiaFsLoaded => "nvidia-fs-loaded",
            CheckId::NvidiaFsDevices => "nvidia-fs-devices",
            CheckId::RpcrdmaModule => "rpcrdma-module",
            CheckId::RpcrdmaHooks => "rpcrdma-hooks",
            CheckId::RpcrdmaHookExport => "rpcrdma-hook-export",
            CheckId::RpcrdmaLoaded => "rpcrdma-loaded",
            CheckId::RpcrdmaFresh => "rpcrdma-fresh",
            CheckId::NvfsRegistration => "nvfs-registration",
            CheckId::TransportTrap => "transport-trap",
            CheckId::MountTransport => "mount-transport",
            CheckId::MountOptions => "mount-options",
        }
    }

    /// One line saying what the check makes sure of.
    pub fn title(self) -> &'static str {
        match self {
            CheckId::NvidiaFsLoaded => "nvidia_fs kernel module is loaded",
            CheckId::NvidiaFsDevices => "/dev/nvidia-fs* device nodes exist",
            CheckId::RpcrdmaModule => "modprobe finds the rpcrdma module",
            CheckId::RpcrdmaHooks => "rpcrdma module file defines the nvfs DMA hooks",
            CheckId::RpcrdmaHookExport => "nvfs hooks are exported in a way this kernel accepts",
            CheckId::RpcrdmaLoaded => "loaded rpcrdma carries the nvfs hooks",
            CheckId::RpcrdmaFresh => "loaded rpcrdma is the build on disk",
            CheckId::NvfsRegistration => "rpcrdma registers with nvidia-fs (live probe)",
            CheckId::TransportTrap => "no non-RDMA mount of the same server",
            CheckId::MountTransport => "mount runs over RDMA (xprt: rdma)",
            CheckId::MountOptions => "mount options carry proto=rdma and the expected port",
        }
    }

    pub fn parse(s: &str) -> Option<CheckId> {
        CheckId::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
}

impl CheckResult {
    pub fn new(id: CheckId, status: Status, summary: impl Into<String>) -> Self {
        CheckResult {
            id,
            status,
            summary: summary.into(),
            evidence: Vec::new(),
            remedy: None,
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
}

/// The overall verdict of a list of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// No check failed and none was unsure.
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
    fn ids_round_trip_and_are_unique() {
        for id in CheckId::ALL {
            assert_eq!(CheckId::parse(id.as_str()), Some(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{}\"", id.as_str()));
        }
        let mut names: Vec<_> = CheckId::ALL.iter().map(|c| c.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CheckId::ALL.len());
    }

    #[test]
    fn verdict_is_the_worst_status() {
        let p = CheckResult::pass(CheckId::NvidiaFsLoaded, "ok");
        let w = CheckResult::warn(CheckId::RpcrdmaHookExport, "unsure");
        let f = CheckResult::fail(CheckId::RpcrdmaHooks, "missing");
        assert_eq!(Verdict::of(std::slice::from_ref(&p)), Verdict::Ready);
        assert_eq!(
            Verdict::of(&[p.clone(), w.clone()]),
            Verdict::ReadyWithWarnings
        );
        assert_eq!(Verdict::of(&[p, w, f]), Verdict::NotReady);
    }
}
