//! Manifest validation, end to end: the bundled examples load, every broken
//! manifest is rejected with the right JSON pointer and words, hostile
//! `plugin.json` files fail fast, collisions resolve deterministically, the
//! committed schemas match the generated ones, and the CLI reports all of it.

mod util;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use plughost::plugins::catalog::Catalog;
use plughost::plugins::loader;
use plughost::plugins::manifest::MANIFEST_FILE;
use plughost::plugins::validate::{MAX_MANIFEST_BYTES, ManifestError, check_plugin};
use plughost::schemas::SchemaName;
use serde_json::{Value, json};
use util::{Sandbox, manifest, write_executable};

// ---------------------------------------------------------------- helpers

/// Name of the plugin (and its folder) in the single-plugin tests.
const NAME: &str = "demo";
/// Its one tool.
const TOOL: &str = "demo_tool";

const SCRIPT: &str = "#!/bin/sh\ncat >/dev/null\necho '{\"result\":\"ok\"}'\n";

/// Runs `f` on another thread and panics when it takes longer than `limit`:
/// a validator that blocks (on a FIFO, a huge file, a network fetch) fails
/// the test instead of hanging it.
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still running after {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the validator panicked"),
    }
}

/// The errors of a plugin folder that must be rejected, through both
/// `loader::load_folder` and `validate::check_plugin` (which must agree).
fn rejection(dir: &Path) -> Vec<ManifestError> {
    let owned = dir.to_path_buf();
    let (loaded, checked) = within(
        Duration::from_secs(5),
        &dir.display().to_string(),
        move || (loader::load_folder(&owned), check_plugin(&owned)),
    );
    let rejected = match loaded {
        Ok(p) => panic!("{} was accepted as plugin {:?}", dir.display(), p.name()),
        Err(r) => r,
    };
    let folder = dir.file_name().unwrap().to_string_lossy();
    assert_eq!(rejected.folder, folder);
    assert!(!rejected.errors.is_empty(), "rejected without a reason");
    let checked = checked.expect_err("check_plugin accepted what load_folder rejected");
    assert_eq!(
        checked, rejected.errors,
        "load_folder and check_plugin disagree"
    );
    for e in &rejected.errors {
        assert!(
            !e.message.trim().is_empty(),
            "empty message at {:?}",
            e.pointer
        );
    }
    rejected.errors
}

/// Asserts that `errors` are exactly these (pointer, message fragment) pairs,
/// in any order: each expected error is present and nothing else was reported.
#[track_caller]
fn assert_errors(errors: &[ManifestError], expected: &[(&str, &str)]) {
    let shown = || {
        errors
            .iter()
            .map(|e| format!("  {:?}: {}", e.pointer, e.message))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (pointer, fragment) in expected {
        assert!(
            errors
                .iter()
                .any(|e| e.pointer == *pointer && e.message.contains(fragment)),
            "expected an error at {pointer:?} containing {fragment:?}; got:\n{}",
            shown()
        );
    }
    assert_eq!(
        errors.len(),
        expected.len(),
        "expected exactly {} error(s); got:\n{}",
        expected.len(),
        shown()
    );
}

/// A fresh sandbox holding plugin `demo` built from `util::manifest` with `edit`
/// applied, and its folder.
fn plugin_with(edit: impl FnOnce(&mut Value)) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let mut m = manifest(NAME, TOOL);
    edit(&mut m);
    let dir = sb.write_plugin(NAME, &m, SCRIPT);
    (sb, dir)
}

/// The errors of `util::manifest` with one edit.
fn broken(edit: impl FnOnce(&mut Value)) -> Vec<ManifestError> {
    let (_sb, dir) = plugin_with(edit);
    rejection(&dir)
}

fn remove(m: &mut Value, field: &str) {
    m.as_object_mut()
        .unwrap()
        .remove(field)
        .expect("field present");
}

fn tool0(m: &mut Value) -> &mut Value {
    &mut m["tools"][0]
}

/// Renames `from` to `to` in the JSON object `v`.
fn rename(v: &mut Value, from: &str, to: &str) {
    let obj = v.as_object_mut().unwrap();
    let value = obj.remove(from).expect("field present");
    obj.insert(to.to_owned(), value);
}

/// A plugin folder `demo` whose `plugin.json` is written by `make` (not a valid
/// manifest), next to a valid entrypoint.
fn hostile(make: impl FnOnce(&Path)) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let dir = sb.plugins().join(NAME);
    std::fs::create_dir_all(&dir).unwrap();
    write_executable(&dir.join("main.sh"), SCRIPT);
    make(&dir.join(MANIFEST_FILE));
    (sb, dir)
}

/// The example plugins folder in the repository.
fn examples() -> PathBuf {
    util::repo().join("plugins-examples")
}

