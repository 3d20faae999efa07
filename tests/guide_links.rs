//! The README and the guide (`docs/*.md`) link to each other by relative paths and heading
//! anchors: every such link must reach a file of the tree and, with `#anchor`, a heading of that
//! file (GitHub's anchor of it). Moving a section between chapters breaks a link loudly here.

use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every chapter of the guide, relative to the crate.
pub(crate) fn documents() -> Vec<PathBuf> {
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(crate_dir().join("docs"))
        .expect("docs/")
        .map(|e| Path::new("docs").join(e.unwrap().file_name()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    std::iter::once(PathBuf::from("README.md"))
        .chain(chapters)
        .collect()
}

/// The targets of the relative links of a Markdown text (`[text](target)`), outside code.
pub(crate) fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_string());
            }
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every broken link of `doc` (relative to the crate) whose text is `text`.
fn broken_links(doc: &Path, text: &str) -> Vec<String> {
    let dir = doc.parent().unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    for target in relative_links(text) {
        let (file, fragment) = match target.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (target.as_str(), None),
        };
        let linked = if file.is_empty() {
            doc.to_path_buf()
        } else {
            dir.join(file)
        };
        let Ok(linked_text) = std::fs::read_to_string(crate_dir().join(&linked)) else {
            if !crate_dir().join(&linked).is_dir() {
                broken.push(format!("{}: {target}: no such file", doc.display()));
            }
            continue;
        };
        if let Some(fragment) = fragment {
            if !anchors(&linked_text).iter().any(|a| a == fragment) {
                broken.push(format!(
                    "{}: {target}: {} has no heading with that anchor",
                    doc.display(),
                    linked.display()
                ));
            }
        }
    }
    broken
}

#[test]
fn every_link_of_the_readme_and_the_guide_reaches_a_file_and_a_heading() {
    let mut broken = Vec::new();
    let mut links = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(crate_dir().join(&doc)).unwrap();
        links += relative_links(&text).len();
        broken.extend(broken_links(&doc, &text));
    }
    assert!(links >= 40, "only {links} links found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(anchor(" On Kubernetes (`deploy/`)"), "on-kubernetes-deploy");
    assert_eq!(
        anchor("What mount(8) passes, and what the helper does with it"),
        "what-mount8-passes-and-what-the-helper-does-with-it"
    );
    assert_eq!(
        anchor("The container gate's speed"),
        "the-container-gates-speed"
    );
}

#[test]
fn a_link_to_a_missing_heading_or_file_is_named() {
    let text = "See [checks](checks.md#no-such-heading), [gone](gone.md), \
                [ok](checks.md#json), `[code](not-a-link.md)`.\n";
    let broken = broken_links(Path::new("docs/x.md"), text);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(
        broken[0].contains("checks.md#no-such-heading"),
        "{broken:?}"
    );
    assert!(broken[1].contains("gone.md: no such file"), "{broken:?}");
}
