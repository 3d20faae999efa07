//! No two source files import each other, directly or around a loop: what a file needs from
//! another sits in that one, or in a third below both. The layers (`layers.rs`) keep the
//! top-level modules in order; this keeps the files inside each of them in order too.
//!
//! Read from the source text, outside comments and the unit tests at the end of a file: every
//! `crate::…`, `super::…`, `self::…` path, and a path through a child module the file declares,
//! names the file of the longest module it reaches; a name a module re-exports (`pub use`) is
//! followed to the file that defines it, and a re-export alone is not a use.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::layers::sources;
use crate::support::tree::Tree;

/// One source file: its module path, its code, the child modules it declares and the names it
/// re-exports (each with the module path it comes from).
struct Unit {
    file: String,
    module: Vec<String>,
    code: String,
    children: BTreeSet<String>,
    reexports: BTreeMap<String, Vec<String>>,
}

/// `lib.rs` → the crate, `a.rs` and `a/mod.rs` → `a`, `a/b.rs` → `a::b`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The code of a file: without `//` comments and without the unit tests that close it.
pub(crate) fn code_of(text: &str) -> String {
    let body = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    body.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a `use` tree or a path expression starting at `s` names, as segments: `a::b::C`,
/// `a::{b, c::D}` (nested groups too). `self` in a group names the module before it.
fn paths_at(s: &str) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut rest = s.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut end = group.len();
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        end = i;
                        break;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            let inner = &group[..end];
            let mut items = Vec::new();
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(&inner[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            items.push(&inner[start..]);
            let mut out = Vec::new();
            for item in items.iter().filter(|i| !i.trim().is_empty()) {
                for p in paths_at(item) {
                    let p: Vec<String> = p.into_iter().filter(|s| s != "self").collect();
                    out.push([prefix.clone(), p].concat());
                }
            }
            return out;
        }
        let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if name.is_empty() {
            break;
        }
        prefix.push(name.clone());
        match rest[name.len()..].strip_prefix("::") {
            Some(after) => rest = after.trim_start(),
            None => break,
        }
    }
    vec![prefix]
}

/// Every path in `code` that starts at `crate`, `super`, `self` or one of `children`, made
/// absolute from `module`.
fn references(code: &str, module: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let c = code[i..].chars().next().unwrap();
        let before = code[..i].chars().next_back();
        if !is_ident(c) || before.is_some_and(|b| is_ident(b) || b == ':') {
            i += c.len_utf8();
            continue;
        }
        let word: String = code[i..].chars().take_while(|c| is_ident(*c)).collect();
        let after = &code[i + word.len()..];
        if let Some(path) = after.strip_prefix("::") {
            let base: Option<Vec<String>> = match word.as_str() {
                "crate" => Some(Vec::new()),
                "self" => Some(module.to_vec()),
                "super" => {
                    let mut base = module[..module.len().saturating_sub(1)].to_vec();
                    let mut path = path;
                    while let Some(p) = path.strip_prefix("super::") {
                        base.pop();
                        path = p;
                    }
                    found.extend(
                        paths_at(path)
                            .into_iter()
                            .map(|p| [base.clone(), p].concat()),
                    );
                    None
                }
                w if children.contains(w) => Some(module.to_vec()),
                _ => None,
            };
            if let Some(base) = base {
                let start = if word == "crate" || word == "self" {
                    path
                } else {
                    &code[i..]
                };
                found.extend(
                    paths_at(start)
                        .into_iter()
                        .map(|p| [base.clone(), p].concat()),
                );
            }
        }
        i += word.len();
    }
    found
}

/// The `pub use` statements of `code` (taken out of it) as the names they hand on.
fn take_reexports(
    code: &str,
    module: &[String],
    children: &BTreeSet<String>,
) -> (String, BTreeMap<String, Vec<String>>) {
    let mut rest = String::new();
    let mut names = BTreeMap::new();
    let mut text = code;
    while let Some(at) = ["pub use ", "pub(crate) use "]
        .iter()
        .filter_map(|k| text.find(k).map(|i| (i, k.len())))
        .min()
    {
        let (i, len) = at;
        rest.push_str(&text[..i]);
        let end = text[i..].find(';').map_or(text.len(), |e| i + e + 1);
        let stmt = &text[i + len..end].trim_end_matches(';');
        for p in paths_at(stmt) {
            let p = match p.first().map(String::as_str) {
                Some("crate") => p[1..].to_vec(),
                Some("super") => {
                    let ups = p.iter().take_while(|s| *s == "super").count();
                    [
                        module[..module.len().saturating_sub(ups)].to_vec(),
                        p[ups..].to_vec(),
                    ]
                    .concat()
                }
                Some("self") => [module.to_vec(), p[1..].to_vec()].concat(),
                Some(first) if children.contains(first) => [module.to_vec(), p].concat(),
                _ => continue,
            };
            if let Some(last) = p.last() {
                names.insert(last.clone(), p);
            }
        }
        text = &text[end..];
    }
    rest.push_str(text);
    (rest, names)
}

