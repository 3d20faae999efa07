//! Doctor's report for people (terminal) and for tickets (Markdown). JSON is the serialized
//! [`Diagnosis`].

use std::fmt::Write as _;

use super::diagnose::Diagnosis;
use crate::checks::render::{check_text, TextStyle};
use crate::checks::{CheckResult, Status};
use crate::escape::escape_control;

fn id_width(d: &Diagnosis) -> usize {
    d.checks
        .iter()
        .map(|c| c.id.as_str().len())
        .max()
        .unwrap_or(0)
}

/// The distribution's name and the kernel release, when the release is known.
fn node(d: &Diagnosis) -> Option<(&str, &str)> {
    let release = d.stack.kernel_release.as_deref()?;
    let os = d.stack.os.pretty_name.as_deref();
    Some((os.unwrap_or("unknown distribution"), release))
}

pub fn text(d: &Diagnosis, style: TextStyle) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "nfs-gds doctor: {}", d.headline);
    if let Some((os, r)) = node(d) {
        let _ = writeln!(out, "node: {os}, kernel {r}");
    }
    out.push_str("\nChecks\n");
    let w = id_width(d);
    for c in &d.checks {
        out.push_str(&check_text(c, style, w));
    }
    out.push_str("\nWhat else doctor saw\n");
    for f in &d.findings {
        let _ = writeln!(out, "  {:<16} {}", f.topic, f.text);
    }
    if d.plan.is_empty() {
        out.push_str(without_plan(&d.checks));
    } else {
        out.push_str("\nPlan\n");
        for (i, s) in d.plan.iter().enumerate() {
            let tag = if s.is_manual() {
                ""
            } else {
                "  [provision --apply runs this]"
            };
            let _ = writeln!(out, "  {}. {}{tag}", i + 1, s.title);
            let _ = writeln!(out, "     why: {}", s.why);
            for c in &s.commands {
                for line in c.lines() {
                    let _ = writeln!(out, "       {line}");
                }
            }
        }
    }
    out
}

/// What the text report ends with when there is no plan: "Nothing to fix." only when no check
/// that did not pass says what to do (its `fix:` line).
fn without_plan(checks: &[CheckResult]) -> &'static str {
    let fixes = checks
        .iter()
        .any(|c| !matches!(c.status, Status::Pass | Status::Skip) && c.remedy.is_some());
    if fixes {
        "\nNo plan: the fix: lines above say what to do.\n"
    } else {
        "\nNothing to fix.\n"
    }
}

fn md_status(s: Status) -> &'static str {
    match s {
        Status::Pass => "✅ pass",
        Status::Warn => "⚠️ warn",
        Status::Unknown => "❔ unknown",
        Status::Fail => "❌ fail",
        Status::Skip => "➖ skip",
    }
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn markdown(d: &Diagnosis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## nfs-gds doctor\n\n**{}**\n", d.headline);
    if let Some((os, r)) = node(d) {
        let _ = writeln!(out, "Node: {os}, kernel `{r}`\n");
    }
    out.push_str("### Checks\n\n| check | status | found | fix |\n|---|---|---|---|\n");
    for c in &d.checks {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            c.id,
            md_status(c.status),
            md_cell(&c.summary),
            md_cell(c.remedy.as_deref().unwrap_or(""))
        );
    }
    // The evidence of every check that did not pass: the part of the report a ticket needs.
    let shown: Vec<_> = d
        .checks
        .iter()
        .filter(|c| !matches!(c.status, Status::Pass | Status::Skip) && !c.evidence.is_empty())
        .collect();
    if !shown.is_empty() {
        out.push_str("\n### Evidence\n");
        for c in shown {
            let _ = writeln!(out, "\n`{}` ({}):\n\n```text", c.id, md_status(c.status));
            for e in &c.evidence {
                // A fence inside would end the block early.
                let line = format!("{}: {}", e.what, e.seen).replace("```", "'''");
                let _ = writeln!(out, "{}", escape_control(&line));
            }
            out.push_str("```\n");
        }
    }
    out.push_str("\n### Findings\n\n");
    for f in &d.findings {
        let _ = writeln!(out, "- **{}**: {}", f.topic, md_cell(&f.text));
    }
    if !d.plan.is_empty() {
        out.push_str("\n### Plan\n\n");
        for (i, s) in d.plan.iter().enumerate() {
            let _ = writeln!(out, "{}. **{}** — {}\n", i + 1, s.title, md_cell(&s.why));
            if !s.commands.is_empty() {
                out.push_str("   ```sh\n");
                for c in &s.commands {
                    for line in c.lines() {
                        let _ = writeln!(out, "   {line}");
                    }
                }
                out.push_str("   ```\n\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::catalogue::{cufile_config, iommu_mode};

    #[test]
    fn a_warning_with_a_fix_is_not_nothing_to_fix() {
        let pass = CheckResult::pass(iommu_mode::ID, "fine");
        let warn = CheckResult::warn(cufile_config::ID, "compat mode on");
        assert_eq!(
            without_plan(&[pass.clone(), warn.clone()]),
            "\nNothing to fix.\n"
        );
        let fixable = warn.remedy("set allow_compat_mode false");
        assert!(without_plan(&[pass.clone(), fixable]).contains("fix: lines above"));
        // A passing check's remedy (there is none to do) does not count.
        let passing = pass.remedy("nothing");
        assert_eq!(without_plan(&[passing]), "\nNothing to fix.\n");
    }
}
