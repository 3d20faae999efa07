//! `nfs-gds lint FILE…`: judges Kubernetes manifests (GPU Operator `ClusterPolicy`, Network
//! Operator `NicClusterPolicy`, NFS `StorageClass`es and `PersistentVolume`s) before they are
//! applied. Reads the files (as any file named on the command line: regular files, capped) and
//! hands their text to [`crate::lint`]; exit 0 when nothing fails, 1 when something does, 2 when a
//! file cannot be read or is not YAML.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use super::{exit, CmdError, Ctx};
use crate::checks::render::TextStyle;
use crate::checks::SCHEMA_VERSION;
use crate::host::io::reader;
use crate::host::FileKind;
use crate::lint::{self, Finding, Severity, Source};

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Manifests to check (YAML, several documents per file allowed; `kind: List` too)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub output: super::shared::OutputArgs,
}

/// What lint found: `lint --json`'s document (`schemas/lint.schema.json`).
#[derive(Debug, Serialize)]
pub struct Linted {
    schema_version: u32,
    command: &'static str,
    verdict: &'static str,
    judged: usize,
    findings: Vec<Finding>,
    /// Whether a finding fails ([`lint::LintReport::failed`]).
    #[serde(skip)]
    failed: bool,
}

/// The files' report, for [`super::report::show`].
pub fn report(args: &LintArgs, _ctx: &Ctx) -> Result<Linted, CmdError> {
    let mut texts = Vec::new();
    for path in &args.files {
        let read = reader::read_named(path, FileKind::Config)?
            .ok_or_else(|| format!("{}: no such file", path.display()))?;
        let text = String::from_utf8(read.bytes)
            .map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
        texts.push((path.display().to_string(), text));
    }
    let sources: Vec<Source> = texts
        .iter()
        .map(|(name, text)| Source { name, text })
        .collect();
    let report = lint::lint(&sources)?;
    let failed = report.failed();
    Ok(Linted {
        schema_version: SCHEMA_VERSION,
        command: "lint",
        verdict: if failed { "fail" } else { "pass" },
        judged: report.judged,
        findings: report.findings,
        failed,
    })
}

impl super::report::Report for Linted {
    /// A line per finding (`file:line: severity: message [rule]`), then the verdict line.
    fn text(&self, _: TextStyle) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&format!(
                "{}:{}: {}: {} [{}]\n",
                f.file,
                f.line,
                f.severity.as_str(),
                crate::escape::escape_control(&f.message),
                f.rule
            ));
        }
        let count = |s| self.findings.iter().filter(|f| f.severity == s).count();
        out.push_str(&format!(
            "nfs-gds lint: {} ({} object{} judged, {} failed, {} warning{})\n",
            if self.failed { "FAIL" } else { "PASS" },
            self.judged,
            if self.judged == 1 { "" } else { "s" },
            count(Severity::Fail),
            count(Severity::Warn),
            if count(Severity::Warn) == 1 { "" } else { "s" },
        ));
        out
    }

    fn json(&self) -> Result<String, CmdError> {
        Ok(format!("{}\n", serde_json::to_string_pretty(self)?))
    }

    /// 0 when nothing fails, 1 when something does.
    fn exit_code(&self) -> u8 {
        exit::ready_or_not(!self.failed)
    }
}
