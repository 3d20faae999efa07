//! The NRI messages `src/nri/api.rs` declares by hand match the vendored NRI `api.proto`: every
//! declared message exists there, and every declared field has the proto's name and number.
//! Both are read as text (no `protoc`).

use std::collections::BTreeMap;

type Fields = BTreeMap<String, u32>;

/// `message Name { ... type name = N; ... }` of the proto, nested messages left out.
fn proto_messages(text: &str) -> BTreeMap<String, Fields> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Fields)> = None;
    for raw in text.lines() {
        let line = raw.split("//").next().unwrap_or("").trim();
        if let Some(rest) = line.strip_prefix("message ") {
            let name = rest
                .split(|c: char| c.is_whitespace() || c == '{')
                .next()
                .unwrap();
            if line.ends_with("{}") {
                out.insert(name.to_string(), Fields::new());
            } else {
                current = Some((name.to_string(), Fields::new()));
            }
            continue;
        }
        if line.starts_with('}') {
            if let Some((name, fields)) = current.take() {
                out.insert(name, fields);
            }
            continue;
        }
        if let Some((_, fields)) = current.as_mut() {
            if let Some((left, number)) = line.trim_end_matches(';').split_once('=') {
                let name = left.split_whitespace().last().unwrap();
                fields.insert(name.to_string(), number.trim().parse().unwrap());
            }
        }
    }
    out
}

/// `pub struct Name` with `#[prost(..., tag = "N")] pub field:` of the Rust source.
fn declared_messages(text: &str) -> BTreeMap<String, Fields> {
    let mut out = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut tag: Option<u32> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest
                .split(|c: char| c.is_whitespace() || c == '{')
                .next()
                .unwrap();
            out.insert(name.to_string(), Fields::new());
            current = Some(name.to_string());
            continue;
        }
        if let Some(i) = line.find("tag = \"") {
            let n = &line[i + 7..];
            tag = Some(n[..n.find('"').unwrap()].parse().unwrap());
            continue;
        }
        if let (Some(msg), Some(n)) = (&current, tag) {
            if let Some(rest) = line.strip_prefix("pub ") {
                let field = rest.split(':').next().unwrap().trim_start_matches("r#");
                out.get_mut(msg).unwrap().insert(field.to_string(), n);
                tag = None;
            }
        }
    }
    out
}

#[test]
fn every_declared_nri_message_and_field_number_is_the_vendored_protos() {
    let root = env!("CARGO_MANIFEST_DIR");
    let proto = std::fs::read_to_string(format!("{root}/vendor/nri/api.proto")).unwrap();
    let rust = std::fs::read_to_string(format!("{root}/src/nri/api.rs")).unwrap();
    let proto = proto_messages(&proto);
    let declared = declared_messages(&rust);
    assert!(
        proto.len() > 40,
        "the proto parser found {} messages",
        proto.len()
    );
    assert!(declared.len() >= 15, "declared: {declared:?}");
    let mut wrong = Vec::new();
    for (msg, fields) in &declared {
        let Some(theirs) = proto.get(msg) else {
            wrong.push(format!("{msg}: no such message in api.proto"));
            continue;
        };
        for (field, n) in fields {
            match theirs.get(field) {
                Some(m) if m == n => {}
                Some(m) => wrong.push(format!("{msg}.{field}: declared {n}, api.proto {m}")),
                None => wrong.push(format!("{msg}.{field}: no such field in api.proto")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The one enum value the plugin sends.
    let text = std::fs::read_to_string(format!("{root}/vendor/nri/api.proto")).unwrap();
    assert!(text.contains("CREATE_CONTAINER = 4;"));
    assert!(rust.contains("EVENT_CREATE_CONTAINER: i32 = 4;"));
}

#[test]
fn the_vendored_proto_is_nri_0_8_with_its_licence() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/vendor/nri/README.md")).unwrap();
    assert!(readme.contains("v0.8.0"));
    let licence = std::fs::read_to_string(format!("{root}/vendor/nri/LICENSE")).unwrap();
    assert!(licence.contains("Apache License"));
    let proto = std::fs::read_to_string(format!("{root}/vendor/nri/api.proto")).unwrap();
    assert!(proto.contains("package nri.pkg.api.v1alpha1;"));
}
