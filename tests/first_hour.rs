//! What a newcomer and a ported plugin trip over in their first hour, through
//! the real binary: validating a plugin from inside its folder, a folder
//! without a manifest, a call of a rejected plugin's tool, Windows line
//! endings, `--json` output, revoking a plugin that does not exist, the
//! context flags of `call`, the input cap, a plugin-reported error kind,
//! export names a provider refuses, and output piped into `head`.

use crate::util;

use std::process::Stdio;

use serde_json::{Value, json};
use util::{Sandbox, run, stderr, stdout};

fn json_out(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

#[test]
fn validate_dot_inside_a_plugin_folder_and_by_name() {
    let sandbox = Sandbox::new();
    let dir = sandbox.write_plugin(
        "weather",
        &util::manifest("weather", "weather_now"),
        &util::answer_script("sunny"),
    );
    for arg in [".", "./"] {
        let mut cmd = sandbox.cmd();
        cmd.current_dir(&dir).args(["validate", arg]);
        let o = run(cmd);
        assert_eq!(
            o.status.code(),
            Some(0),
            "validate {arg}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(
            stdout(&o).contains("ok       weather 1.0.0"),
            "{}",
            stdout(&o)
        );
    }
    let mut cmd = sandbox.cmd();
    cmd.current_dir(sandbox.root.path())
        .args(["validate", "weather"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(0), "by name: {}", stdout(&o));
}

#[test]
fn validate_of_a_folder_without_a_manifest_says_so_and_fails() {
    let sandbox = Sandbox::new();
    let empty = sandbox.root.path().join("not-a-plugin");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("main.sh"), "#!/bin/sh\n").unwrap();
    let mut cmd = sandbox.cmd();
    cmd.arg("validate").arg(&empty);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(&format!("{} has no plugin.json", empty.display())),
        "{}",
        stdout(&o)
    );
}

#[test]
fn calling_a_rejected_plugins_tool_names_the_plugin_and_its_problem() {
    let sandbox = Sandbox::new();
    let mut m = util::manifest("weather", "weather_now");
    m["version"] = json!("one");
    sandbox.write_plugin("weather", &m, &util::answer_script("sunny"));
    sandbox.write_plugin(
        "other",
        &util::manifest("other", "weather_later"),
        &util::answer_script("x"),
    );
    let mut cmd = sandbox.cmd();
    cmd.args(["call", "weather_now"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("error: not_found:"), "{err}");
    assert!(
        err.contains("plugin \"weather\" declares it but was rejected"),
        "{err}"
    );
    assert!(err.contains("/version"), "the first problem: {err}");
    assert!(err.contains("run: plughost validate weather"), "{err}");
    assert!(!err.contains("weather_later"), "no unrelated hint: {err}");
}

#[test]
fn windows_line_endings_are_named_with_the_fix() {
    let sandbox = Sandbox::new();
    let dir = sandbox.write_plugin(
        "crlf",
        &util::manifest("crlf", "crlf_tool"),
        "#!/bin/bash\r\necho '{\"result\":\"x\"}'\r\n",
    );
    let mut cmd = sandbox.cmd();
    cmd.arg("validate").arg(&dir);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("ends with \"\\r\""), "{out}");
    assert!(out.contains("sed -i 's/\\r$//' main.sh"), "{out}");

    let mut cmd = sandbox.cmd();
    cmd.arg("doctor");
    let o = run(cmd);
    assert!(stdout(&o).contains("ends with \"\\r\""), "{}", stdout(&o));

    // A byte-order mark hides the #! line.
    std::fs::write(dir.join("main.sh"), "\u{feff}#!/bin/bash\necho '{}'\n").unwrap();
    let mut cmd = sandbox.cmd();
    cmd.arg("validate").arg(&dir);
    let o = run(cmd);
    assert!(stdout(&o).contains("byte-order mark"), "{}", stdout(&o));

    // An interpreter that is missing is noted, not rejected.
    std::fs::write(dir.join("main.sh"), "#!/usr/bin/env nosuchlang-interp\n").unwrap();
    let mut cmd = sandbox.cmd();
    cmd.arg("validate").arg(&dir);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("\"nosuchlang-interp\""),
        "{}",
        stdout(&o)
    );
}