/// Each example folder with the `plugin.json` it holds, sorted by folder.
fn example_manifests() -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(examples()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().unwrap().is_dir() {
            continue;
        }
        let path = entry.path().join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        found.push((name, value));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        !found.is_empty(),
        "no example plugins in {}",
        examples().display()
    );
    found
}

fn tool_names(m: &Value) -> Vec<String> {
    m["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

// ---------------------------------------------------------------- valid plugins

#[test]
fn every_example_plugin_validates() {
    // Each folder through the validator first, so a broken example is reported
    // with the validator's own words (every folder at once).
    let folders = loader::plugin_folders(&examples()).unwrap();
    assert!(!folders.is_empty(), "no example plugins");
    let failures: Vec<String> = folders
        .iter()
        .filter_map(|f| loader::load_folder(&examples().join(f)).err())
        .map(|r| r.to_string())
        .collect();
    assert!(
        failures.is_empty(),
        "example plugins rejected:\n{}",
        failures.join("\n")
    );

    // Together they load without collisions, with the tools their manifests list.
    let catalog = loader::scan(&examples()).unwrap();
    assert_eq!(catalog.rejected().count(), 0);
    assert!(
        catalog.collisions().is_empty(),
        "{:?}",
        catalog.collisions()
    );
    let manifests = example_manifests();
    assert_eq!(catalog.plugins().count(), manifests.len());
    for (folder, m) in &manifests {
        let p = catalog.plugin(folder).expect("loaded");
        assert_eq!(p.name(), folder);
        let tools: Vec<&str> = p.tools.iter().map(|t| t.spec.name.as_str()).collect();
        assert_eq!(tools, tool_names(m), "tools of {folder}");
        for t in &tools {
            assert!(catalog.offers(folder, t), "{folder}/{t} not offered");
        }
    }
}

#[test]
fn minimal_manifest_is_valid() {
    let (_sb, dir) = plugin_with(|_| {});
    let checked = check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
    assert_eq!(checked.manifest.name, NAME);
    assert_eq!(
        checked.entrypoint,
        dir.canonicalize().unwrap().join("main.sh")
    );
    assert_eq!(checked.input_validators.len(), 1);
}

#[test]
fn manifest_with_every_optional_field_is_valid() {
    let (_sb, dir) = plugin_with(|m| {
        m["$schema"] = json!("../../schemas/plugin.schema.json");
        m["author"] = json!("Someone <someone@example.com>");
        m["env"] = json!(["API_KEY", "_X1"]);
        m["permissions"] = json!([
            "filesystem:read",
            "filesystem:write",
            "network",
            "shell:exec",
            "clipboard",
            "notifications"
        ]);
        m["version"] = json!("2.10.0-rc.1+build.5");
        let t = tool0(m);
        t["timeout_secs"] = json!(5);
        t["output_schema"] = json!({"type": "object"});
        // Longest allowed tool name.
        t["name"] = json!(format!("a{}", "_".repeat(63)));
    });
    let checked = check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
    assert_eq!(checked.manifest.permissions.len(), 6);
    assert!(checked.output_validators[0].is_some());
}

#[test]
fn entrypoint_in_a_subfolder_and_symlink_inside_the_folder_are_allowed() {
    let (_sb, dir) = plugin_with(|m| m["entrypoint"] = json!("bin/run"));
    std::fs::create_dir(dir.join("bin")).unwrap();
    symlink("../main.sh", dir.join("bin/run")).unwrap();
    let checked = check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
    assert_eq!(
        checked.entrypoint,
        dir.canonicalize().unwrap().join("main.sh")
    );
}

// ---------------------------------------------------------------- missing fields

#[test]
fn missing_name() {
    assert_errors(&broken(|m| remove(m, "name")), &[("/name", "is required")]);
}

#[test]
fn missing_version() {
    assert_errors(
        &broken(|m| remove(m, "version")),
        &[("/version", "is required")],
    );
}

#[test]
fn missing_description() {
    assert_errors(
        &broken(|m| remove(m, "description")),
        &[("/description", "is required")],
    );
}

#[test]
fn missing_entrypoint() {
    assert_errors(
        &broken(|m| remove(m, "entrypoint")),
        &[("/entrypoint", "is required")],
    );
}

#[test]
fn missing_permissions() {
    // `[]` is how a plugin says "nothing"; leaving the field out is an error.
    assert_errors(
        &broken(|m| remove(m, "permissions")),
        &[("/permissions", "is required")],
    );
}

#[test]
fn missing_tools() {
    assert_errors(
        &broken(|m| remove(m, "tools")),
        &[("/tools", "is required")],
    );
}

#[test]
fn missing_tool_fields() {
    assert_errors(
        &broken(|m| {
            let t = tool0(m).as_object_mut().unwrap();
            t.remove("description");
            t.remove("input_schema");
        }),
        &[
            ("/tools/0/description", "is required"),
            ("/tools/0/input_schema", "is required"),
        ],
    );
}

// ---------------------------------------------------------------- wrong types

#[test]
fn name_is_a_number() {
    assert_errors(
        &broken(|m| m["name"] = json!(42)),
        &[("/name", "must be a string (found a number)")],
    );
}

#[test]
fn tools_is_an_object() {
    assert_errors(
        &broken(|m| m["tools"] = json!({"demo_tool": {"description": "x"}})),
        &[("/tools", "must be an array (found an object)")],
    );
}

#[test]
fn permissions_is_a_string() {
    assert_errors(
        &broken(|m| m["permissions"] = json!("network")),
        &[("/permissions", "must be an array (found a string)")],
    );
}

#[test]
fn manifest_is_not_an_object() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, "[1, 2, 3]").unwrap());
    assert_errors(
        &rejection(&dir),
        &[("", "must be an object (found an array)")],
    );
}