/// The file a module path lands in: the longest module it reaches, and through a re-export of
/// that module to the file that defines the name.
fn file_of(units: &[Unit], path: &[String], depth: usize) -> Option<usize> {
    let (at, unit) = (0..=path.len()).rev().find_map(|n| {
        units
            .iter()
            .position(|u| u.module == path[..n])
            .map(|u| (n, u))
    })?;
    if depth < 8 {
        if let Some(target) = path.get(at).and_then(|n| units[unit].reexports.get(n)) {
            let full = [target.clone(), path[at + 1..].to_vec()].concat();
            if let Some(f) = file_of(units, &full, depth + 1) {
                return Some(f);
            }
        }
    }
    Some(unit)
}

/// The groups of files (more than one) that import each other around a loop (Tarjan's strongly
/// connected components).
fn circles(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                s.out.push(group);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Folders whose `mod.rs` defines the model its files build on: it uses none of them. Any other
/// folder's `mod.rs` stands for the folder, which its files may use while it uses them.
const MODELS: &[&[&str]] = &[&["checks"]];

/// Whether one of two modules holds the other, and is not one of the [`MODELS`].
fn nested(a: &[String], b: &[String]) -> bool {
    let (outer, inner) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    inner.starts_with(outer) && !MODELS.iter().any(|m| outer == *m)
}

/// The import circles among the files of `src`, each as its files' paths.
fn file_circles(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let mut units = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        if rel == Path::new("main.rs") || rel == Path::new("testkit.rs") {
            continue;
        }
        let module = module_of(rel);
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        let children: BTreeSet<String> = code
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let l = l.strip_prefix("pub ").unwrap_or(l);
                let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
                l.strip_prefix("mod ")?
                    .strip_suffix(';')
                    .map(str::to_string)
            })
            .collect();
        let (code, reexports) = take_reexports(&code, &module, &children);
        units.push(Unit {
            file: format!("src/{}", rel.display()),
            module,
            code,
            children,
            reexports,
        });
    }
    let edges: Vec<BTreeSet<usize>> = (0..units.len())
        .map(|i| {
            let u = &units[i];
            references(&u.code, &u.module, &u.children)
                .iter()
                .filter_map(|p| file_of(&units, p, 0))
                .filter(|&j| j != i && !nested(&units[i].module, &units[j].module))
                .collect()
        })
        .collect();
    let mut found: Vec<Vec<String>> = circles(&edges)
        .into_iter()
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|&i| units[i].file.clone()).collect();
            names.sort();
            names
        })
        .collect();
    found.sort();
    found
}

#[test]
fn no_source_files_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = file_circles(&src);
    assert!(
        found.is_empty(),
        "files that import each other (move what they share to where it belongs):\n{}",
        found
            .iter()
            .map(|c| c.join(" <-> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_circle_through_a_model_its_file_or_a_reexport_is_seen() {
    let tree = Tree::new();
    let write = |rel: &str, text: &str| {
        tree.write(rel, text);
    };
    write("lib.rs", "pub mod checks;\npub mod b;\npub mod c;\n");
    // The model asks its registry, which builds on the model.
    write(
        "checks/mod.rs",
        "pub mod registry;\npub struct Model;\nfn f() { registry::find(); }\n",
    );
    write(
        "checks/registry.rs",
        "use super::Model;\npub fn find() {}\n",
    );
    // b/x.rs and b/y.rs, one through b's re-export, the other in a group over two lines.
    write("b/mod.rs", "pub mod x;\npub mod y;\npub use x::Thing;\n");
    write(
        "b/x.rs",
        "use crate::b::{\n    y::helper,\n};\npub struct Thing;\n",
    );
    write(
        "b/y.rs",
        "pub fn helper() { let _ = crate::b::Thing; }\n#[cfg(test)]\nmod tests {\n    use super::super::x;\n}\n",
    );
    // Any other folder's mod.rs stands for the folder: its files may use it.
    write(
        "c/mod.rs",
        "mod kid;\npub struct Plan;\npub fn run() { kid::step(); }\n",
    );
    write("c/kid.rs", "pub fn step() { let _ = super::Plan; }\n");
    let found = file_circles(tree.root());
    assert_eq!(
        found,
        [
            vec!["src/b/x.rs".to_string(), "src/b/y.rs".to_string()],
            vec![
                "src/checks/mod.rs".to_string(),
                "src/checks/registry.rs".to_string()
            ],
        ]
    );
    // With the model handing the registry's name on only, and the name used from its own file,
    // no circle is left.
    write(
        "checks/mod.rs",
        "pub mod registry;\npub struct Model;\npub use registry::find;\n",
    );
    write("b/y.rs", "pub fn helper() {}\n");
    assert_eq!(file_circles(tree.root()), Vec::<Vec<String>>::new());
}
