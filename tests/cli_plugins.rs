//! What the CLI prints about plugins: `list`, `validate` and `schema`, with
//! their exit codes and JSON shapes.

use crate::util;

use std::path::Path;
use std::process::Command;

use plughost::schemas::SchemaName;
use serde_json::{Value, json};
use util::{Sandbox, example_manifests, manifest, tool_names};

const SCRIPT: &str = "#!/bin/sh\ncat >/dev/null\necho '{\"result\":\"ok\"}'\n";

fn plughost() -> Command {
    let mut c = Command::new(crate::util::plughost());
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
    for field in ["name", "version", "description", "permissions"] {
        assert!(required.contains(&json!(field)), "{field} not required");
    }
    // An entrypoint, or a remote server's URL (which speaks MCP).
    assert_eq!(
        v["anyOf"],
        json!([{"required": ["entrypoint"]}, {"required": ["remote"]}])
    );
    assert_eq!(
        v["dependentSchemas"]["remote"]["properties"]["protocol"],
        json!({"const": "mcp"})
    );
    // `tools` is required unless the plugin is an MCP server.
    assert_eq!(v["else"]["required"], json!(["tools"]));
}

/// A `plugin.json` nobody may read is rejected by name. Root reads a mode-000
/// file anyway (`CAP_DAC_OVERRIDE`), so as root the binary runs with those
/// capabilities dropped from its bounding set (`setpriv`).
#[test]
fn an_unreadable_manifest_is_rejected_by_name() {
    let sandbox = Sandbox::new();
    sandbox.write_plugin("sealed", &manifest("sealed", "sealed_tool"), SCRIPT);
    let path = sandbox.plugins().join("sealed/plugin.json");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let root = util::is_root();
    let drop_caps = ["--bounding-set", "-dac_override,-dac_read_search"];
    if root
        && !util::prerequisite(
            "setpriv (util-linux), to run plughost as root without CAP_DAC_OVERRIDE",
            Command::new("setpriv")
                .args(drop_caps)
                .arg("true")
                .status()
                .is_ok_and(|s| s.success()),
        )
    {
        return;
    }
    let mut c = if root {
        let mut c = Command::new("setpriv");
        c.args(drop_caps).arg(crate::util::plughost());
        c
    } else {
        plughost()
    };
    c.arg("--plugins-dir")
        .arg(sandbox.plugins())
        .arg("--state-dir")
        .arg(sandbox.state())
        .arg("validate");
    let out = util::run(c);
    let text = util::stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", util::stderr(&out));
    assert!(
        text.contains("invalid  sealed")
            && text.contains("cannot open plugin.json: Permission denied"),
        "{text}"
    );
}
