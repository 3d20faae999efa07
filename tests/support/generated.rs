//! Blocks of the documentation written by the code, not by hand: the text between a begin and an
//! end marker line of a file is what a generator returns. A test compares them and fails with a
//! line diff; run it with `NFS_GDS_BLESS=1` and it writes the generated block into the file
//! instead.

use std::path::Path;

/// The variable that makes [`check_block`] rewrite the file instead of failing.
pub const BLESS: &str = "NFS_GDS_BLESS";

/// Checks (or, with `NFS_GDS_BLESS=1`, writes) the lines between the line `begin` and the line
/// `end` of `file` (relative to the crate) against `generated`.
pub fn check_block(file: &str, begin: &str, end: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let (before, block, after) = split(&text, begin, end).unwrap_or_else(|e| panic!("{file}: {e}"));
    if block == generated {
        return;
    }
    if std::env::var_os(BLESS).is_some_and(|v| v == "1") {
        // Written beside and renamed over, so the tests that read the file meanwhile see it
        // whole.
        let fresh = path.with_extension("blessed");
        std::fs::write(&fresh, format!("{before}{generated}{after}"))
            .and_then(|()| std::fs::rename(&fresh, &path))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        return;
    }
    panic!(
        "{file}: the block between the lines `{begin}` and `{end}` is generated and differs \
         from what generates it (- in the file, + generated); run `{BLESS}=1 cargo test --test integration \
         {}` to write it:\n{}",
        module_of(file),
        diff(block, generated)
    );
}

/// The text up to and including the begin line, the block, and the rest from the end line.
fn split<'a>(text: &'a str, begin: &str, end: &str) -> Result<(&'a str, &'a str, &'a str), String> {
    let line_at = |from: usize, marker: &str| {
        let mut at = from;
        for line in text[from..].split_inclusive('\n') {
            if line.trim_end() == marker {
                return Ok((at, at + line.len()));
            }
            at += line.len();
        }
        Err(format!("no line {marker:?}"))
    };
    let (_, start) = line_at(0, begin)?;
    let (stop, _) = line_at(start, end)?;
    Ok((&text[..start], &text[start..stop], &text[stop..]))
}

/// The test module that owns a file's generated block, for the message.
fn module_of(file: &str) -> &'static str {
    if file.ends_with(".md") {
        "readme"
    } else {
        "manual_pages"
    }
}

/// Lines only in `old` (`-`) and only in `new` (`+`), by a longest common subsequence.
fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        }
    }
    out
}

#[test]
fn the_diff_names_removed_and_added_lines_only() {
    assert_eq!(diff("a\nb\nc\n", "a\nx\nc\nd\n"), "+x\n-b\n+d\n");
    assert_eq!(diff("same\n", "same\n"), "");
}

#[test]
fn a_block_lies_between_whole_marker_lines() {
    let text = "intro <!-- b -->\n<!-- b -->\nold\n<!-- e -->\nrest\n";
    let (before, block, after) = split(text, "<!-- b -->", "<!-- e -->").unwrap();
    assert_eq!(before, "intro <!-- b -->\n<!-- b -->\n");
    assert_eq!(block, "old\n");
    assert_eq!(after, "<!-- e -->\nrest\n");
    assert!(split("no markers\n", "<!-- b -->", "<!-- e -->").is_err());
}