// ---------------------------------------------------------------- names and versions

#[test]
fn plugin_name_with_uppercase() {
    assert_errors(
        &broken(|m| m["name"] = json!("Demo")),
        &[(
            "/name",
            "\"Demo\" is not allowed: use lowercase letters, digits and dashes",
        )],
    );
}

#[test]
fn plugin_name_with_leading_dash() {
    assert_errors(
        &broken(|m| m["name"] = json!("-demo")),
        &[(
            "/name",
            "\"-demo\" is not allowed: use lowercase letters, digits and dashes, starting with a letter or digit",
        )],
    );
}

#[test]
fn version_without_patch() {
    assert_errors(
        &broken(|m| m["version"] = json!("1.0")),
        &[(
            "/version",
            "\"1.0\" is not allowed: use a semantic version (like \"1.0.0\")",
        )],
    );
}

#[test]
fn version_with_v_prefix() {
    assert_errors(
        &broken(|m| m["version"] = json!("v1.0.0")),
        &[(
            "/version",
            "\"v1.0.0\" is not allowed: use a semantic version",
        )],
    );
}

#[test]
fn empty_description() {
    assert_errors(
        &broken(|m| m["description"] = json!("")),
        &[("/description", "must not be empty")],
    );
}

#[test]
fn empty_tools() {
    assert_errors(
        &broken(|m| m["tools"] = json!([])),
        &[("/tools", "must list at least one tool")],
    );
}

#[test]
fn tool_names_outside_mcps_characters() {
    for bad in ["demo tool", "demo/tool", "démo", "demo:tool"] {
        assert_errors(
            &broken(|m| tool0(m)["name"] = json!(bad)),
            &[(
                "/tools/0/name",
                &format!("\"{bad}\" is not allowed: use letters, digits, \"_\", \"-\" and \".\""),
            )],
        );
    }
}

#[test]
fn tool_names_keep_what_mcp_allows() {
    // Ported tools keep their names: capitals, dots, dashes, a leading digit.
    for good in ["DemoTool", "files.read", "get-weather", "1tool", "a"] {
        let sb = Sandbox::new();
        let mut m = manifest(NAME, TOOL);
        m["tools"][0]["name"] = json!(good);
        let dir = sb.write_plugin(NAME, &m, SCRIPT);
        let checked = plughost::plugins::validate::check_plugin(&dir);
        assert!(checked.is_ok(), "{good}: {:?}", checked.err());
    }
}

#[test]
fn tool_name_of_65_characters() {
    assert_errors(
        &broken(|m| tool0(m)["name"] = json!("a".repeat(65))),
        &[("/tools/0/name", "must be at most 64 characters")],
    );
}

#[test]
fn name_must_equal_the_folder() {
    let sb = Sandbox::new();
    let dir = sb.write_plugin("other-folder", &manifest(NAME, TOOL), SCRIPT);
    assert_errors(
        &rejection(&dir),
        &[(
            "/name",
            "\"demo\" must equal the folder's name \"other-folder\"",
        )],
    );
}

// ---------------------------------------------------------------- entrypoint

#[test]
fn entrypoint_escaping_by_dotdot() {
    let (sb, dir) = plugin_with(|m| m["entrypoint"] = json!("../outside.sh"));
    write_executable(&sb.plugins().join("outside.sh"), SCRIPT);
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "\"../outside.sh\" must stay inside the plugin folder (no \"..\")",
        )],
    );
}

#[test]
fn entrypoint_escaping_by_dotdot_that_comes_back_in() {
    // `../demo/main.sh` lands inside again, but `..` is refused outright.
    assert_errors(
        &broken(|m| m["entrypoint"] = json!("../demo/main.sh")),
        &[("/entrypoint", "must stay inside the plugin folder")],
    );
}

#[test]
fn entrypoint_escaping_by_symlink() {
    let (sb, dir) = plugin_with(|m| m["entrypoint"] = json!("run.sh"));
    let outside = sb.root.path().join("outside.sh");
    write_executable(&outside, SCRIPT);
    symlink(&outside, dir.join("run.sh")).unwrap();
    let errors = rejection(&dir);
    assert_errors(&errors, &[("/entrypoint", "\"run.sh\" resolves to ")]);
    assert!(
        errors[0]
            .message
            .contains("through a symlink, outside the plugin folder")
            && errors[0].message.contains("outside.sh"),
        "{}",
        errors[0].message
    );
}

