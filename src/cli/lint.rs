//! `nfs-gds lint FILE…`: judges Kubernetes manifests (GPU Operator `ClusterPolicy`, Network
//! Operator `NicClusterPolicy`, NFS `StorageClass`es and `PersistentVolume`s) before they are
//! applied. Reads the files (as any file named on the command line: regular files, capped; `-`,
//! `/dev/stdin` and FIFOs as streams, capped alike) and hands their text to [`crate::lint`]; exit
//! 0 when nothing fails, 1 when something does, 2 when a file cannot be read or is not YAML. A
//! run that found nothing lint judges says so rather than PASS.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::context::{CmdError, Ctx};
use super::exit;
use crate::checks::render::TextStyle;
use crate::checks::SCHEMA_VERSION;
use crate::host::io::reader;
use crate::host::FileKind;
use crate::lint::{self, Finding, Severity, Source};

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Manifests to check (YAML, several documents per file allowed; `kind: List` too); `-` reads stdin (`kustomize build … | nfs-gds lint -`), as do /dev/stdin and FIFOs; at most 64 MiB each
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
    /// How many YAML documents were read.
    documents: usize,
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
        let (name, bytes) = read_input(path)?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8 text"))?;
        texts.push((name, text));
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
        documents: report.documents,
        judged: report.judged,
        findings: report.findings,
        failed,
    })
}

/// The name an input is shown by, and its bytes: `-` is stdin; a FIFO (`/dev/stdin` of a pipe,
/// `<(kustomize build …)`) is read as a stream, never waited on for a writer; anything else as a
/// regular file.
fn read_input(path: &Path) -> Result<(String, Vec<u8>), CmdError> {
    if path == Path::new("-") {
        let shown = Path::new("stdin");
        let bytes = reader::read_stream(std::io::stdin().lock(), shown, FileKind::Manifests)?;
        return Ok(("stdin".to_string(), bytes));
    }
    let name = path.display().to_string();
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    let bytes = if fifo {
        reader::read_fifo(path, FileKind::Manifests)?
    } else {
        reader::read_named(path, FileKind::Manifests)?
            .ok_or_else(|| format!("{name}: no such file"))?
            .bytes
    };
    Ok((name, bytes))
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
        if self.judged == 0 {
            out.push_str(&format!(
                "nfs-gds lint: nothing judged ({} document{} read; {})\n",
                self.documents,
                if self.documents == 1 { "" } else { "s" },
                lint::JUDGED_KINDS
            ));
            return out;
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