#[test]
fn with_json_a_host_error_is_only_json() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "call", "nope"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(json_out(&o)["error"]["kind"], "not_found");
    assert_eq!(stderr(&o), "", "nothing but the JSON");
    let mut cmd = sandbox.cmd();
    cmd.args(["--json", "call", "slow_ok", "{not json"]);
    let o = run(cmd);
    assert_eq!(json_out(&o)["error"]["kind"], "invalid_args");
    assert_eq!(stderr(&o), "");
}

/// `plughost schema manifest | head`, `man | head`, `completions bash |
/// head`: a reader that stops reading ends the output without a panic or
/// an error, with the exit a program killed by SIGPIPE has.
#[test]
fn a_reader_that_stops_reading_ends_the_output_quietly() {
    use std::os::fd::AsRawFd;
    let sandbox = Sandbox::new();
    for args in [
        &["schema", "manifest"][..],
        &["man"],
        &["completions", "bash"],
    ] {
        // A pipe of one page whose reader is gone before the first write.
        // Each output is larger than the page: should a process another
        // test forks hold the reader for a moment, the write waits for it
        // to exec, and then fails.
        let (reader, writer) = std::io::pipe().unwrap();
        // SAFETY: fcntl on a descriptor this function owns.
        assert!(unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) } >= 4096);
        drop(reader);
        let mut cmd = sandbox.cmd();
        cmd.args(args).stdout(writer).stderr(Stdio::piped());
        let o = cmd.spawn().unwrap().wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(141), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

#[test]
fn revoking_a_plugin_that_does_not_exist_says_so() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let mut cmd = sandbox.cmd();
    cmd.args(["revoke", "slow-okk"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("no plugin named \"slow-okk\""), "{err}");
    assert!(err.contains("did you mean \"slow-ok\"?"), "{err}");
}

#[test]
fn call_fills_the_context_from_its_flags() {
    let sandbox = Sandbox::new().with_fixtures(&["echo-request"]);
    let mut approve = sandbox.cmd();
    approve.args(["approve", "echo-request", "--yes"]);
    assert!(run(approve).status.success());
    let mut cmd = sandbox.cmd();
    cmd.args([
        "call",
        "echo_request",
        "--session-id",
        "s-42",
        "--actor",
        "ada",
        "--background",
    ]);
    let o = run(cmd);
    assert!(o.status.success(), "{}", stderr(&o));
    let request: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let context = &request["context"];
    assert_eq!(context["session_id"], "s-42");
    assert_eq!(context["actor"], "ada");
    assert_eq!(context["scope"], "background");
    assert_eq!(context["source"], "cli");
}