#[test]
fn entrypoint_escaping_by_symlinked_subfolder() {
    let (sb, dir) = plugin_with(|m| m["entrypoint"] = json!("lib/main.sh"));
    let elsewhere = sb.root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    write_executable(&elsewhere.join("main.sh"), SCRIPT);
    symlink(&elsewhere, dir.join("lib")).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "through a symlink, outside the plugin folder",
        )],
    );
}

#[test]
fn absolute_entrypoint() {
    let (_sb, dir) = plugin_with(|_| {});
    let abs = dir.join("main.sh").display().to_string();
    let mut m = manifest(NAME, TOOL);
    m["entrypoint"] = json!(abs);
    std::fs::write(dir.join(MANIFEST_FILE), m.to_string()).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "must be a path relative to the plugin folder",
        )],
    );
}

#[test]
fn entrypoint_does_not_exist() {
    assert_errors(
        &broken(|m| m["entrypoint"] = json!("nope.sh")),
        &[(
            "/entrypoint",
            "\"nope.sh\" does not exist in the plugin folder",
        )],
    );
}

#[test]
fn entrypoint_is_a_dangling_symlink() {
    let (_sb, dir) = plugin_with(|m| m["entrypoint"] = json!("run.sh"));
    symlink("gone.sh", dir.join("run.sh")).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "\"run.sh\" does not exist in the plugin folder",
        )],
    );
}

#[test]
fn entrypoint_is_not_executable() {
    let (_sb, dir) = plugin_with(|_| {});
    std::fs::set_permissions(dir.join("main.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "\"main.sh\" is not executable; run: chmod +x main.sh",
        )],
    );
}

#[test]
fn entrypoint_is_a_folder() {
    let (_sb, dir) = plugin_with(|m| m["entrypoint"] = json!("bin"));
    std::fs::create_dir(dir.join("bin")).unwrap();
    assert_errors(
        &rejection(&dir),
        &[("/entrypoint", "\"bin\" is not a regular file")],
    );
}

#[test]
fn empty_entrypoint() {
    assert_errors(
        &broken(|m| m["entrypoint"] = json!("")),
        &[("/entrypoint", "must not be empty")],
    );
}

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

// ---------------------------------------------------------------- unknown fields

#[test]
fn unknown_top_level_field_suggests_the_known_one() {
    assert_errors(
        &broken(|m| rename(m, "permissions", "permisions")),
        &[
            (
                "/permisions",
                "unknown field \"permisions\"; did you mean \"permissions\"?",
            ),
            ("/permissions", "is required"),
        ],
    );
}

#[test]
fn unknown_top_level_field_without_a_near_name() {
    let errors = broken(|m| m["homepage"] = json!("https://example.com"));
    assert_errors(&errors, &[("/homepage", "unknown field \"homepage\"")]);
    assert!(
        !errors[0].message.contains("did you mean"),
        "{}",
        errors[0].message
    );
}

#[test]
fn unknown_tool_field_suggests_the_known_one() {
    assert_errors(
        &broken(|m| rename(tool0(m), "input_schema", "input_schem")),
        &[
            (
                "/tools/0/input_schem",
                "unknown field \"input_schem\"; did you mean \"input_schema\"?",
            ),
            ("/tools/0/input_schema", "is required"),
        ],
    );
}

#[test]
fn unknown_field_with_a_slash_is_escaped_in_the_pointer() {
    assert_errors(
        &broken(|m| m["a/b~c"] = json!(1)),
        &[("/a~1b~0c", "unknown field \"a/b~c\"")],
    );
}

// ---------------------------------------------------------------- duplicates and permissions

#[test]
fn duplicate_tool_name() {
    assert_errors(
        &broken(|m| {
            let t = m["tools"][0].clone();
            m["tools"].as_array_mut().unwrap().push(t);
        }),
        &[(
            "/tools/1/name",
            "tool \"demo_tool\" is defined twice; tool names must be unique",
        )],
    );
}

#[test]
fn duplicate_permission() {
    assert_errors(
        &broken(|m| m["permissions"] = json!(["network", "clipboard", "network"])),
        &[("/permissions/2", "\"network\" is listed twice")],
    );
}

#[test]
fn duplicate_env_var() {
    assert_errors(
        &broken(|m| m["env"] = json!(["API_KEY", "API_KEY"])),
        &[("/env/1", "\"API_KEY\" is listed twice")],
    );
}

#[test]
fn unknown_permission() {
    let errors = broken(|m| m["permissions"] = json!(["network:all"]));
    assert_errors(
        &errors,
        &[("/permissions/0", "unknown permission \"network:all\"")],
    );
    // The message lists what is allowed.
    assert!(
        errors[0].message.contains("filesystem:read") && errors[0].message.contains("shell:exec")
    );
}

