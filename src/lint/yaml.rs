//! YAML with line numbers: the documents of a file as `saphyr` marked nodes, and the few
//! look-ups the rules make (a value at a key path, and the line of the deepest part of that path
//! that exists, so a missing setting is reported where it belongs).

use saphyr::{LoadableYamlNode, MarkedYaml, YamlData};

use super::{Finding, Severity};

/// A file that is not YAML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: not YAML: {reason}")]
pub struct YamlError {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

/// Every document of `text`.
pub fn load<'t>(file: &str, text: &'t str) -> Result<Vec<MarkedYaml<'t>>, YamlError> {
    MarkedYaml::load_from_str(text).map_err(|e| YamlError {
        file: file.to_string(),
        line: e.marker().line(),
        reason: e.info().to_string(),
    })
}

/// The objects of a document: the document itself, or the `items` of a `kind: List`.
pub fn objects<'a, 't>(doc: &'a MarkedYaml<'t>) -> Vec<&'a MarkedYaml<'t>> {
    if str_at(doc, &["kind"]) == Some("List") {
        if let Some(items) = node_at(doc, &["items"]).and_then(|n| n.data.as_vec()) {
            return items.iter().collect();
        }
    }
    if doc.data.is_mapping() {
        vec![doc]
    } else {
        Vec::new()
    }
}

/// The node at `path` below `node`.
pub fn node_at<'a, 't>(node: &'a MarkedYaml<'t>, path: &[&str]) -> Option<&'a MarkedYaml<'t>> {
    path.iter()
        .try_fold(node, |n, key| n.data.as_mapping_get(key))
}

/// The line of the node at `path`, or of the deepest part of it that exists.
pub fn line_at(node: &MarkedYaml, path: &[&str]) -> usize {
    let mut n = node;
    let mut line = node.span.start.line();
    for key in path {
        match n.data.as_mapping_get(key) {
            Some(next) => {
                n = next;
                line = next.span.start.line();
            }
            None => break,
        }
    }
    line
}

/// The string at `path` (a plain scalar; numbers and booleans are not strings here).
pub fn str_at<'a>(node: &'a MarkedYaml, path: &[&str]) -> Option<&'a str> {
    node_at(node, path).and_then(|n| n.data.as_str())
}

/// What a scalar says, as text: strings as they are, booleans and numbers as YAML writes them.
pub fn scalar_text(node: &MarkedYaml) -> Option<String> {
    match &node.data {
        YamlData::Value(v) => {
            if let Some(s) = v.as_str() {
                Some(s.to_string())
            } else if let Some(b) = v.as_bool() {
                Some(b.to_string())
            } else {
                v.as_integer().map(|i| i.to_string())
            }
        }
        _ => None,
    }
}

/// A boolean setting at `path`: `Some(true)` for `true` (or the string `"true"`, which Helm
/// values often carry), `None` when it is not there.
pub fn bool_at(node: &MarkedYaml, path: &[&str]) -> Option<bool> {
    let n = node_at(node, path)?;
    match scalar_text(n)?.as_str() {
        "true" => Some(true),
        _ => Some(false),
    }
}

/// One object of one file, for rules that report against it.
#[derive(Debug, Clone, Copy)]
pub struct At<'a, 't> {
    pub file: &'a str,
    pub doc: &'a MarkedYaml<'t>,
}

impl At<'_, '_> {
    /// A finding at the line of `path` (or of the deepest part of it that exists).
    pub fn finding(
        &self,
        path: &[&str],
        severity: Severity,
        rule: &'static str,
        message: String,
    ) -> Finding {
        Finding {
            file: self.file.to_string(),
            line: line_at(self.doc, path),
            severity,
            rule,
            message,
        }
    }

    /// The object's `metadata.name`, for messages.
    pub fn name(&self) -> &str {
        str_at(self.doc, &["metadata", "name"]).unwrap_or("(unnamed)")
    }
}
