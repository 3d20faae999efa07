//! The layers of the crate, lowest first, and the rule that keeps them: a module imports only
//! from layers below it (and from itself), so there is no import cycle and data flows one way —
//! argv → request → policy → facts → checks → verdict → mount → verify → exit code.
//!
//! Read from the source text: every `crate::NAME` outside comments in `src/NAME/` or
//! `src/NAME.rs` must name a lower layer.

use std::path::Path;

/// Lowest first. Modules on one line are of one layer and do not import each other.
const LAYERS: &[&[&str]] = &[
    // Every side effect on the machine, behind one trait.
    &["system"],
    &["nfs", "escape", "oci"],
    // The wire of NRI (the runtime's plugin interface): speaks to nothing else in the crate.
    &["nri"],
    &["kmod", "lint"],
    &["host"],
    &["checks"],
    &["policy"],
    &["verdict"],
    // Every verdict: the node judge, the mount judge and the container judge, one each for
    // the helper, check, verify, doctor, the agent, the container gates and the Slurm commands.
    &["judge"],
    &["mount", "doctor", "watch"],
    &["agent", "slurm"],
    &["cli"],
];

/// Compiled only for the unit tests (`#[cfg(test)]`), outside the layers: any module's tests may
/// use it, and it may use any layer.
const TEST_ONLY: &str = "testkit";

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or_else(|| panic!("src/{module} is in no layer: add it to LAYERS"))
}

pub(crate) fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The names after `prefix` in one line of code: `prefix{A, B::c}` gives `A` and `B`,
/// `prefixName::…` gives `Name`.
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let after = &rest[i + prefix.len()..];
        if let Some(group) = after.strip_prefix('{') {
            for item in group.split('}').next().unwrap_or("").split(',') {
                let name = item.trim().split("::").next().unwrap_or("").trim();
                if !name.is_empty() {
                    found.push(name.to_string());
                }
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
        rest = after;
    }
    found
}

/// The product's source files (not the unit tests' own files, not the test kit), each with its
/// path relative to the crate and its text.
pub(crate) fn product_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&f).unwrap();
            (rel, text)
        })
        .filter(|(rel, _)| !rel.contains("/tests/") && rel != "src/testkit.rs")
        .collect()
}

/// `crate::NAME` references in code (not in `//` comments).
fn references(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
            rest = after;
        }
    }
    found
}

#[test]
fn no_module_imports_a_higher_or_equal_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for module in LAYERS.iter().flat_map(|l| l.iter()) {
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            sources(&dir, &mut files);
        } else {
            files.push(src.join(format!("{module}.rs")));
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for r in references(&text) {
                if r == *module || r == TEST_ONLY {
                    continue;
                }
                if layer_of(&r) >= layer_of(module) {
                    wrong.push(format!("{} uses crate::{r}", f.display()));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        if matches!(name.as_str(), "lib" | "main" | TEST_ONLY) {
            continue;
        }
        layer_of(&name);
    }
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(
        lib.contains(&format!("#[cfg(test)]\nmod {TEST_ONLY};")),
        "src/lib.rs must declare {TEST_ONLY} for tests only"
    );
}

/// The wings of `src/host`, lowest first, on the same rule: a wing imports only from wings
/// below it. The types `host/mod.rs` re-exports belong to the wing that defines them.
const HOST_WINGS: &[&[&str]] = &[
    &["io"],
    &["kernel", "kernel_cmdline", "syslog"],
    &["modules", "platform", "mounts"],
    // What is known of NFS LOCALIO: the node's facts with this host's addresses, and each mount's.
    &["boot", "mount_localio"],
    &["facts"],
    // The agent's node facts kept between passes.
    &["facts_memo"],
    &["stack_facts"],
    // Test-only: HostFacts without a tree, for the checks' unit tests.
    &["facts_builder"],
];

/// The wing a name of `crate::host::` belongs to.
fn wing_name(name: &str) -> &str {
    match name {
        "Root" | "HostError" | "Record" | "FileKind" | "FileRead" | "read_first_line" => "io",
        "HostFacts" => "facts",
        other => other,
    }
}

fn wing_of(name: &str) -> Option<usize> {
    let name = wing_name(name);
    HOST_WINGS.iter().position(|l| l.contains(&name))
}

/// `crate::host::NAME` and `crate::host::{A, B}` references in code; `super::NAME` in a file at
/// the top of `src/host` names a wing too.
fn host_references(text: &str, top_level: bool) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        found.extend(names_after(code, "crate::host::"));
        if top_level {
            found.extend(names_after(code, "super::"));
        }
    }
    found.retain(|n| n != "self");
    found
}

