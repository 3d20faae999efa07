//! The text forms of depmod's files: `modules.dep` (each module file and what it depends on),
//! `modules.alias` and `modules.builtin`.

use std::collections::HashMap;

use serde::Serialize;

use super::module_name::module_name_of_path;

/// One `modules.dep` line: the module file and the files it depends on, as written (relative to
/// `/lib/modules/<release>/`, or absolute in very old trees).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DepEntry {
    pub file: String,
    pub deps: Vec<String>,
}

/// The most dependencies one `modules.dep` line is taken to have. Real modules have a few dozen
/// at most; a line of thousands is a hostile or broken tree, and everything that walks a
/// module's dependencies (modprobe's load order, one lookup each) stays bounded by it.
pub const MAX_DEPS: usize = 1024;

/// Parses `modules.dep`. Tolerates odd spacing (tabs, several blanks, trailing blanks, CRLF).
/// A line keeps its first [`MAX_DEPS`] dependencies (with a warning).
pub fn parse_modules_dep(text: &str) -> Vec<DepEntry> {
    text.lines().filter_map(parse_dep_line).collect()
}

/// One `modules.dep` line; `None` for a blank line, a comment or a line without `FILE:`.
pub(super) fn parse_dep_line(line: &str) -> Option<DepEntry> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (file, deps) = line.split_once(':')?;
    let file = file.trim();
    if file.is_empty() {
        return None;
    }
    let mut words = deps.split_whitespace();
    let kept: Vec<String> = words.by_ref().take(MAX_DEPS).map(str::to_string).collect();
    if words.next().is_some() {
        tracing::warn!(
            "modules.dep gives {file} more than {MAX_DEPS} dependencies: taking the first {MAX_DEPS}"
        );
    }
    Some(DepEntry {
        file: file.to_string(),
        deps: kept,
    })
}

/// Where each module's line is in a text `modules.dep` (its first line, as a scan finds it):
/// built in one pass, so looking up every dependency of a module is linear, not a scan each.
pub(super) fn dep_lines_by_module(text: &str) -> HashMap<String, (usize, usize)> {
    let mut by_module = HashMap::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        if let Some((file, _)) = line.split_once(':') {
            let file = file.trim();
            if !file.is_empty() && !file.starts_with('#') {
                by_module
                    .entry(module_name_of_path(file))
                    .or_insert((start, end));
            }
        }
        start = end;
    }
    by_module
}

/// Parses `modules.alias` into `(pattern, module)` pairs.
pub fn parse_modules_alias(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            if w.next()? != "alias" {
                return None;
            }
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

/// Parses `modules.builtin`: one module path per line (`kernel/net/sunrpc/xprtrdma/rpcrdma.ko`).
pub fn parse_modules_builtin(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_lines_are_trimmed_and_blank_ones_skipped() {
        let text = "kernel/fs/ext4/ext4.ko\r\n\n  \nkernel/net/sunrpc/xprtrdma/rpcrdma.ko  \n";
        assert_eq!(
            parse_modules_builtin(text),
            vec![
                "kernel/fs/ext4/ext4.ko",
                "kernel/net/sunrpc/xprtrdma/rpcrdma.ko"
            ]
        );
    }

    #[test]
    fn modules_dep_tolerates_odd_spacing() {
        let text = "kernel/a.ko:\n  updates/dkms/rpcrdma.ko.zst :\tkernel/b.ko   kernel/c.ko  \r\n\n# comment\nnot a line\n";
        let d = parse_modules_dep(text);
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].file, "updates/dkms/rpcrdma.ko.zst");
        assert_eq!(d[1].deps, vec!["kernel/b.ko", "kernel/c.ko"]);
    }
}
