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

/// The fields an entry may have; each is a string but for `versions` (strings) and
/// `plain_export` (a boolean).
const ENTRY_FIELDS: [&str; 11] = [
    "package",
    "versions",
    "below",
    "series",
    "kernel_above",
    "beside",
    "platform",
    "plain_export",
    "problem",
    "fix",
    "source",
];
const REQUIRED: [&str; 3] = ["package", "problem", "source"];

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
        if let Some(k) = t.keys().find(|k| !ENTRY_FIELDS.contains(&k.as_str())) {
            panic!("{LIST}: entry {n}: unknown field `{k}`");
        }
        if let Some(k) = REQUIRED.iter().find(|k| !t.contains_key(**k)) {
            panic!("{LIST}: entry {n}: missing field `{k}`");
        }
        let text = |k: &str| -> Option<String> {
            t.get(k).map(|v| {
                let s = v
                    .as_str()
                    .unwrap_or_else(|| panic!("{LIST}: entry {n}: `{k}` is not a string"));
                format!("{s:?}")
            })
        };
        let optional = |k: &str| text(k).map_or("None".to_string(), |s| format!("Some({s})"));
        let versions = t.get("versions").map_or(String::new(), |v| {
            v.as_array()
                .unwrap_or_else(|| panic!("{LIST}: entry {n}: `versions` is not a list"))
                .iter()
                .map(|v| {
                    let s = v.as_str().unwrap_or_else(|| {
                        panic!("{LIST}: entry {n}: `versions` holds a non-string")
                    });
                    format!("{s:?}, ")
                })
                .collect()
        });
        let plain_export = t.get("plain_export").is_some_and(|v| {
            v.as_bool()
                .unwrap_or_else(|| panic!("{LIST}: entry {n}: `plain_export` is not a boolean"))
        });
        out.push_str(&format!(
            "    Entry {{ package: {}, versions: &[{versions}], below: {}, series: {}, \
             kernel_above: {}, beside: {}, platform: {}, plain_export: {plain_export}, \
             problem: {}, fix: {}, source: {} }},\n",
            text("package").unwrap_or_default(),
            optional("below"),
            optional("series"),
            optional("kernel_above"),
            optional("beside"),
            optional("platform"),
            text("problem").unwrap_or_default(),
            optional("fix"),
            text("source").unwrap_or_default(),
        ));
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
