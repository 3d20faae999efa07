//! Where CI's tools come from: every package that `.ci/run` and the scripts it runs install
//! comes from Debian 12, PyPI or crates.io, and the table of `docs/testing.md` between `ci-tools:begin` and
//! `ci-tools:end` names each one with its source. A package installed from anywhere else (an
//! apt repository Debian does not have, a download) has no honest row to add there.

use std::collections::BTreeMap;
use std::path::Path;

/// The chapter of the guide that holds the table of CI's tools.
const TABLE_IN: &str = "docs/testing.md";

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The package names in a command's arguments (up to `;`, `||` or a line continuation):
/// options, `-t`'s release and shell expansions left out, `==VERSION` cut.
fn names(args: &str) -> Vec<String> {
    let args = args
        .split([';', '\\'])
        .next()
        .unwrap()
        .split("||")
        .next()
        .unwrap();
    let mut out = Vec::new();
    let mut words = args.split_whitespace();
    while let Some(w) = words.next() {
        if w == "-t" {
            words.next();
        } else {
            // A package name, pinned or not; anything else (options, expansions, a message's
            // words) is not one.
            let name = w.split("==").next().unwrap();
            if name.starts_with(|c: char| c.is_ascii_alphanumeric())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// What each script installs, as (package, source, script).
fn installed() -> Vec<(String, &'static str, &'static str)> {
    let mut out = Vec::new();
    for script in [
        ".ci/run",
        "packaging/build-packages.sh",
        "packaging/test-packages.sh",
        "deploy/build-image.sh",
        "tests/vm/setup-host.sh",
    ] {
        for line in read(script).lines().map(str::trim) {
            if line.starts_with('#') || line.starts_with("echo") || line.starts_with("die") {
                continue;
            }
            let mut add = |words: &str, source| {
                for n in names(words) {
                    out.push((n, source, script));
                }
            };
            // `marker` where it is a command, not words inside a quoted message.
            let command_after = |marker: &str| -> Option<&str> {
                let at = line.find(marker)?;
                (line[..at].matches('"').count() % 2 == 0).then(|| &line[at + marker.len()..])
            };
            if let Some(list) = line
                .strip_prefix("for pkg in ")
                .and_then(|l| l.split_once(';'))
                .map(|(l, _)| l)
            {
                add(list, "Debian 12");
            } else if let Some(rest) = command_after("apt-get install ") {
                add(rest, "Debian 12");
            } else if let Some(rest) = command_after("missing+=(") {
                // `missing+=(pkg)` installs pkg; `missing+=("what (how)")` is a message.
                if !rest.starts_with('"') {
                    add(rest.split(')').next().unwrap(), "Debian 12");
                }
            } else if let Some((_, rest)) = line.split_once("/pip\" install ") {
                // `"$venv/bin/pip" install …`: the quote closes the program's name.
                add(rest, "PyPI");
            } else if let Some(rest) = command_after("cargo install ") {
                add(rest, "crates.io");
            } else {
                assert!(
                    !line.contains("curl ") && !line.contains("wget "),
                    "{script} downloads something outside Debian, PyPI and crates.io: {line}"
                );
            }
        }
    }
    out
}

/// The guide's table ([`TABLE_IN`]): package -> source (a row may name several packages).
fn documented_table() -> BTreeMap<String, String> {
    let text = read(TABLE_IN);
    let start = text
        .find("<!-- ci-tools:begin -->")
        .unwrap_or_else(|| panic!("{TABLE_IN} has no <!-- ci-tools:begin --> table of CI's tools"));
    let end = text[start..]
        .find("<!-- ci-tools:end -->")
        .expect("no <!-- ci-tools:end -->")
        + start;
    let mut table = BTreeMap::new();
    for row in text[start..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        for name in cells[1].split(',') {
            table.insert(
                name.trim().trim_matches('`').to_string(),
                cells[2].to_string(),
            );
        }
    }
    table
}

#[test]
fn every_tool_ci_installs_comes_from_debian_pypi_or_crates_io_as_the_guide_says() {
    let table = documented_table();
    let installed = installed();
    assert!(
        installed
            .iter()
            .any(|(n, s, _)| n == "rpm" && *s == "Debian 12")
            && installed
                .iter()
                .any(|(n, s, _)| n == "ziglang" && *s == "PyPI")
            && installed
                .iter()
                .any(|(n, s, _)| n == "cargo-deb" && *s == "crates.io"),
        "the scripts' installs were not found (has their shape changed?): {installed:?}"
    );
    for (name, source, script) in &installed {
        match table.get(name) {
            Some(said) => assert_eq!(
                said, source,
                "{script} installs {name} from {source}; {TABLE_IN}'s table says {said}"
            ),
            None => panic!(
                "{script} installs {name} ({source}), which {TABLE_IN}'s table of CI's tools does not list"
            ),
        }
    }
    for (name, source) in &table {
        assert!(
            ["Debian 12", "PyPI", "crates.io"].contains(&source.as_str()),
            "{TABLE_IN}: {name} comes from {source}, not Debian 12, PyPI or crates.io"
        );
        assert!(
            installed.iter().any(|(n, _, _)| n == name),
            "{TABLE_IN} lists {name}, which no script installs"
        );
    }
}
