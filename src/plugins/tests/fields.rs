//! Valid manifests, and every rule of the fields: missing, wrong types, names and versions, unknown fields, duplicates, permissions, several errors at once.

use super::*;
use crate::plugins::manifest::Permission;

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
        let checked = check_plugin(&dir);
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
    let errors = broken(|m| m["permissions"] = json!(["internet"]));
    assert_errors(
        &errors,
        &[("/permissions/0", "unknown permission \"internet\"")],
    );
    // The message lists what is allowed.
    assert!(
        errors[0].message.contains("filesystem:read")
            && errors[0].message.contains("shell:exec")
            && errors[0].message.contains("network:HOST:PORT")
    );
}

#[test]
fn host_grants_that_do_not_parse_say_what_to_write() {
    assert_errors(
        &broken(|m| m["permissions"] = json!(["network:all", "network:2001:db8::1"])),
        &[
            ("/permissions/0", "\"all\" is not a full host name"),
            ("/permissions/1", "write an IPv6 address in brackets"),
        ],
    );
    assert_errors(
        &broken(|m| m["permissions"] = json!(["network", "network:api.example.com"])),
        &[("/permissions/1", "\"network\" already reaches every host")],
    );
    let (_sb, dir) =
        plugin_with(|m| m["permissions"] = json!(["network:api.example.com:443", "network:[::1]"]));
    assert!(crate::plugins::validate::check_plugin(&dir).is_ok());
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
        &[("/permissions/1", "must be a string (found a number)")],
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

#[test]
fn scoped_permissions_name_one_folder() {
    let sb = Sandbox::new();
    let mut m = manifest(NAME, TOOL);
    m["permissions"] = json!([
        "filesystem:read:~/Documents",
        "filesystem:write:/srv/site",
        "filesystem:read:~"
    ]);
    let dir = sb.write_plugin(NAME, &m, SCRIPT);
    let checked = check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
    assert_eq!(
        checked.manifest.permissions,
        [
            Permission::FilesystemReadIn("~/Documents".into()),
            Permission::FilesystemWriteIn("/srv/site".into()),
            Permission::FilesystemReadIn("~".into()),
        ]
    );
}

#[test]
fn scoped_permissions_that_do_not_name_one_folder() {
    for (bad, says) in [
        ("filesystem:read:Documents", "does not name a folder"),
        ("filesystem:write:", "does not name a folder"),
        ("filesystem:read:~bob/x", "does not name a folder"),
        ("filesystem:read:~/a/../b", "must not contain \"..\""),
        ("filesystem:write:~/notes/*.txt", "no globs"),
        ("filesystem:read:/", "every file"),
    ] {
        assert_errors(
            &broken(|m| m["permissions"] = json!([bad])),
            &[("/permissions/0", says)],
        );
    }
}

#[test]
fn an_mcp_server_needs_no_tools_and_may_have_a_prefix_and_arguments() {
    let sb = Sandbox::new();
    let mut m = manifest(NAME, TOOL);
    remove(&mut m, "tools");
    m["protocol"] = json!("mcp");
    m["tool_prefix"] = json!("demo_");
    m["args"] = json!(["--root", "/srv"]);
    let dir = sb.write_plugin(NAME, &m, SCRIPT);
    let checked = check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
    assert!(checked.manifest.tools.is_empty());
    assert_eq!(
        checked.manifest.worker_settings(),
        Some(crate::plugins::manifest::Persistent::default()),
        "an MCP server always runs as a worker"
    );
}

#[test]
fn an_mcp_server_does_not_declare_tools_and_a_prefix_needs_mcp() {
    assert_errors(
        &broken(|m| m["protocol"] = json!("mcp")),
        &[(
            "/tools",
            "an MCP server's tools come from the server itself",
        )],
    );
    assert_errors(
        &broken(|m| m["tool_prefix"] = json!("demo_")),
        &[("/tool_prefix", "only an MCP server's tools get a prefix")],
    );
    assert_errors(
        &broken(|m| {
            remove(m, "tools");
            m["protocol"] = json!("mcp");
            m["tool_prefix"] = json!("Demo-");
        }),
        &[("/tool_prefix", "\"Demo-\" is not allowed")],
    );
    assert_errors(
        &broken(|m| m["protocol"] = json!("grpc")),
        &[("/protocol", "")],
    );
}

#[test]
fn persistent_settings_are_bounded() {
    let sb = Sandbox::new();
    let mut m = manifest(NAME, TOOL);
    m["persistent"] = json!({});
    let dir = sb.write_plugin(NAME, &m, SCRIPT);
    let checked = check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
    let p = checked.manifest.persistent.unwrap();
    assert_eq!(
        (p.idle_timeout_secs, p.max_workers),
        (300, 1),
        "the defaults"
    );
    assert_errors(
        &broken(|m| m["persistent"] = json!({"max_workers": 0})),
        &[("/persistent/max_workers", "")],
    );
    assert_errors(
        &broken(|m| m["persistent"] = json!({"idle_timeout_secs": 0, "workers": 2})),
        &[
            ("/persistent/idle_timeout_secs", ""),
            ("/persistent/workers", "unknown field \"workers\""),
        ],
    );
}

/// An MCP server's names get the `tool_prefix` unless they carry it (a git
/// server's `git_status` stays `git_status` under the prefix `git_`), and
/// `source` takes what `plughost add` writes and nothing else.
#[test]
fn the_prefix_is_not_doubled_and_source_names_a_package() {
    let (_sb, dir) = plugin_with(|m| {
        m["protocol"] = json!("mcp");
        m.as_object_mut().unwrap().remove("tools");
        m["tool_prefix"] = json!("git_");
        m["source"] = json!("pypi:mcp-server-git==2026.1.14");
    });
    let checked = check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
    let m = &checked.manifest;
    assert_eq!(m.offered_name("git_status"), "git_status");
    assert_eq!(m.offered_name("status"), "git_status");
    assert_eq!(m.offered_name("gitlog"), "git_gitlog");
    for bad in ["pip:x", "npm:x", "pypi:x", "pypi:==1"] {
        let (_sb, dir) = plugin_with(|m| m["source"] = json!(bad));
        assert!(check_plugin(&dir).is_err(), "{bad} was accepted");
    }
}
