//! Text the code writes, kept in the tree and compared by the tests, and the one switch that
//! writes it: `NFS_GDS_BLESS=1`. It covers the blocks of documentation between a begin and an
//! end marker line ([`check_block`]: the guide's tables, the check list of `nfs-gds.toml(5)`),
//! whole generated files ([`check_file`]: the Debian changelog), and insta's snapshots
//! ([`assert_snapshot!`](crate::support::assert_snapshot), which sets insta's own
//! `INSTA_UPDATE=always` from it). Without it a test fails with a line diff and the command that
//! writes the text; with it the test writes the text instead and passes, and `git diff` shows
//! what changed.

use std::path::Path;
use std::sync::Once;

/// The variable that makes the tests write what they generate instead of failing.
pub const BLESS: &str = "NFS_GDS_BLESS";

/// Whether this run writes what it generates (`NFS_GDS_BLESS=1`).
pub fn blessing() -> bool {
    std::env::var_os(BLESS).is_some_and(|v| v == "1")
}

/// Makes insta follow [`BLESS`]: with it, insta's update mode is `always` (write the snapshot in
/// place and pass) unless `INSTA_UPDATE` says otherwise. insta reads its mode once, at the
/// process's first snapshot assertion, so this runs before every one
/// ([`crate::support::assert_snapshot`]); the variable is set once, before insta reads it.
pub fn insta_follows_bless() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if blessing() && std::env::var_os("INSTA_UPDATE").is_none() {
            std::env::set_var("INSTA_UPDATE", "always");
        }
    });
}

/// The command that writes what `module`'s tests generate.
fn bless_command(module: &str) -> String {
    format!("{BLESS}=1 cargo test --test integration -- {module}")
}

/// Writes `text` to `path`: beside it first and renamed over, so that the tests that read the
/// file meanwhile see it whole.
fn write(path: &Path, file: &str, text: &str) {
    let fresh = path.with_extension("blessed");
    std::fs::write(&fresh, text)
        .and_then(|()| std::fs::rename(&fresh, path))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
}

/// Checks (or, with `NFS_GDS_BLESS=1`, writes) the lines between the line `begin` and the line
/// `end` of `file` (relative to the crate) against `generated`.
pub fn check_block(file: &str, begin: &str, end: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let (before, block, after) = split(&text, begin, end).unwrap_or_else(|e| panic!("{file}: {e}"));
    if block == generated {
        return;
    }
    if blessing() {
        write(&path, file, &format!("{before}{generated}{after}"));
        return;
    }
    panic!(
        "{file}: the block between the lines `{begin}` and `{end}` is generated and differs \
         from what generates it (- in the file, + generated); run `{}` to write it:\n{}",
        bless_command(module_of(file)),
        diff(block, generated)
    );
}

/// Checks (or, with `NFS_GDS_BLESS=1`, writes) the whole of `file` (relative to the crate)
/// against `generated`, which `module`'s tests generate.
pub fn check_file(file: &str, module: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    if kept == generated {
        return;
    }
    if blessing() {
        write(&path, file, generated);
        return;
    }
    panic!(
        "{file} is generated and differs from what generates it (- in the file, + generated); \
         run `{}` to write it:\n{}",
        bless_command(module),
        diff(&kept, generated)
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

#[test]
fn the_bless_command_names_the_switch_and_the_tests() {
    assert_eq!(
        bless_command(module_of("README.md")),
        "NFS_GDS_BLESS=1 cargo test --test integration -- readme"
    );
}

/// insta is only ever called through [`crate::support::assert_snapshot`], so that the one
/// switch writes every snapshot: no test module calls `insta::assert_*` itself.
#[test]
fn every_snapshot_assertion_follows_the_switch() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let (mut direct, mut through_switch) = (Vec::new(), 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains(&["insta", "::assert_"].concat()) {
                direct.push(path.display().to_string());
            }
            through_switch += text.matches("\n    assert_snapshot!(").count();
        }
    }
    assert!(
        direct.is_empty(),
        "insta called past the bless switch in {direct:?}"
    );
    assert!(through_switch >= 9, "{through_switch} snapshot assertions");
}