#[test]
fn unknown_permission_with_a_typo_suggests_the_known_one() {
    assert_errors(
        &broken(|m| m["permissions"] = json!(["clipbaord"])),
        &[(
            "/permissions/0",
            "unknown permission \"clipbaord\"; did you mean \"clipboard\"?",
        )],
    );
}

#[test]
fn unknown_permission_filesystem_exec() {
    assert_errors(
        &broken(|m| m["permissions"] = json!(["filesystem:exec"])),
        &[("/permissions/0", "unknown permission \"filesystem:exec\"")],
    );
}

#[test]
fn permission_that_is_not_a_string() {
    assert_errors(
        &broken(|m| m["permissions"] = json!(["network", 7])),
        &[(
            "/permissions/1",
            "must be a string, one of: filesystem:read, filesystem:write, network, shell:exec, clipboard, notifications (found a number)",
        )],
    );
}

#[test]
fn bad_env_var_name() {
    assert_errors(
        &broken(|m| m["env"] = json!(["API-KEY"])),
        &[(
            "/env/0",
            "\"API-KEY\" is not allowed: use an environment variable name",
        )],
    );
}

// ---------------------------------------------------------------- several at once

#[test]
fn several_errors_are_all_reported() {
    let errors = broken(|m| {
        m["version"] = json!("1.0");
        m["colour"] = json!("blue");
        remove(m, "description");
    });
    assert_errors(
        &errors,
        &[
            ("/version", "use a semantic version"),
            ("/colour", "unknown field \"colour\""),
            ("/description", "is required"),
        ],
    );
}

#[test]
fn structural_and_entrypoint_errors_are_reported_together() {
    let (_sb, dir) = plugin_with(|m| {
        m["version"] = json!("one");
        m["entrypoint"] = json!("missing.sh");
    });
    assert_errors(
        &rejection(&dir),
        &[
            ("/version", "use a semantic version"),
            ("/entrypoint", "\"missing.sh\" does not exist"),
        ],
    );
}

#[test]
fn semantic_errors_are_all_reported() {
    let sb = Sandbox::new();
    let mut m = manifest(NAME, TOOL);
    m["permissions"] = json!(["network", "network"]);
    m["tools"][0]["input_schema"] = json!({"type": "array"});
    let t = m["tools"][0].clone();
    m["tools"].as_array_mut().unwrap().push(t);
    m["tools"][1]["input_schema"] = json!({"type": "object"});
    let dir = sb.write_plugin("renamed", &m, SCRIPT);
    std::fs::set_permissions(dir.join("main.sh"), std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_errors(
        &rejection(&dir),
        &[
            ("/name", "must equal the folder's name \"renamed\""),
            ("/entrypoint", "is not executable"),
            ("/permissions/1", "listed twice"),
            ("/tools/0/input_schema", "type must be \"object\""),
            ("/tools/1/name", "defined twice"),
        ],
    );
}

// ---------------------------------------------------------------- hostile folders

#[test]
fn huge_sparse_manifest_is_refused_without_reading_it() {
    let (_sb, dir) = hostile(|p| {
        let f = std::fs::File::create(p).unwrap();
        f.set_len(50 * 1024 * 1024).unwrap();
    });
    assert_errors(
        &rejection(&dir),
        &[(
            "",
            &format!("plugin.json is 52428800 bytes; the limit is {MAX_MANIFEST_BYTES} bytes"),
        )],
    );
}

#[test]
fn manifest_one_byte_over_the_limit_is_refused() {
    let (_sb, dir) = hostile(|p| {
        let mut text = manifest(NAME, TOOL).to_string().into_bytes();
        text.resize(MAX_MANIFEST_BYTES as usize + 1, b' ');
        std::fs::write(p, text).unwrap();
    });
    assert_errors(&rejection(&dir), &[("", "the limit is")]);
}

#[test]
fn manifest_exactly_at_the_limit_is_accepted() {
    let (_sb, dir) = hostile(|p| {
        let mut text = manifest(NAME, TOOL).to_string().into_bytes();
        text.resize(MAX_MANIFEST_BYTES as usize, b' ');
        std::fs::write(p, text).unwrap();
    });
    check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
}

#[test]
fn deeply_nested_json_is_an_error_not_a_crash() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, "[".repeat(100_000)).unwrap());
    assert_errors(
        &rejection(&dir),
        &[(
            "",
            "plugin.json is not valid JSON: recursion limit exceeded",
        )],
    );
}

#[test]
fn deeply_nested_input_schema_within_the_size_limit() {
    let (_sb, dir) = hostile(|p| {
        let mut m = manifest(NAME, TOOL).to_string();
        let deep = format!(
            "{}{}",
            "{\"not\":".repeat(5000),
            "{}".to_owned() + &"}".repeat(5000)
        );
        m = m.replace(
            "\"properties\":{}",
            &format!("\"properties\":{{\"a\":{deep}}}"),
        );
        std::fs::write(p, m).unwrap();
    });
    assert_errors(&rejection(&dir), &[("", "recursion limit exceeded")]);
}

