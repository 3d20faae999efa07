//! Text as roff for the manual pages: a registry doc line with its `code` in bold, filled into
//! short lines, and the check lists of `nfs-gds(8)`, `nfs-gds.toml(5)` and `mount.nfs-gds(8)`
//! written from the check registry.

use crate::checks::{registry, Level};

/// `s` with roff's special characters escaped: `\` as `\e`, `-` as `\-` (a hyphen would be a
/// typographic one), `…` as `...`.
pub fn escape(s: &str) -> String {
    s.replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('…', "...")
}

/// A doc line as roff: `code` in bold, special characters escaped, ending in a full stop (not
/// a capital: a doc line may start with a command's name).
pub fn doc_line(doc: &str) -> String {
    let mut out = String::new();
    for (i, part) in doc.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("\\fB{}\\fR", escape(part)));
        } else {
            out.push_str(&escape(part));
        }
    }
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// Words filled into lines of at most 80 characters, none starting with a control character.
pub fn fill(text: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= 80 => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
        .into_iter()
        .map(|l| {
            if l.starts_with(['.', '\'']) {
                format!("\\&{l}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// The check list of `nfs-gds(8)` and `nfs-gds.toml(5)`: per check, its id, default level,
/// whether the helper waits for it, and its doc line.
pub fn check_list() -> String {
    let mut out = String::new();
    for c in registry::all() {
        out.push_str(&format!(
            ".TP\n.BR {} \" (default {}{})\"\n",
            escape(c.id.as_str()),
            c.default_level,
            if c.waitable { ", waited for" } else { "" }
        ));
        out.push_str(&fill(&doc_line(c.doc)));
    }
    out
}

/// What a missing policy file means, as `mount.nfs-gds(8)` says it: every check whose built-in
/// level is `warn`, bold, in parentheses, in lines of at most 96 characters.
pub fn warn_checks() -> String {
    let names: Vec<String> = registry::all()
        .iter()
        .filter(|c| c.default_level == Level::Warn)
        .map(|c| format!("\\fB{}\\fR", escape(c.id.as_str())))
        .collect();
    let mut block = String::from("(");
    let mut line_len = 1;
    for (i, name) in names.iter().enumerate() {
        let piece = if i + 1 == names.len() {
            format!("{name};")
        } else {
            format!("{name},")
        };
        if line_len > 1 && line_len + 1 + piece.len() > 96 {
            block.push('\n');
            line_len = 0;
        } else if line_len > 1 {
            block.push(' ');
            line_len += 1;
        }
        line_len += piece.len();
        block.push_str(&piece);
    }
    block.push('\n');
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doc_line_becomes_roff_that_renders_as_written() {
        let r = doc_line("`/dev/nvidia-fs*` nodes exist (see `rpcrdma-loaded`, …)");
        assert_eq!(
            r,
            "\\fB/dev/nvidia\\-fs*\\fR nodes exist (see \\fBrpcrdma\\-loaded\\fR, ...)."
        );
        assert_eq!(doc_line("a path with \\ in it"), "a path with \\e in it.");
        let long = format!("{} .starts a line", "word ".repeat(15).trim_end());
        let filled = fill(&long);
        assert!(filled.lines().all(|l| l.len() <= 80), "{filled}");
        assert!(filled.contains("\n\\&.starts a line\n"), "{filled}");
    }

    #[test]
    fn the_warn_list_names_every_advisory_check_once() {
        let block = warn_checks();
        assert!(
            block.starts_with("(\\fB") && block.ends_with(";\n"),
            "{block}"
        );
        assert!(block.lines().all(|l| l.len() <= 96), "{block}");
        assert!(block.contains("\\fBiommu\\-mode\\fR"), "{block}");
        assert!(!block.contains("\\fBgpu\\-driver\\fR"), "{block}");
    }
}
