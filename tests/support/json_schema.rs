//! A validator for the part of JSON Schema (2020-12) that the schemas in `schemas/` use: `type`,
//! `enum`, `const`, `required`, `properties`, `additionalProperties: false`, `items` and local
//! `$ref`s into `$defs`. A keyword outside that set is a test failure, so a schema cannot use one
//! that would silently go unchecked here.

use serde_json::Value;

const ANNOTATIONS: &[&str] = &["$schema", "$id", "title", "description", "$defs"];

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "null" => v.is_null(),
        other => panic!("unknown type {other}"),
    }
}

/// Every way `value` breaks `schema` (whose `$defs` are those of `root`), as `path: problem`.
fn check(root: &Value, schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let schema = schema.as_object().expect("a schema is an object");
    for (key, rule) in schema {
        match key.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "$ref" => {
                let name = rule
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .expect("only local #/$defs/ references");
                check(root, &root["$defs"][name], value, path, errors);
            }
            "type" => {
                let names: Vec<&str> = match rule {
                    Value::String(s) => vec![s.as_str()],
                    Value::Array(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                    _ => panic!("bad type {rule}"),
                };
                if !names.iter().any(|n| type_matches(n, value)) {
                    errors.push(format!("{path}: {value} is not of type {names:?}"));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(value) {
                    errors.push(format!("{path}: {value} is not one of {rule}"));
                }
            }
            "const" => {
                if rule != value {
                    errors.push(format!("{path}: {value} is not {rule}"));
                }
            }
            "required" => {
                for name in rule.as_array().unwrap() {
                    let name = name.as_str().unwrap();
                    if value.is_object() && value.get(name).is_none() {
                        errors.push(format!("{path}: no {name}"));
                    }
                }
            }
            "properties" => {
                if let Some(obj) = value.as_object() {
                    for (name, sub) in rule.as_object().unwrap() {
                        if let Some(v) = obj.get(name) {
                            check(root, sub, v, &format!("{path}.{name}"), errors);
                        }
                    }
                }
            }
            "additionalProperties" => {
                assert_eq!(
                    rule,
                    &Value::Bool(false),
                    "only additionalProperties: false"
                );
                let known = schema["properties"].as_object().unwrap();
                if let Some(obj) = value.as_object() {
                    for name in obj.keys().filter(|n| !known.contains_key(*n)) {
                        errors.push(format!("{path}: {name} is not in the schema"));
                    }
                }
            }
            "items" => {
                if let Some(items) = value.as_array() {
                    for (i, v) in items.iter().enumerate() {
                        check(root, rule, v, &format!("{path}[{i}]"), errors);
                    }
                }
            }
            other => panic!("the schema uses {other}, which this validator does not check"),
        }
    }
}

/// Every way `value` breaks `schema`.
pub fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, value, "$", &mut errors);
    errors
}

#[test]
fn the_validator_catches_what_it_claims_to() {
    let schema = serde_json::json!({
        "type": "object", "required": ["a"], "additionalProperties": false,
        "properties": {"a": {"enum": [1, 2]}, "b": {"type": ["string", "null"]},
                       "c": {"type": "array", "items": {"$ref": "#/$defs/x"}}},
        "$defs": {"x": {"const": true}}
    });
    assert!(violations(
        &schema,
        &serde_json::json!({"a": 1, "b": null, "c": [true]})
    )
    .is_empty());
    let bad = serde_json::json!({"b": 3, "c": [false], "d": 0});
    let v = violations(&schema, &bad);
    assert_eq!(v.len(), 4, "{v:?}");
}