#[test]
fn an_input_over_the_cap_is_invalid_args_and_nothing_runs() {
    let sandbox = Sandbox::new();
    let marker = sandbox.root.path().join("ran");
    sandbox.write_plugin(
        "big",
        &util::manifest("big", "big_tool"),
        &format!(
            "#!/bin/sh\ntouch '{}'\ncat >/dev/null\necho '{{\"result\":\"x\"}}'\n",
            marker.display()
        ),
    );
    let input = json!({"text": "a".repeat(2000)}).to_string();
    let mut cmd = sandbox.cmd();
    cmd.args(["--max-input-bytes", "1000", "call", "big_tool", &input]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("error: invalid_args:"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("1000 bytes"),
        "names the limit: {}",
        stderr(&o)
    );
    // From stdin too, read no further than the limit.
    let mut cmd = sandbox.cmd();
    cmd.args(["--max-input-bytes", "1000", "call", "big_tool", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(input.as_bytes());
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("1000 bytes"), "{}", stderr(&o));
    assert!(!marker.exists(), "nothing was spawned");

    let mut cmd = sandbox.cmd();
    cmd.args(["call", "big_tool", &input]);
    assert!(run(cmd).status.success(), "the default limit is 1 MiB");
}

#[test]
fn a_plugin_reported_error_kind_travels_with_the_result() {
    let sandbox = Sandbox::new().with_fixtures(&["odd-results"]);
    let log = sandbox.root.path().join("audit.jsonl");
    let mut cmd = sandbox.cmd();
    cmd.arg("--audit-log")
        .arg(&log)
        .args(["--json", "call", "reported_kind"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(1), "the tool's own error: exit 1");
    let outcome = json_out(&o);
    assert_eq!(outcome["is_error"], true);
    assert_eq!(outcome["error"]["kind"], "not_found");
    assert_eq!(outcome["error"]["message"], "No such city: Atlantis");
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["outcome"], "tool_error");
    assert_eq!(line["error_kind"], "not_found");
}

#[test]
fn export_maps_names_a_provider_refuses_and_fails_on_a_collision() {
    let sandbox = Sandbox::new();
    sandbox.write_plugin(
        "files",
        &util::manifest("files", "files.read"),
        &util::answer_script("x"),
    );
    let mut cmd = sandbox.cmd();
    cmd.args(["export", "--format", "openai"]);
    let o = run(cmd);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_out(&o)[0]["function"]["name"], "files_read");
    sandbox.write_plugin(
        "more-files",
        &util::manifest("more-files", "files_read"),
        &util::answer_script("x"),
    );
    let mut cmd = sandbox.cmd();
    cmd.args(["export", "--format", "anthropic"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("both become \"files_read\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn completions_and_the_man_page_come_from_the_command_line() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let mut cmd = sandbox.cmd();
        cmd.args(["completions", shell]);
        let o = run(cmd);
        assert!(o.status.success(), "{shell}");
        assert!(stdout(&o).contains("approve"), "{shell}: {}", stdout(&o));
    }
    let mut cmd = sandbox.cmd();
    cmd.arg("man");
    let o = run(cmd);
    assert!(stdout(&o).starts_with(".ie") || stdout(&o).contains(".TH plughost"));
}

/// The same through the library: typed data an embedder can match on.
#[tokio::test]
async fn the_library_reports_the_rejected_plugin_the_input_cap_and_the_kind() {
    use std::sync::{Arc, Mutex};

    use plughost::observe::Observer;
    use plughost::observe::{CallInfo, CallSummary, ObserverResult};
    use plughost::protocol::Invocation;
    use plughost::{CallError, ErrorKind, Limits, PluginHost, ToolOutcome};

    #[derive(Default)]
    struct Kinds(Mutex<Vec<Option<plughost::protocol::ToolErrorKind>>>);
    impl Observer for Kinds {
        fn call_ended(
            &self,
            _: &CallInfo,
            ended: &Result<ToolOutcome, CallError>,
            s: &CallSummary,
        ) -> ObserverResult {
            if ended.is_ok() {
                self.0.lock().unwrap().push(s.tool_error);
            }
            Ok(())
        }
    }

    let sandbox = Sandbox::new().with_fixtures(&["odd-results"]);
    let mut m = util::manifest("weather", "weather_now");
    m["version"] = json!("one");
    sandbox.write_plugin("weather", &m, &util::answer_script("x"));
    let kinds = Arc::new(Kinds::default());
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .limits(Limits {
            max_input: 100,
            ..Limits::default()
        })
        .observer(kinds.clone())
        .build()
        .unwrap();

    let err = host
        .call("weather_now", json!({}), Invocation::default())
        .await
        .unwrap_err();
    let CallError::NotFound {
        rejected: Some(r), ..
    } = &err
    else {
        panic!("expected a rejected plugin in {err:?}");
    };
    assert_eq!(r.plugin, "weather");
    assert!(r.reason.starts_with("/version"), "{}", r.reason);

    let big = json!({"text": "a".repeat(200)});
    let err = host
        .call("non_string_result", big, Invocation::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgs);
    assert!(err.to_string().contains("100 bytes"), "{err}");

    let o = host
        .call("reported_kind", json!({}), Invocation::default())
        .await
        .unwrap();
    assert_eq!(
        o.error.unwrap().kind,
        plughost::protocol::ToolErrorKind::NotFound
    );
    assert_eq!(
        *kinds.0.lock().unwrap(),
        [Some(plughost::protocol::ToolErrorKind::NotFound)]
    );
}
