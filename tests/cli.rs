//! `plughost call` through the real binary: exit codes, output, stdin input,
//! and every bundled example answering as documented.

mod util;

use std::io::Write;
use std::process::Stdio;

use serde_json::{Value, json};
use util::{Sandbox, run, scaffold, stderr, stdout};

fn call(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut cmd = sandbox.cmd();
    cmd.arg("call").args(args);
    run(cmd)
}

#[test]
fn exit_codes_are_0_success_1_tool_error_2_host_error() {
    let sandbox = Sandbox::new().with_fixtures(&[
        "slow-ok",
        "exit-error-body",
        "odd-results",
        "slow-sleeper",
    ]);
    let sandbox_plugins = sandbox.plugins();

    let ok = call(&sandbox, &["slow_ok"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert_eq!(stdout(&ok), "slow ok\n");

    let mut m = util::manifest("says-no", "says_no");
    m["description"] = json!("Always reports a tool-level error.");
    sandbox.write_plugin(
        "says-no",
        &m,
        "#!/bin/sh\ncat >/dev/null\necho '{\"result\":\"no such record\",\"is_error\":true}'\n",
    );
    let tool_error = call(&sandbox, &["says_no"]);
    assert_eq!(tool_error.status.code(), Some(1));
    assert_eq!(stdout(&tool_error), "no such record\n");

    let host_error = call(&sandbox, &["exit_error_body"]);
    assert_eq!(host_error.status.code(), Some(2));
    assert!(stdout(&host_error).is_empty());
    assert!(
        stderr(&host_error).starts_with("error: failed: "),
        "{}",
        stderr(&host_error)
    );

    let mut cmd = sandbox.cmd();
    cmd.args(["--timeout", "0.5", "call", "slow_sleep"]);
    let timeout = run(cmd);
    assert_eq!(timeout.status.code(), Some(2));
    assert!(
        stderr(&timeout).contains("error: timeout:"),
        "{}",
        stderr(&timeout)
    );
    util::assert_no_processes_in(&sandbox_plugins.join("slow-sleeper"));

    let missing = call(&sandbox, &["slow_okk"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("not_found")
            && stderr(&missing).contains("did you mean \"slow_ok\"")
    );

    let bad_json = call(&sandbox, &["slow_ok", "{not json"]);
    assert_eq!(bad_json.status.code(), Some(2));
    assert!(
        stderr(&bad_json).contains("not valid JSON"),
        "{}",
        stderr(&bad_json)
    );
}

#[test]
fn json_prints_the_whole_outcome_or_the_error() {
    let sandbox = Sandbox::new().with_fixtures(&["odd-results", "exit-no-body"]);
    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "call", "structured_attachments"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"], "see image");
    assert_eq!(v["is_error"], false);
    assert_eq!(v["structured"], json!({"n": 1}));
    assert_eq!(v["attachments"][0]["media_type"], "image");
    assert_eq!(v["exit_code"], 0);
    assert!(v["duration_ms"].as_f64().unwrap() > 0.0);
    assert!(v.get("stderr_tail").is_some());

    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "call", "exit_no_body"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "failed");
    assert!(
        v["error"]["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("something broke")
    );
}

#[test]
fn input_can_come_from_stdin() {
    let sandbox = Sandbox::new().with_fixtures(&["echo-request"]);
    let mut approve = sandbox.cmd();
    approve.args(["approve", "echo-request", "--yes"]);
    assert_eq!(run(approve).status.code(), Some(0));
    let mut cmd = sandbox.cmd();
    cmd.args(["call", "echo_request", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"name": "from stdin"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let request: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(request["input"], json!({"name": "from stdin"}));
    assert_eq!(request["context"]["source"], "cli");
}

/// Every bundled example answers through `plughost call` as its README says.
#[test]
fn every_example_answers_through_plughost_call() {
    let sandbox = Sandbox::new().with_examples();
    let ok = |tool: &str, input: Value| -> String {
        let out = call(&sandbox, &[tool, &input.to_string()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{tool}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    };
    assert_eq!(
        ok("hello_greet", json!({"name": "Alice"})),
        "Hello, Alice!\n"
    );
    assert_eq!(
        ok(
            "hello_greet",
            json!({"name": "O'Brien \"the\" \\ $(rm -rf /) ünï"})
        ),
        "Hello, O'Brien \"the\" \\ $(rm -rf /) ünï!\n"
    );
    assert!(ok("system_uptime", json!({})).contains("up"));

    let passwords = ok("password_generate", json!({"length": 24, "count": 3}));
    let lines: Vec<&str> = passwords.lines().collect();
    assert_eq!(lines.len(), 3, "{passwords}");
    assert!(lines.iter().all(|p| p.chars().count() == 24), "{passwords}");

    ok("kv_set", json!({"key": "colour", "value": "teal"}));
    assert!(ok("kv_get", json!({"key": "colour"})).contains("teal"));
    assert!(ok("kv_list", json!({})).contains("colour"));
    ok("kv_delete", json!({"key": "colour"}));
    let missing = call(&sandbox, &["kv_get", r#"{"key":"colour"}"#]);
    assert_eq!(
        missing.status.code(),
        Some(1),
        "a missing key is the tool's own error"
    );

    ok(
        "note_create",
        json!({"title": "../../etc/passwd", "body": "Buy milk"}),
    );
    ok(
        "note_create",
        json!({"title": "Work", "body": "Ship plughost"}),
    );
    assert!(ok("note_search", json!({"query": "MILK"})).contains("Buy milk"));
    let list = ok("note_list", json!({}));
    assert!(
        list.contains("Work") && list.contains("../../etc/passwd"),
        "{list}"
    );
    let mut cmd = sandbox.cmd();
    cmd.args([
        "--json",
        "call",
        "swatch_make",
        r##"{"color":"#3366CC","size":8}"##,
    ]);
    let swatch: Value = serde_json::from_slice(&run(cmd).stdout).unwrap();
    assert_eq!(
        swatch["structured"],
        json!({"rgb": [51, 102, 204], "size": 8})
    );
    let png = std::fs::read(swatch["attachments"][0]["path"].as_str().unwrap()).unwrap();
    assert!(
        png.starts_with(b"\x89PNG"),
        "the attachment is the PNG the plugin wrote"
    );

    let notes = sandbox.state().join("data/note-manager/notes");
    assert!(notes.is_dir(), "notes live in the plugin's data folder");
    assert!(!sandbox.root.path().join("etc").exists());
}

/// `plughost new` writes a plugin that validates, runs by hand, and answers
/// through plughost, in every language.
#[test]
fn scaffolded_plugins_validate_run_by_hand_and_answer() {
    let sandbox = Sandbox::new();
    for lang in ["bash", "python", "node"] {
        let name = format!("fresh-{lang}");
        let tool = format!("fresh_{lang}_echo");
        let mut cmd = sandbox.cmd();
        cmd.args(["new", &name, "--lang", lang]);
        let out = run(cmd);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let dir = sandbox.plugins().join(&name);

        let mut cmd = sandbox.cmd();
        cmd.arg("validate").arg(&dir);
        assert_eq!(run(cmd).status.code(), Some(0), "{lang} validates");

        let entry = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("main.")
            })
            .unwrap();
        let mut by_hand = std::process::Command::new(&entry);
        by_hand
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = by_hand.spawn().unwrap();
        let request = json!({"tool": tool, "input": {"text": ""}, "context": {}});
        child
            .stdin
            .take()
            .unwrap()
            .write_all(request.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            reply["is_error"], true,
            "{lang}: an empty text is the tool's own error"
        );

        let blank = call(&sandbox, &[&tool, r#"{"text":"   "}"#]);
        assert_eq!(
            blank.status.code(),
            Some(1),
            "{lang}: blank text is the tool's own error"
        );
        let out = call(&sandbox, &[&tool, r#"{"text":"hi \"you\"","shout":true}"#]);
        assert_eq!(out.status.code(), Some(0), "{lang}: {}", stderr(&out));
        assert_eq!(stdout(&out), "HI \"YOU\"\n");
    }
    let mut cmd = sandbox.cmd();
    cmd.args(["new", "Bad_Name"]);
    assert_eq!(run(cmd).status.code(), Some(2));
    let long = "a".repeat(64);
    let mut cmd = sandbox.cmd();
    cmd.args(["new", &long]);
    assert_eq!(run(cmd).status.code(), Some(0));
    let mut cmd = sandbox.cmd();
    cmd.arg("validate").arg(sandbox.plugins().join(&long));
    assert_eq!(
        run(cmd).status.code(),
        Some(0),
        "a 64-character name still gives a valid tool name"
    );
}

/// SIGINT, SIGTERM or SIGHUP to `plughost call` kill the plugin's process tree
/// (it runs in its own process group, so the signal alone never reaches it).
#[test]
fn a_signal_to_plughost_kills_the_plugin_too() {
    for (signal, code) in [
        (libc::SIGTERM, 143),
        (libc::SIGINT, 130),
        (libc::SIGHUP, 129),
    ] {
        let sandbox = Sandbox::new().with_fixtures(&["many-children"]);
        let dir = sandbox.plugins().join("many-children");
        let mut cmd = sandbox.cmd();
        cmd.args(["call", "many_children"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        util::block_until_processes(&dir, 50);
        // SAFETY: kill takes plain integers; the pid is our own child's.
        unsafe { libc::kill(child.id() as i32, signal) };
        assert_eq!(child.wait().unwrap().code(), Some(code));
        util::assert_no_processes_in(&dir);
    }
}

/// Each plugin folder must stand alone, so the examples carry copies of the
/// SDK files (the scaffold embeds them from `sdk/`): every copy must stay
/// identical to its original.
#[test]
fn the_sdk_copies_in_the_examples_stay_identical() {
    let read = |p: &str| std::fs::read_to_string(util::repo().join(p)).unwrap();
    let copies = [
        ("sdk/bash/plughost_json.sh", "hello-world/json.sh"),
        ("sdk/bash/plughost_json.sh", "system-uptime/json.sh"),
        (
            "sdk/python/plughost_plugin.py",
            "password-gen/plughost_plugin.py",
        ),
        (
            "sdk/python/plughost_plugin.py",
            "note-manager/plughost_plugin.py",
        ),
        (
            "sdk/python/plughost_plugin.py",
            "color-swatch/plughost_plugin.py",
        ),
        (
            "sdk/node/plughost_plugin.mjs",
            "kv-store/plughost_plugin.mjs",
        ),
        (
            "sdk/node/plughost_plugin.d.ts",
            "kv-store/plughost_plugin.d.ts",
        ),
    ];
    for (original, copy) in copies {
        assert!(
            read(&format!("plugins-examples/{copy}")) == read(original),
            "plugins-examples/{copy} differs from {original}: copy it again"
        );
    }
    // Every SDK file in an example is in the list above.
    for (folder, _) in util::example_manifests() {
        for sdk_file in ["json.sh", "plughost_plugin.py", "plughost_plugin.mjs"] {
            let copy = format!("{folder}/{sdk_file}");
            let listed = copies.iter().any(|(_, c)| *c == copy);
            let exists = util::examples().join(&copy).exists();
            assert!(listed || !exists, "add {copy} to this test");
        }
    }
}

/// The manifest of every SDK-based example holds exactly the tools its code
/// declares (`--manifest-tools`), so plugin.json never drifts from the code.
#[test]
fn sdk_examples_declare_their_manifest_tools_in_code() {
    let mut checked = Vec::new();
    for (folder, m) in util::example_manifests() {
        let dir = util::examples().join(&folder);
        let sdk = ["plughost_plugin.py", "plughost_plugin.mjs"]
            .iter()
            .any(|f| dir.join(f).exists());
        if sdk {
            assert_eq!(scaffold::code_tools(&dir), m["tools"], "{folder}");
            checked.push(folder);
        }
    }
    assert_eq!(
        checked,
        ["color-swatch", "kv-store", "note-manager", "password-gen"]
    );
}

/// On a terminal, `plughost call` shows the plugin's progress on stderr.
#[test]
fn progress_shows_on_a_terminal() {
    let sandbox = Sandbox::new().with_fixtures(&["progress-reporter"]);
    let line = format!(
        "{} --plugins-dir '{}' --state-dir '{}' call report_progress",
        env!("CARGO_BIN_EXE_plughost"),
        sandbox.plugins().display(),
        sandbox.state().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    let screen = stdout(&out);
    assert!(
        screen.contains("[33%] step one") && screen.contains("[100%] done"),
        "{screen:?}"
    );
    assert!(screen.contains("progress done"));

    // Not on a terminal: no progress noise on stderr.
    let plain = call(&sandbox, &["report_progress"]);
    assert!(!stderr(&plain).contains("[33%]"), "{}", stderr(&plain));
}

/// `plughost watch --json` prints one JSON object a line as changes happen.
#[test]
fn watch_prints_events_as_json_lines() {
    use std::io::BufRead;
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["event"], "notice");
    util::copy_dir(
        &util::fixtures().join("slow-ok"),
        &sandbox.plugins().join("slow-ok"),
    );
    let added: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        added,
        json!({"event": "plugin_added", "plugin": "slow-ok", "version": "1.0.0", "tools": ["slow_ok"]})
    );
    std::fs::remove_dir_all(sandbox.plugins().join("slow-ok")).unwrap();
    let removed: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        removed,
        json!({"event": "plugin_removed", "plugin": "slow-ok"})
    );
    // SAFETY: kill takes plain integers; the pid is our own child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
}
