//! Every flag of `nfs-gds` is declared once. A flag several commands take (`--json`, `--probe`)
//! is one field of a struct in `src/cli/shared.rs` that each command flattens, so its name and
//! help cannot drift between commands; a second `#[arg(long …)]` field of the same name anywhere
//! in `src/cli/` fails here. The global options are named only by their clap declaration
//! (`GlobalArgs`), never again as string literals in the code that reads argv before clap does.
//! (The mount helper's flags are one table, `src/mount/args.rs`'s `FLAGS`, tested there.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The long flags a source file declares with clap's derive: `#[arg(long)] pub json: bool`
/// (the field's name, `_` as `-`) or `#[arg(long = "name")]`, each with its line.
fn long_flags(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if let Some(attr) = line.strip_prefix("#[arg(") {
            // The attribute may run over several lines: up to the line ending in `)]`.
            let mut whole = attr.to_string();
            let start = i;
            while !whole.trim_end().ends_with(")]") && i + 1 < lines.len() {
                i += 1;
                whole.push(' ');
                whole.push_str(lines[i].trim());
            }
            let long = whole
                .split(',')
                .map(|p| p.trim().trim_end_matches(")]").trim())
                .find_map(|p| {
                    if p == "long" {
                        Some(None)
                    } else {
                        p.strip_prefix("long = \"")
                            .and_then(|n| n.strip_suffix('"'))
                            .map(|n| Some(n.to_string()))
                    }
                });
            if let Some(long) = long {
                // The field the attribute belongs to: the next `pub NAME:` line.
                let field = lines[i + 1..]
                    .iter()
                    .find_map(|l| l.trim().strip_prefix("pub ")?.split_once(':'))
                    .map(|(name, _)| name.replace('_', "-"));
                if let Some(name) = long.or(field) {
                    out.push((name, start + 1));
                }
            }
        }
        i += 1;
    }
    out
}

/// Each long flag declared more than once, with where.
fn declared_twice(files: &[(String, String)]) -> BTreeMap<String, Vec<String>> {
    let mut all: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, text) in files {
        for (name, line) in long_flags(text) {
            all.entry(name).or_default().push(format!("{file}:{line}"));
        }
    }
    all.retain(|_, at| at.len() > 1);
    all
}

fn cli_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    sources(&root.join("src/cli"))
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.strip_prefix(root).unwrap().display().to_string(), text)
        })
        .collect()
}

#[test]
fn no_long_flag_is_declared_twice() {
    let files = cli_sources();
    let declared: usize = files.iter().map(|(_, t)| long_flags(t).len()).sum();
    assert!(
        declared >= 20,
        "only {declared} long flags found in src/cli"
    );
    let twice = declared_twice(&files);
    assert!(
        twice.is_empty(),
        "flags declared more than once (share one field, flattened): {twice:#?}"
    );
}

#[test]
fn a_flag_declared_in_two_commands_is_found() {
    let a = "pub struct A {\n    /// JSON\n    #[arg(long)]\n    pub json: bool,\n    \
             #[arg(\n        long = \"nfd-dir\",\n        value_name = \"DIR\"\n    )]\n    \
             pub nfd: Option<PathBuf>,\n}\n";
    let b = "pub struct B {\n    #[arg(short, long)]\n    pub json: bool,\n    \
             #[arg(long = \"nfd-dir\")]\n    pub other: u8,\n    #[arg(value_name = \"X\")]\n    \
             pub positional: String,\n}\n";
    assert_eq!(
        long_flags(a),
        [("json".to_string(), 3), ("nfd-dir".to_string(), 5)]
    );
    let twice = declared_twice(&[("a.rs".into(), a.into()), ("b.rs".into(), b.into())]);
    assert_eq!(twice.keys().collect::<Vec<_>>(), ["json", "nfd-dir"]);
    assert_eq!(twice["json"], ["a.rs:3", "b.rs:2"]);
}

/// The global options that take a value are skipped by name where argv is read before clap
/// (`subcommand_of`, the JSON error of a refused command line): those names come from
/// `GlobalArgs`, so no file of `src/cli` spells them again outside its tests.
#[test]
fn the_global_options_are_named_once() {
    use clap::CommandFactory;
    let mut cli = nfs_gds::cli::Cli::command();
    cli.build();
    let globals: Vec<String> = cli
        .get_arguments()
        .filter(|a| a.is_global_set())
        .filter_map(|a| a.get_long().map(|l| format!("\"--{l}\"")))
        .collect();
    assert!(globals.contains(&"\"--root\"".to_string()), "{globals:?}");
    for (file, text) in cli_sources() {
        let code = text.split("#[cfg(test)]").next().unwrap();
        for g in &globals {
            assert!(
                !code.contains(g.as_str()),
                "{file} spells the global option {g} by hand"
            );
        }
    }
}
