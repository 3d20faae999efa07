//! Build facts for `nfs-gds --version`: the commit the binary was built from (`unknown` outside
//! a git checkout, e.g. from a source tarball), the target triple and the enabled features. And
//! the known-bad list (`src/checks/known_bad.toml`) as Rust statics, checked here: every check
//! reads the list, and parsing its TOML at run time was a twentieth of a warm check.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// How a field of an entry is written in the TOML and in the compiled entry.
#[derive(Clone, Copy)]
enum Field {
    /// A string every entry has.
    Text,
    /// A string an entry may have (`Option<&str>`).
    Optional,
    /// A list of strings, empty when absent.
    List,
    /// A boolean, false when absent.
    Flag,
}

/// Every field of an entry, in the order of `checks::known_bad::Entry`: each one says how it
/// is read, checked and written.
const FIELDS: [(&str, Field); 11] = [
    ("package", Field::Text),
    ("versions", Field::List),
    ("below", Field::Optional),
    ("series", Field::Optional),
    ("kernel_above", Field::Optional),
    ("beside", Field::Optional),
    ("platform", Field::Optional),
    ("plain_export", Field::Flag),
    ("problem", Field::Text),
    ("fix", Field::Optional),
    ("source", Field::Text),
];

/// `src/checks/known_bad.toml` → `$OUT_DIR/known_bad.rs`, a `static ENTRIES: &[Entry]`. A field
/// that is not known, of the wrong type or missing stops the build, naming the entry.
fn known_bad_list() {
    const LIST: &str = "src/checks/known_bad.toml";
    println!("cargo:rerun-if-changed={LIST}");
    let text = std::fs::read_to_string(LIST).unwrap_or_else(|e| panic!("{LIST}: {e}"));
    let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("{LIST}: {e}"));
    if let Some(k) = doc.keys().find(|k| *k != "entry") {
        panic!("{LIST}: unknown top-level key `{k}` (only [[entry]] tables)");
    }
    let entries = doc
        .get("entry")
        .and_then(toml::Value::as_array)
        .unwrap_or_else(|| panic!("{LIST}: no [[entry]] tables"));
    let mut out = String::from("static ENTRIES: &[Entry] = &[\n");
    for (i, entry) in entries.iter().enumerate() {
        let n = i + 1;
        let t = entry
            .as_table()
            .unwrap_or_else(|| panic!("{LIST}: entry {n} is not a table"));
        if let Some(k) = t.keys().find(|k| !FIELDS.iter().any(|(f, _)| f == k)) {
            panic!("{LIST}: entry {n}: unknown field `{k}`");
        }
        let string = |k: &str, v: &toml::Value| -> String {
            let s = v
                .as_str()
                .unwrap_or_else(|| panic!("{LIST}: entry {n}: `{k}` holds a non-string"));
            format!("{s:?}")
        };
        out.push_str("    Entry {");
        for (k, field) in FIELDS {
            let value = t.get(k);
            let literal = match (field, value) {
                (Field::Text, None) => panic!("{LIST}: entry {n}: missing field `{k}`"),
                (Field::Text, Some(v)) => string(k, v),
                (Field::Optional, None) => "None".to_string(),
                (Field::Optional, Some(v)) => format!("Some({})", string(k, v)),
                (Field::List, None) => "&[]".to_string(),
                (Field::List, Some(v)) => {
                    let items = v
                        .as_array()
                        .unwrap_or_else(|| panic!("{LIST}: entry {n}: `{k}` is not a list"));
                    let items: Vec<String> = items.iter().map(|v| string(k, v)).collect();
                    format!("&[{}]", items.join(", "))
                }
                (Field::Flag, None) => "false".to_string(),
                (Field::Flag, Some(v)) => v
                    .as_bool()
                    .unwrap_or_else(|| panic!("{LIST}: entry {n}: `{k}` is not a boolean"))
                    .to_string(),
            };
            out.push_str(&format!(" {k}: {literal},"));
        }
        out.push_str(" },\n");
    }
    out.push_str("];\n");
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/known_bad.rs"), out).expect("OUT_DIR is writable");
}

fn main() {
    known_bad_list();
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Rebuilt when HEAD moves (a commit, a checkout).
    for path in ["HEAD"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &r]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_lowercase().replace('_', "-"))
        })
        .collect();
    features.sort();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(",")
    };
    println!("cargo:rustc-env=NFS_GDS_COMMIT={commit}");
    println!("cargo:rustc-env=NFS_GDS_TARGET={target}");
    println!("cargo:rustc-env=NFS_GDS_FEATURES={features}");
}