#[test]
fn no_host_wing_imports_a_higher_or_equal_wing() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/host");
    let mut wrong = Vec::new();
    for wing in HOST_WINGS.iter().flat_map(|l| l.iter()) {
        let dir = host.join(wing);
        let (files, top_level) = if dir.is_dir() {
            let mut files = Vec::new();
            sources(&dir, &mut files);
            (files, false)
        } else {
            (vec![host.join(format!("{wing}.rs"))], true)
        };
        let own = wing_of(wing).unwrap();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for r in host_references(&text, top_level) {
                let Some(theirs) = wing_of(&r) else { continue };
                if wing_name(&r) != *wing && theirs >= own {
                    wrong.push(format!("{} uses host::{r}", f.display()));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the wings of src/host:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_host_wing_has_a_place_and_host_has_no_loose_files() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/host");
    for e in std::fs::read_dir(&host).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        if name == "mod" {
            continue;
        }
        assert!(
            wing_of(&name).is_some(),
            "src/host/{name} is in no wing: add it to HOST_WINGS"
        );
    }
}

/// The judges inside `src/judge`, lowest first: the container judge asks the node judge and the
/// mount judge, never the other way.
const JUDGE_WINGS: &[&[&str]] = &[&["node", "mount"], &["container"]];

#[test]
fn the_judges_import_only_lower_judges_and_nothing_from_mod_rs() {
    let judge = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/judge");
    let wing_of = |n: &str| JUDGE_WINGS.iter().position(|l| l.contains(&n));
    let mut wrong = Vec::new();
    for e in std::fs::read_dir(&judge).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        if name == "mod" {
            // Only the list of judges and what it re-exports: no logic a judge could import.
            for line in text
                .lines()
                .filter(|l| !l.starts_with("//") && !l.trim().is_empty())
            {
                if !(line.starts_with("pub mod ") || line.starts_with("pub use ")) {
                    wrong.push(format!("src/judge/mod.rs holds more than its list: {line}"));
                }
            }
            continue;
        }
        let own = wing_of(&name)
            .unwrap_or_else(|| panic!("src/judge/{name} is in no place: add it to JUDGE_WINGS"));
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for prefix in ["super::", "crate::judge::"] {
                let mut rest = code;
                while let Some(i) = rest.find(prefix) {
                    let after = &rest[i + prefix.len()..];
                    let r: String = after
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    match wing_of(&r) {
                        Some(theirs) if r != name && theirs >= own => {
                            wrong.push(format!("src/judge/{name}.rs uses judge::{r}"))
                        }
                        None if !r.is_empty() && r != "tests" => wrong.push(format!(
                            "src/judge/{name}.rs uses judge::{r}, which is not a judge"
                        )),
                        _ => {}
                    }
                    rest = after;
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The most lines a source file under `src/` may have: past it, a file holds more than one idea.
const MAX_LINES: usize = 800;

#[test]
fn no_source_file_is_over_800_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut long = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let lines = std::fs::read_to_string(&f).unwrap().lines().count();
        if lines > MAX_LINES {
            long.push(format!("src/{rel}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines, split by subject:\n{}",
        long.join("\n")
    );
}

/// The folders whose `mod.rs` files only list their children and say what they re-export: a
/// child imports what it needs from the sibling that defines it, never from its parent's
/// `mod.rs` (where a fat parent grows a knot of everything its children share).
const THIN_PARENTS: &[&str] = &[
    "src/doctor",
    "src/policy",
    "src/judge",
    "src/cli",
    "src/host",
];

/// Folders below a thin parent whose own `mod.rs` still holds what their children share, each
/// with why.
const NOT_YET_THIN: &[(&str, &str)] = &[(
    "src/host/mounts",
    "its mountinfo and mountstats parsing is being rewritten for speed; its types move out of mod.rs after that lands",
)];

/// The names `mod.rs` declares as modules, and whether each is test-only.
fn children_of(mod_rs: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut test_only = false;
    for line in mod_rs.lines() {
        let t = line.trim();
        if t == "#[cfg(test)]" {
            test_only = true;
            continue;
        }
        let decl = t
            .strip_prefix("pub mod ")
            .or_else(|| t.strip_prefix("pub(crate) mod "))
            .or_else(|| t.strip_prefix("mod "));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            out.push((name.to_string(), test_only));
        }
        test_only = false;
    }
    out
}

/// `super::NAME` (and `super::{A, B}`), and `MODULE::NAME` with `module` the parent's path
/// (`crate::host`), in the code of `text`, before its unit tests.
fn parent_names(text: &str, module: &str) -> Vec<String> {
    let by_path = format!("{module}::");
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim() == "#[cfg(test)]" {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        found.extend(names_after(code, "super::"));
        found.extend(names_after(code, &by_path));
    }
    found
}

/// The module path of a folder below `src/`: `src/host/modules` is `crate::host::modules`.
fn module_path(dir: &Path) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rel = dir.strip_prefix(&src).unwrap_or(dir);
    std::iter::once("crate".to_string())
        .chain(rel.iter().map(|c| c.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join("::")
}

fn fat_parent_imports(dir: &Path, wrong: &mut Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if NOT_YET_THIN
        .iter()
        .any(|(d, _)| dir.strip_prefix(root).is_ok_and(|rel| rel == Path::new(d)))
    {
        return;
    }
    let mod_rs = dir.join("mod.rs");
    let Ok(text) = std::fs::read_to_string(&mod_rs) else {
        return;
    };
    let children = children_of(&text);
    let module = module_path(dir);
    for (child, test_only) in &children {
        let file = if dir.join(child).is_dir() {
            dir.join(child).join("mod.rs")
        } else {
            dir.join(format!("{child}.rs"))
        };
        if dir.join(child).is_dir() {
            fat_parent_imports(&dir.join(child), wrong);
        }
        if *test_only {
            continue;
        }
        let Ok(code) = std::fs::read_to_string(&file) else {
            continue;
        };
        for name in parent_names(&code, &module) {
            let known = children.iter().any(|(c, _)| *c == name);
            if !known && !matches!(name.as_str(), "super" | "self" | "*") {
                wrong.push(format!(
                    "{} imports {name} from its parent's mod.rs",
                    file.display()
                ));
            }
        }
    }
}

#[test]
fn no_child_imports_from_its_parents_mod_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for dir in THIN_PARENTS {
        fat_parent_imports(&root.join(dir), &mut wrong);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_thin_parent_guard_sees_a_name_from_mod_rs_and_not_a_sibling() {
    let children = children_of("pub mod a;\n#[cfg(test)]\nmod t;\nmod b;\n");
    assert_eq!(
        children,
        [("a".into(), false), ("t".into(), true), ("b".into(), false)]
    );
    let names = parent_names(
        "use super::{a::X, Fat};\nuse super::b;\nuse crate::p::{a::Y, Re};\n#[cfg(test)]\nuse super::Late;\n",
        "crate::p",
    );
    assert_eq!(names, ["a", "Fat", "b", "a", "Re"]);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_eq!(
        module_path(&src.join("host/modules")),
        "crate::host::modules"
    );
}
