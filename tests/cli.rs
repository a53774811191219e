//! `plughost call` through the real binary: exit codes, output, stdin input,
//! and every bundled example answering as documented.

use crate::util;

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

/// Approving a rejected plugin fails with its problems and the command
/// that lists them (the engine's typed remedy, rendered by the command line).
#[test]
fn approving_a_rejected_plugin_says_how_to_see_why() {
    let sandbox = Sandbox::new();
    let mut m = util::manifest("broken", "broken_tool");
    m["permission"] = json!([]);
    sandbox.write_plugin("broken", &m, &util::answer_script("x"));
    let mut approve = sandbox.cmd();
    approve.args(["approve", "broken", "--yes"]);
    let out = run(approve);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("plugin \"broken\" is rejected; fix it first:")
            && stderr(&out).contains("unknown field \"permission\"")
            && stderr(&out).contains("run: plughost validate broken"),
        "{}",
        stderr(&out)
    );
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
    // The text mode prints the result and says what it left out.
    let mut cmd = sandbox.cmd();
    cmd.args(["call", "swatch_make", r##"{"color":"#3366CC","size":8}"##]);
    let out = run(cmd);
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), "A 8x8 swatch of #3366cc.");
    assert!(
        stderr(&out).contains(
            "note: the result also holds 1 item not printed here: image (image/png); see it with --json"
        ),
        "{}",
        stderr(&out)
    );

    let notes = sandbox.state().join("data/note-manager/notes");
    assert!(notes.is_dir(), "notes live in the plugin's data folder");
    assert!(!sandbox.root.path().join("etc").exists());
}

/// `plughost new` writes a plugin that validates (an SDK plugin's manifest
/// holds exactly the tools its code declares), runs by hand, and answers
/// through plughost, in every language, per call and as a persistent worker.
/// Rust, which needs a build, has its own test below.
#[test]
fn scaffolded_plugins_validate_run_by_hand_and_answer() {
    let sandbox = Sandbox::new();
    for lang in ["bash", "python", "node"] {
        for persistent in [false, true] {
            let name = format!("fresh-{lang}{}", if persistent { "-worker" } else { "" });
            let (dir, printed) = scaffold::new_plugin(&sandbox, None, &name, lang, persistent);
            if lang == "python" {
                assert!(printed.contains("compiled plughost_plugin.py"), "{printed}");
                let cached = std::fs::read_dir(dir.join("__pycache__")).unwrap().count();
                assert_eq!(cached, 1, "the SDK is compiled at scaffold time");
            }
            check_scaffold(&sandbox, &dir, lang, persistent);
        }
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

/// A scaffolded Rust plugin says how to build itself until it is built, then
/// builds with its `build.sh` (one cargo build, in the target folder the tests
/// share) and answers by hand and through plughost, per call and, with the
/// `"persistent": {}` that `--persistent` adds, as a worker.
#[test]
fn a_scaffolded_rust_plugin_builds_and_answers_per_call_and_as_a_worker() {
    if !scaffold::cargo_available() {
        return;
    }
    let sandbox = Sandbox::new();
    let (dir, printed) = scaffold::new_plugin(&sandbox, None, "fresh-rust", "rust", false);
    assert!(printed.contains("./build.sh"), "{printed}");
    let unbuilt = call(&sandbox, &["fresh_rust_echo", r#"{"text":"hi"}"#]);
    assert_eq!(unbuilt.status.code(), Some(2));
    assert!(
        stderr(&unbuilt).contains("run ./build.sh"),
        "{}",
        stderr(&unbuilt)
    );

    scaffold::build_rust(&dir);
    check_scaffold(&sandbox, &dir, "rust", false);

    // --persistent writes the same files but for the manifest's "persistent": {}.
    let elsewhere = sandbox.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let (worker, _) = scaffold::new_plugin(&sandbox, Some(&elsewhere), "fresh-rust", "rust", true);
    let read = |path: std::path::PathBuf| std::fs::read_to_string(path).unwrap();
    for file in [
        "main.sh",
        "build.sh",
        "Cargo.toml",
        "src/main.rs",
        ".gitignore",
    ] {
        assert!(read(worker.join(file)) == read(dir.join(file)), "{file}");
    }
    // The build added the plugin itself to Cargo.lock; it starts as the SDK's.
    let sdk_lock = read(util::repo().join("sdk/rust/Cargo.lock"));
    assert!(read(worker.join("Cargo.lock")) == sdk_lock);
    let mut m = scaffold::manifest(&dir);
    m["persistent"] = json!({});
    assert_eq!(scaffold::manifest(&worker), m);
    std::fs::copy(worker.join("plugin.json"), dir.join("plugin.json")).unwrap();
    check_scaffold(&sandbox, &dir, "rust", true);
}

/// Everything a scaffolded plugin promises, checked on the folder `dir`.
fn check_scaffold(sandbox: &Sandbox, dir: &std::path::Path, lang: &str, persistent: bool) {
    let name = dir.file_name().unwrap().to_str().unwrap();
    let tool = format!("{}_echo", name.replace('-', "_"));
    let m = scaffold::manifest(dir);
    assert_eq!(m.get("persistent").is_some(), persistent, "{name}");

    let mut cmd = sandbox.cmd();
    cmd.arg("validate").arg(dir);
    assert_eq!(run(cmd).status.code(), Some(0), "{name} validates");
    if lang != "bash" {
        assert_eq!(
            scaffold::code_tools(dir),
            m["tools"],
            "{name}: --manifest-tools"
        );
        let mut cmd = sandbox.cmd();
        cmd.args(["validate", "--with-code"]).arg(dir);
        let out = run(cmd);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stdout(&out));
    }

    // By hand, with an empty context: one request on stdin, one answer.
    let request = |text: &str| json!({"tool": tool, "input": {"text": text}, "context": {}});
    let replies = scaffold::by_hand(dir, &request("").to_string(), false);
    assert_eq!(replies.len(), 1, "{name}: {replies:?}");
    assert_eq!(
        replies[0]["is_error"], true,
        "{name}: an empty text is the tool's own error"
    );
    if persistent {
        // By hand as a worker: one answer line per request line.
        let lines = format!("{}\n\n{}\n", request("a b"), request(" "));
        let replies = scaffold::by_hand(dir, &lines, true);
        assert_eq!(replies.len(), 2, "{name}: {replies:?}");
        assert_eq!(
            (&replies[0]["result"], &replies[1]["is_error"]),
            (&json!("a b"), &json!(true))
        );
    }

    let blank = call(sandbox, &[&tool, r#"{"text":"   "}"#]);
    assert_eq!(
        blank.status.code(),
        Some(1),
        "{name}: blank text is the tool's own error"
    );
    let mut cmd = sandbox.cmd();
    cmd.args([
        "--json",
        "call",
        &tool,
        r#"{"text":"hi \"you\"","shout":true}"#,
    ]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["result"], "HI \"YOU\"", "{name}");
    // A worker's answer has no exit code: it answered and kept running.
    let exit_code = if persistent { json!(null) } else { json!(0) };
    assert_eq!(outcome["exit_code"], exit_code, "{name}");
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
        crate::util::plughost().display(),
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
