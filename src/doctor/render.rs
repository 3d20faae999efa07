//! Doctor's report for people (terminal) and for tickets (Markdown). JSON is the serialized
//! [`Diagnosis`].

use std::fmt::Write as _;

use super::Diagnosis;
use crate::checks::render::{check_text, TextStyle};
use crate::checks::Status;

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
        out.push_str("\nNothing to fix.\n");
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
