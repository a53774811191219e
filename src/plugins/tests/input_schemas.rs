//! Tools' input and output schemas: type object, compiling, no remote or file refs; and the committed schemas.

use super::*;
use crate::schemas::SchemaName;

// ---------------------------------------------------------------- input schemas

#[test]
fn input_schema_of_type_string() {
    assert_errors(
        &broken(|m| tool0(m)["input_schema"] = json!({"type": "string"})),
        &[(
            "/tools/0/input_schema",
            "type must be \"object\", not \"string\"",
        )],
    );
}

#[test]
fn input_schema_without_type() {
    assert_errors(
        &broken(|m| tool0(m)["input_schema"] = json!({"properties": {}})),
        &[(
            "/tools/0/input_schema",
            "type must be \"object\" (add \"type\": \"object\")",
        )],
    );
}

#[test]
fn input_schema_with_unknown_type() {
    let errors = broken(|m| {
        tool0(m)["input_schema"] =
            json!({"type": "object", "properties": {"a": {"type": "nosuchtype"}}})
    });
    // The pointer goes down to the bad keyword inside the schema.
    assert_errors(
        &errors,
        &[(
            "/tools/0/input_schema/properties/a/type",
            "is not a valid JSON Schema",
        )],
    );
}

#[test]
fn input_schema_with_bad_keyword_value() {
    let errors = broken(|m| {
        tool0(m)["input_schema"] =
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "x"}}})
    });
    assert_errors(
        &errors,
        &[(
            "/tools/0/input_schema/properties/n/minimum",
            "is not a valid JSON Schema: value is not of type \"number\"",
        )],
    );
}

#[test]
fn input_schema_is_not_an_object() {
    assert_errors(
        &broken(|m| tool0(m)["input_schema"] = json!(true)),
        &[(
            "/tools/0/input_schema",
            "must be an object (found a boolean)",
        )],
    );
}

#[test]
fn input_schema_with_remote_ref_is_refused_without_network() {
    let (_sb, dir) = plugin_with(|m| {
        tool0(m)["input_schema"] =
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}})
    });
    let started = Instant::now();
    let errors = rejection(&dir);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "took {took:?}: did it try the network?"
    );
    assert_errors(
        &errors,
        &[("/tools/0/input_schema", "is not a valid JSON Schema")],
    );
    assert!(
        errors[0].message.contains("https://example.com/s.json"),
        "{}",
        errors[0].message
    );
}

#[test]
fn input_schema_with_top_level_remote_ref_is_refused_without_network() {
    // A non-routable address: a fetch attempt would hang in connect() rather
    // than fail fast, so the time limit below catches it even without network.
    let (_sb, dir) = plugin_with(|m| {
        tool0(m)["input_schema"] = json!({"type": "object", "$ref": "http://10.255.255.1/s.json"})
    });
    let started = Instant::now();
    let errors = rejection(&dir);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_errors(
        &errors,
        &[("/tools/0/input_schema", "http://10.255.255.1/s.json")],
    );
}

#[test]
fn input_schema_with_file_ref_is_refused() {
    let (sb, dir) = plugin_with(|_| {});
    let other = sb.root.path().join("other.json");
    std::fs::write(&other, r#"{"type":"object"}"#).unwrap();
    let mut m = manifest(NAME, TOOL);
    m["tools"][0]["input_schema"] = json!({"type": "object", "properties": {"a": {"$ref": format!("file://{}", other.display())}}});
    std::fs::write(dir.join(MANIFEST_FILE), m.to_string()).unwrap();
    assert_errors(
        &rejection(&dir),
        &[("/tools/0/input_schema", "is not a valid JSON Schema")],
    );
}

#[test]
fn output_schema_that_does_not_compile() {
    assert_errors(
        &broken(|m| tool0(m)["output_schema"] = json!({"type": 12})),
        &[("/tools/0/output_schema/type", "is not a valid JSON Schema")],
    );
}

// ---------------------------------------------------------------- schemas

#[test]
fn committed_schemas_match_the_generated_ones() {
    let dir = crate::test_support::repo().join("schemas");
    let mut stale = Vec::new();
    for name in SchemaName::ALL {
        let path = dir.join(name.file_name());
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != name.render() {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "out of date: {}; regenerate with: cargo run -- schema --write schemas",
        stale.join(", ")
    );
}