#[test]
fn invalid_utf8_is_refused() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, b"{\"name\": \"d\xffmo\"}").unwrap());
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is not valid UTF-8 (at byte 11)")],
    );
}

#[test]
fn invalid_json_reports_line_and_column() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, "{\n  \"name\": \"demo\",\n}").unwrap());
    assert_errors(
        &rejection(&dir),
        &[(
            "",
            "plugin.json is not valid JSON: trailing comma at line 3 column 1",
        )],
    );
}

#[test]
fn empty_manifest_file() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, "").unwrap());
    assert_errors(&rejection(&dir), &[("", "plugin.json is not valid JSON")]);
}

#[test]
fn fifo_manifest_does_not_hang() {
    let (_sb, dir) = hostile(|p| {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(
            unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
            0,
            "mkfifo failed"
        );
    });
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is not a regular file")],
    );
}

#[test]
fn unreadable_manifest() {
    if is_root() {
        // Root reads a mode-000 file anyway (CAP_DAC_OVERRIDE): nothing to test here.
        eprintln!("skipped: running as root, chmod 000 does not stop reading");
        return;
    }
    let (_sb, dir) = hostile(|p| {
        std::fs::write(p, manifest(NAME, TOOL).to_string()).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000)).unwrap();
    });
    assert_errors(
        &rejection(&dir),
        &[("", "cannot open plugin.json: Permission denied")],
    );
}

#[test]
fn manifest_is_a_directory() {
    let (_sb, dir) = hostile(|p| std::fs::create_dir(p).unwrap());
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is not a regular file")],
    );
}

#[test]
fn manifest_is_a_symlink() {
    let (sb, dir) = hostile(|_| {});
    // The target is a perfectly valid manifest; the link itself is refused.
    let target = sb.root.path().join("real.json");
    std::fs::write(&target, manifest(NAME, TOOL).to_string()).unwrap();
    symlink(&target, dir.join(MANIFEST_FILE)).unwrap();
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is a symlink; make it a regular file")],
    );
}

#[test]
fn manifest_is_a_symlink_to_an_endless_device() {
    let (_sb, dir) = hostile(|p| symlink("/dev/zero", p).unwrap());
    assert_errors(&rejection(&dir), &[("", "plugin.json is a symlink")]);
}

#[test]
fn folder_without_a_manifest() {
    let (_sb, dir) = hostile(|_| {});
    assert_errors(&rejection(&dir), &[("", "no plugin.json in this folder")]);
}

// ---------------------------------------------------------------- loader and catalog

/// A plugins folder with `aaa` and `zzz` both offering `same_tool`, created in `order`.
fn colliding(order: [&str; 2]) -> Sandbox {
    let sb = Sandbox::new();
    for name in order {
        let mut m = manifest(name, "same_tool");
        let own = json!({
            "name": format!("{name}_own"),
            "description": "Only this plugin has it.",
            "input_schema": {"type": "object"}
        });
        m["tools"].as_array_mut().unwrap().push(own);
        sb.write_plugin(name, &m, SCRIPT);
    }
    sb
}

fn assert_aaa_wins(catalog: &Catalog) {
    let winner = catalog.tool("same_tool").expect("same_tool is offered");
    assert_eq!(winner.plugin.name(), "aaa");
    assert_eq!(catalog.collisions().len(), 1, "{:?}", catalog.collisions());
    let c = &catalog.collisions()[0];
    assert_eq!(
        (c.tool.as_str(), c.kept_by.as_str(), c.skipped_in.as_str()),
        ("same_tool", "aaa", "zzz")
    );
    let text = c.to_string();
    assert!(
        text.contains("\"aaa\"") && text.contains("\"zzz\"") && text.contains("same_tool"),
        "{text}"
    );
    // The loser stays loaded and keeps its other tools.
    assert!(catalog.plugin("zzz").is_some(), "zzz was unloaded");
    assert_eq!(catalog.tool("zzz_own").unwrap().plugin.name(), "zzz");
    assert_eq!(catalog.tool("aaa_own").unwrap().plugin.name(), "aaa");
    assert!(catalog.offers("aaa", "same_tool"));
    assert!(!catalog.offers("zzz", "same_tool"));
    assert_eq!(catalog.rejected().count(), 0);
}

#[test]
fn collisions_resolve_the_same_whatever_the_creation_order() {
    for order in [["aaa", "zzz"], ["zzz", "aaa"]] {
        let sb = colliding(order);
        let catalog = loader::scan(&sb.plugins()).unwrap();
        assert_aaa_wins(&catalog);
    }
}

