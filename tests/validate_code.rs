//! `plughost validate --with-code`: an SDK-based plugin's manifest checked
//! against the tools its code prints for `--manifest-tools`, through the real
//! binary.

use crate::util;

use std::path::Path;

use serde_json::{Value, json};
use util::{Sandbox, run, stdout};

fn validate(sandbox: &Sandbox, args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let mut cmd = sandbox.cmd();
    cmd.arg("validate").args(args).arg(dir);
    let out = run(cmd);
    (out.status.code(), stdout(&out))
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("plugin.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut m);
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

fn copy_example(sandbox: &Sandbox, name: &str) -> std::path::PathBuf {
    let dir = sandbox.plugins().join(name);
    util::copy_dir(&util::examples().join(name), &dir);
    dir
}

#[test]
fn in_sync_sdk_plugins_pass_and_drifted_ones_are_reported_by_tool_and_field() {
    let sandbox = Sandbox::new();
    let passwords = copy_example(&sandbox, "password-gen");
    let kv = copy_example(&sandbox, "kv-store");
    copy_example(&sandbox, "hello-world"); // bash: no SDK, not run

    let (code, out) = validate(&sandbox, &["--with-code"], &sandbox.plugins());
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("code     password-gen: plugin.json matches the tools in its code")
            && out.contains("code     kv-store: plugin.json matches"),
        "{out}"
    );
    assert!(!out.contains("hello-world:"), "{out}");

    edit_manifest(&passwords, |m| {
        m["tools"][0]["input_schema"]["properties"]["length"]["maximum"] = json!(64);
        m["tools"][0]["timeout_secs"] = json!(20);
    });
    edit_manifest(&kv, |m| {
        let tools = m["tools"].as_array_mut().unwrap();
        tools.retain(|t| t["name"] != "kv_delete");
        tools[0]["description"] = json!("Stores a value.");
        tools.push(json!({"name": "kv_clear", "description": "Clears.", "input_schema": {"type": "object"}}));
    });
    // Without --with-code the manifests are valid and no code runs.
    assert_eq!(validate(&sandbox, &[], &sandbox.plugins()).0, Some(0));

    let (code, out) = validate(&sandbox, &["--with-code"], &sandbox.plugins());
    assert_eq!(code, Some(1), "{out}");
    for line in [
        "invalid  password-gen: plugin.json differs from its code",
        "tool \"password_generate\": input_schema differs from the code's at /properties/length/maximum (plugin.json: 64, code: 128)",
        "tool \"password_generate\": timeout_secs differs from the code's (plugin.json: 20, code: 10)",
        "invalid  kv-store: plugin.json differs from its code",
        "tool \"kv_set\": description differs from the code's",
        "tool \"kv_clear\" is in plugin.json but not in the code",
        "tool \"kv_delete\" is in the code but not in plugin.json",
    ] {
        assert!(out.contains(line), "{line:?} in:\n{out}");
    }

    // One folder, as JSON.
    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "validate", "--with-code"])
        .arg(&passwords);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["code"][0]["plugin"], "password-gen");
    assert_eq!(report["code"][0]["errors"].as_array().unwrap().len(), 2);
}

/// Plain validate never runs plugin code; --with-code runs an SDK-based
/// plugin's entrypoint (a Rust one is recognized by its Cargo.toml), confined
/// as a plugin granted nothing, and one that fails is reported with its own
/// words.
#[test]
fn only_with_code_runs_the_entrypoint() {
    let sandbox = Sandbox::new();
    let marker = sandbox.root.path().join("ran");
    let m = util::manifest("rusty", "rusty_tool");
    let script = format!(
        "#!/bin/sh\ntouch '{}' 2>/dev/null\n[ \"$1\" = --manifest-tools ] || exit 3\necho '{}'\n",
        marker.display(),
        serde_json::to_string(&m["tools"]).unwrap()
    );
    let dir = sandbox.write_plugin("rusty", &m, &script);
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"rusty\"\n\n[dependencies]\nplughost-plugin = { path = \"/nowhere\" }\n",
    )
    .unwrap();

    assert_eq!(validate(&sandbox, &[], &dir).0, Some(0));
    assert!(!marker.exists(), "plain validate ran the plugin");
    let (code, out) = validate(&sandbox, &["--with-code"], &dir);
    assert_eq!(code, Some(0), "{out}");
    // It ran (it printed its tools) but could not write outside its folders.
    assert!(out.contains("code     rusty: plugin.json matches"), "{out}");
    if plughost::sandbox::SandboxSupport::here().filesystem {
        assert!(!marker.exists(), "--with-code ran the code unconfined");
    }

    // A plugin that cannot print its tools (here: a Python plugin whose SDK import fails).
    let m = util::manifest("broken-py", "broken_tool");
    let dir = sandbox.write_plugin(
        "broken-py",
        &m,
        "#!/bin/sh\necho 'ImportError: no module named plughost_plugin' >&2\nexit 1\n",
    );
    std::fs::write(dir.join("plughost_plugin.py"), "").unwrap();
    let (code, out) = validate(&sandbox, &["--with-code"], &dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("./main.sh --manifest-tools failed (exit status: 1): ImportError: no module named plughost_plugin"),
        "{out}"
    );
}

/// `--with-code` runs the entrypoint like any plugin process: on timeout its
/// whole process group is killed, a grandchild included.
#[test]
fn a_hanging_manifest_tools_run_is_killed_with_its_grandchildren() {
    let sandbox = Sandbox::new();
    let dir = sandbox.write_plugin(
        "hangs",
        &util::manifest("hangs", "hangs_tool"),
        "#!/bin/sh\nsleep 300 &\nsleep 300\n",
    );
    // What marks a folder as SDK-based: the Python SDK's file.
    std::fs::write(dir.join("plughost_plugin.py"), "# the SDK\n").unwrap();
    let mut cmd = sandbox.cmd();
    cmd.args(["--timeout", "1", "validate", "--with-code"])
        .arg(&dir);
    let started = std::time::Instant::now();
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("did not finish within 1s"),
        "{}",
        stdout(&out)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
    util::assert_no_processes_in(&dir);
}
