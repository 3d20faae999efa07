//! Turns check results into text for people and JSON for programs.
//!
//! The text form is written for an admin reading a terminal or `journalctl`: one verdict line,
//! then one aligned line per check, with the evidence and remedy indented under anything that is
//! not a pass. Colour is used only when the caller says the output is a terminal.

use std::fmt::Write as _;

use super::{CheckResult, Level, Report, Status, Verdict};
use crate::escape::escape_control;

/// Options for the text rendering.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextStyle {
    pub color: bool,
    /// Show evidence for passing checks too.
    pub verbose: bool,
}

fn paint(style: TextStyle, code: &str, text: &str) -> String {
    if style.color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Width of the widest status tag (`UNKNOWN`).
const TAG_WIDTH: usize = 7;

fn status_tag(style: TextStyle, status: Status) -> String {
    let (label, code) = match status {
        Status::Pass => ("PASS", "32"),
        Status::Warn => ("WARN", "33"),
        Status::Unknown => ("UNKNOWN", "33"),
        Status::Fail => ("FAIL", "1;31"),
        Status::Skip => ("skip", "2"),
    };
    // Pad outside the colour codes so columns line up either way.
    format!(
        "{}{}",
        paint(style, code, label),
        " ".repeat(TAG_WIDTH - label.len())
    )
}

/// The one-line verdict, counted by status, e.g. `nfs-gds check: NOT READY (2 failed, 1 unknown,
/// 1 warning)`.
pub fn verdict_line(report: &Report, style: TextStyle) -> String {
    let failed = count(&report.checks, |s| s == Status::Fail);
    let unknown = count(&report.checks, |s| s == Status::Unknown);
    let warned = count(&report.checks, |s| s == Status::Warn);
    let (word, code) = match report.verdict {
        Verdict::Ready => ("READY", "1;32"),
        Verdict::ReadyWithWarnings => ("READY, WITH WARNINGS", "1;33"),
        Verdict::NotReady => ("NOT READY", "1;31"),
    };
    let mut line = format!("nfs-gds {}", report.command);
    if let Some(s) = &report.subject {
        let _ = write!(line, " {}", escape_control(s));
    }
    let _ = write!(line, ": {}", paint(style, code, word));
    let mut counts = Vec::new();
    if failed > 0 {
        counts.push(format!("{failed} failed"));
    }
    if unknown > 0 {
        counts.push(format!("{unknown} unknown"));
    }
    if warned > 0 {
        counts.push(plural(warned, "warning"));
    }
    if !counts.is_empty() {
        let _ = write!(line, " ({})", counts.join(", "));
    }
    line
}

fn count(results: &[CheckResult], f: impl Fn(Status) -> bool) -> usize {
    results.iter().filter(|r| f(r.status)).count()
}

/// `1 check`, `2 checks`: a count with its noun.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// One check as text: the status line, then (unless it passed) evidence and remedy.
pub fn check_text(result: &CheckResult, style: TextStyle, id_width: usize) -> String {
    // A failure the policy lets through says so on its own line.
    let not_enforced = match result.level {
        Some(level) if level != Level::Enforce && result.status == Status::Fail => {
            format!(" [not enforced: policy {level}]")
        }
        _ => String::new(),
    };
    let mut out = format!(
        "  {}  {:<width$}  {}{not_enforced}\n",
        status_tag(style, result.status),
        result.id.as_str(),
        escape_control(&result.summary),
        width = id_width
    );
    let detailed = style.verbose || !matches!(result.status, Status::Pass | Status::Skip);
    if detailed {
        let indent = " ".repeat(2 + TAG_WIDTH + 2 + id_width + 2);
        for e in &result.evidence {
            // Evidence quotes files and paths: a newline or escape in them is shown, not obeyed.
            let _ = writeln!(
                out,
                "{indent}{}: {}",
                escape_control(&e.what),
                escape_control(&e.seen)
            );
        }
        if let Some(r) = &result.remedy {
            let _ = writeln!(
                out,
                "{indent}{} {}",
                paint(style, "1", "fix:"),
                escape_control(r)
            );
        }
    }
    out
}

/// The whole report as text.
pub fn text(report: &Report, style: TextStyle) -> String {
    let mut out = verdict_line(report, style);
    out.push('\n');
    let width = report
        .checks
        .iter()
        .map(|c| c.id.as_str().len())
        .max()
        .unwrap_or(0);
    for c in &report.checks {
        out.push_str(&check_text(c, style, width));
    }
    out
}

/// The report as pretty JSON with a trailing newline.
pub fn json(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report always serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue;

    fn report() -> Report {
        Report::new(
            "check",
            "/",
            Some("6.1.0".into()),
            None,
            vec![
                CheckResult::pass(catalogue::rpcrdma_module::ID, "found").with("file", "/x.ko"),
                CheckResult::fail(catalogue::nvidia_fs_loaded::ID, "nvidia_fs is not loaded")
                    .with("/sys/module/nvidia_fs", "absent")
                    .remedy("modprobe nvidia-fs"),
            ],
        )
    }

    #[test]
    fn text_shows_details_only_for_problems() {
        let t = text(&report(), TextStyle::default());
        assert!(
            t.starts_with("nfs-gds check: NOT READY (1 failed)\n"),
            "{t}"
        );
        assert!(
            t.contains("  FAIL     nvidia-fs-loaded  nvidia_fs is not loaded\n"),
            "{t}"
        );
        assert!(
            t.contains("\n                             /sys/module/nvidia_fs: absent\n"),
            "evidence aligns under the summary: {t}"
        );
        assert!(t.contains("/sys/module/nvidia_fs: absent"), "{t}");
        assert!(t.contains("fix: modprobe nvidia-fs"), "{t}");
        assert!(!t.contains("/x.ko"), "{t}");
        assert!(!t.contains('\x1b'), "no colour unless asked");
    }

    #[test]
    fn colour_only_when_asked() {
        let t = text(
            &report(),
            TextStyle {
                color: true,
                verbose: true,
            },
        );
        assert!(t.contains("\x1b[1;31mFAIL\x1b[0m"));
        assert!(t.contains("/x.ko"), "verbose shows passing evidence");
    }

    #[test]
    fn json_is_versioned_and_round_trips() {
        let j = json(&report());
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["verdict"], "not-ready");
        assert_eq!(v["checks"][1]["id"], "nvidia-fs-loaded");
        assert_eq!(v["checks"][1]["status"], "fail");
        let back: Report = serde_json::from_str(&j).unwrap();
        assert_eq!(back.checks, report().checks);
    }
}