#[test]
fn collisions_resolve_the_same_whatever_the_reload_order() {
    let sb = colliding(["aaa", "zzz"]);
    let load = |n: &str| (n.to_owned(), loader::load_folder(&sb.plugins().join(n)));
    // zzz alone first, then aaa arrives in a reload: aaa still wins.
    let only_zzz = Catalog::new([load("zzz")]);
    assert_eq!(only_zzz.tool("same_tool").unwrap().plugin.name(), "zzz");
    let both = only_zzz.with_folder("aaa", Some(load("aaa").1));
    assert_aaa_wins(&both);
    // aaa removed again: zzz gets its tool back.
    let without = both.with_folder("aaa", None);
    assert_eq!(without.tool("same_tool").unwrap().plugin.name(), "zzz");
    assert!(without.collisions().is_empty());
}

#[test]
fn scan_skips_dot_folders_and_loose_files() {
    let sb = Sandbox::new();
    sb.write_plugin("good", &manifest("good", "good_tool"), SCRIPT);
    // A hidden folder with a broken manifest: never looked at.
    let hidden = sb.plugins().join(".hidden");
    std::fs::create_dir(&hidden).unwrap();
    std::fs::write(hidden.join(MANIFEST_FILE), "not json").unwrap();
    std::fs::create_dir(sb.plugins().join(".git")).unwrap();
    std::fs::write(sb.plugins().join("README.md"), "notes").unwrap();
    std::fs::write(sb.plugins().join(MANIFEST_FILE), "{}").unwrap();
    std::fs::write(sb.plugins().join(".DS_Store"), "junk").unwrap();

    assert_eq!(
        loader::plugin_folders(&sb.plugins()).unwrap(),
        vec!["good".to_owned()]
    );
    let catalog = loader::scan(&sb.plugins()).unwrap();
    let names: Vec<&str> = catalog.plugins().map(|p| p.name()).collect();
    assert_eq!(names, ["good"]);
    assert_eq!(
        catalog.rejected().count(),
        0,
        "{:?}",
        catalog.rejected().collect::<Vec<_>>()
    );
    assert!(catalog.tool("good_tool").is_some());
}

#[test]
fn a_broken_plugin_does_not_stop_the_others() {
    let sb = Sandbox::new();
    sb.write_plugin("good", &manifest("good", "good_tool"), SCRIPT);
    let mut m = manifest("bad", "bad_tool");
    m["version"] = json!("1.0");
    sb.write_plugin("bad", &m, SCRIPT);
    let catalog = loader::scan(&sb.plugins()).unwrap();
    assert!(catalog.plugin("good").is_some());
    let r = catalog.rejected_folder("bad").expect("bad is rejected");
    assert_errors(&r.errors, &[("/version", "use a semantic version")]);
    assert!(
        r.to_string()
            .starts_with("bad/plugin.json: /version: \"1.0\" is not allowed"),
        "{r}"
    );
    assert!(catalog.tool("bad_tool").is_none());
}

// ---------------------------------------------------------------- schemas

#[test]
fn committed_schemas_match_the_generated_ones() {
    let dir = util::repo().join("schemas");
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

// ---------------------------------------------------------------- CLI

fn plughost() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plughost"));
    c.env_remove("PLUGHOST_PLUGINS_DIR")
        .env_remove("PLUGHOST_STATE_DIR");
    c
}

#[track_caller]
fn json_stdout(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            util::stdout(o),
            util::stderr(o)
        )
    })
}

#[test]
fn cli_list_shows_the_examples_and_their_tools() {
    let sb = Sandbox::new();
    let o = util::run({
        let mut c = plughost();
        c.current_dir(util::repo())
            .args(["--plugins-dir", "plugins-examples", "--state-dir"])
            .arg(sb.state())
            .arg("list");
        c
    });
    let out = util::stdout(&o);
    assert!(
        o.status.success(),
        "exit {:?}\n{out}\n{}",
        o.status,
        util::stderr(&o)
    );
    let manifests = example_manifests();
    let header = out.lines().next().unwrap_or_default();
    assert!(
        header.ends_with(&format!(
            "/plugins-examples: {} plugins, 0 rejected",
            manifests.len()
        )),
        "{out}"
    );
    for (folder, m) in &manifests {
        assert!(
            out.contains(&format!("\n{folder} {}", m["version"].as_str().unwrap())),
            "{folder} missing:\n{out}"
        );
        for tool in tool_names(m) {
            assert!(
                out.contains(&format!("  - {tool}  ")),
                "tool {tool} of {folder} missing:\n{out}"
            );
        }
    }
    assert!(!out.contains("rejected:"), "{out}");
}

