//! Every ignored test says, in its `#[ignore = …]` reason, the command that runs it: what
//! `cargo test` prints for it is then enough to run it (as root, say), and the command is true:
//! its target is the test's own (`--lib` for a unit test, `--test integration` for these) and its
//! filter a leading part of the test's path.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file's tests, with a trailing `::` (`cache::`,
/// `mount::target_path::`), and the target that runs them.
fn module_of(rel: &Path) -> (String, &'static str) {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let target = match parts.remove(0).as_str() {
        "src" => "--lib",
        _ => "--test integration",
    };
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    (parts.iter().map(|p| format!("{p}::")).collect(), target)
}

#[test]
fn every_ignored_test_names_the_command_that_runs_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    let mut seen = 0;
    for file in files {
        let rel = file.strip_prefix(root).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let Some(rest) = line.trim().strip_prefix("#[ignore") else {
                continue;
            };
            seen += 1;
            let at = format!("{}:{}", rel.display(), n + 1);
            let reason = rest
                .trim()
                .strip_prefix("= \"")
                .and_then(|r| r.strip_suffix("\"]"))
                .unwrap_or_else(|| panic!("{at}: an ignored test without a reason"));
            let command = reason
                .split('`')
                .find(|part| part.starts_with("cargo test "))
                .unwrap_or_else(|| panic!("{at}: the reason names no `cargo test …`: {reason}"));
            let (module, target) = module_of(rel);
            let want = format!("cargo test {target} -- --ignored ");
            let filter = command
                .strip_prefix(&want)
                .unwrap_or_else(|| panic!("{at}: {command:?} does not start with {want:?}"));
            assert!(
                module.starts_with(filter) && !filter.is_empty(),
                "{at}: the filter {filter:?} does not select {module}"
            );
        }
    }
    assert!(
        seen > 0,
        "no ignored test found: is the pattern still right?"
    );
}