#[test]
fn cli_json_list_has_plugins_rejected_and_collisions() {
    let sb = Sandbox::new().with_examples();
    let o = util::run({
        let mut c = sb.cmd();
        c.args(["--json", "list"]);
        c
    });
    assert!(o.status.success(), "{}", util::stderr(&o));
    let v = json_stdout(&o);
    let plugins = v["plugins"].as_array().expect("plugins is an array");
    assert!(
        v["rejected"]
            .as_array()
            .expect("rejected is an array")
            .is_empty(),
        "{v:#}"
    );
    assert!(
        v["collisions"]
            .as_array()
            .expect("collisions is an array")
            .is_empty(),
        "{v:#}"
    );
    let names: Vec<&str> = plugins
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = example_manifests().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, expected);
    for p in plugins {
        let tools = p["tools"].as_array().unwrap();
        assert!(!tools.is_empty());
        assert!(tools.iter().all(|t| t["offered"] == json!(true)), "{p:#}");
    }
}

#[test]
fn cli_list_reports_a_broken_plugin_beside_the_examples() {
    let sb = Sandbox::new().with_examples();
    let mut m = manifest("broken", "broken_tool");
    m["permisions"] = json!([]);
    sb.write_plugin("broken", &m, SCRIPT);

    let o = util::run({
        let mut c = sb.cmd();
        c.args(["--json", "list"]);
        c
    });
    assert!(o.status.success(), "{}", util::stderr(&o));
    let v = json_stdout(&o);
    let rejected = v["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 1, "{v:#}");
    assert_eq!(rejected[0]["folder"], "broken");
    let errors = rejected[0]["errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e["pointer"] == "/permisions"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("did you mean \"permissions\"?")),
        "{v:#}"
    );
    let loaded = v["plugins"].as_array().unwrap().len();
    assert_eq!(loaded, example_manifests().len(), "the examples still load");

    // The text listing says the same in words.
    let o = util::run({
        let mut c = sb.cmd();
        c.arg("list");
        c
    });
    let out = util::stdout(&o);
    assert!(o.status.success());
    assert!(
        out.contains(&format!("{loaded} plugins, 1 rejected")),
        "{out}"
    );
    assert!(
        out.contains("rejected:\n  broken/plugin.json: /permisions: unknown field \"permisions\"; did you mean \"permissions\"?"),
        "{out}"
    );
}

#[test]
fn cli_validate_exit_codes() {
    let sb = Sandbox::new();
    let good = sb.write_plugin("good", &manifest("good", "good_tool"), SCRIPT);
    let mut m = manifest("bad", "bad_tool");
    m["version"] = json!("v1");
    let bad = sb.write_plugin("bad", &m, SCRIPT);
    let validate = |dir: &Path| {
        util::run({
            let mut c = sb.cmd();
            c.arg("validate").arg(dir);
            c
        })
    };

    let o = validate(&good);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&o),
        util::stderr(&o)
    );
    assert!(
        util::stdout(&o).contains("ok       good 1.0.0 (1 tool)"),
        "{}",
        util::stdout(&o)
    );

    let o = validate(&bad);
    let out = util::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("invalid  bad"), "{out}");
    assert!(
        out.contains("bad/plugin.json: /version: \"v1\" is not allowed: use a semantic version"),
        "{out}"
    );

    // The whole plugins folder: one broken plugin fails it, the good one is still ok.
    let o = validate(&sb.plugins());
    let out = util::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("ok       good") && out.contains("invalid  bad"),
        "{out}"
    );

    // The examples, copied, all pass.
    let examples_only = Sandbox::new().with_examples();
    let o = validate(&examples_only.plugins());
    assert_eq!(o.status.code(), Some(0), "{}", util::stdout(&o));
}

#[test]
fn cli_validate_json_report() {
    let sb = Sandbox::new();
    let mut m = manifest("bad", "bad_tool");
    m["tools"][0]["input_schema"] = json!({"type": "string"});
    let bad = sb.write_plugin("bad", &m, SCRIPT);
    let o = util::run({
        let mut c = sb.cmd();
        c.args(["--json", "validate"]).arg(&bad);
        c
    });
    assert_eq!(o.status.code(), Some(1));
    let v = json_stdout(&o);
    assert_eq!(v["ok"], false);
    let e = &v["report"]["rejected"][0]["errors"][0];
    assert_eq!(e["pointer"], "/tools/0/input_schema", "{v:#}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("type must be \"object\""),
        "{v:#}"
    );
}

#[test]
fn cli_schema_manifest_prints_the_schema() {
    let o = util::run({
        let mut c = plughost();
        c.args(["schema", "manifest"]);
        c
    });
    assert!(o.status.success(), "{}", util::stderr(&o));
    let v = json_stdout(&o);
    assert_eq!(v, SchemaName::Manifest.generate());
    assert_eq!(v["additionalProperties"], false);
    let required = v["required"].as_array().unwrap();
    for field in [
        "name",
        "version",
        "description",
        "entrypoint",
        "permissions",
    ] {
        assert!(required.contains(&json!(field)), "{field} not required");
    }
    // `tools` is required unless the plugin is an MCP server.
    assert_eq!(v["else"]["required"], json!(["tools"]));
}
