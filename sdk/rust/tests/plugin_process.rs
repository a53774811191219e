//! Runs a plugin built with this crate as a real subprocess, the way plughost
//! runs it. This test binary is also that plugin: started with
//! `PLUGHOST_SDK_TEST_PLUGIN=1` it serves the demo tools below instead of
//! testing (hence `harness = false`: libtest would print to stdout first).
//! `cargo test --test plugin_process -- persistent` runs the tests whose name
//! contains "persistent".

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

use plughost_plugin::{Attachment, Context, MediaType, NoInput, Plugin, Response, Tool, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Greet {
    name: String,
    #[serde(default)]
    times: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
struct City {
    city: String,
}

#[derive(Serialize, JsonSchema)]
struct Weather {
    temp: i32,
}

fn demo() -> Plugin {
    Plugin::new()
        .add_tool(
            Tool::new("hello_greet", "Greets a person by name.", |input: Greet, ctx: &Context| {
                ctx.progress(1, 2, "warming up");
                if input.name.trim().is_empty() {
                    return Err(ToolError::invalid_args("name is empty"));
                }
                ctx.progress(2, 2, "");
                Ok(vec![format!("Hello, {}!", input.name); input.times.unwrap_or(1)].join(" "))
            })
            .timeout_secs(10),
        )
        .add_tool(
            Tool::new("weather", "Current weather for a city.", |input: City, ctx: &Context| {
                if input.city != "Paris" {
                    return Err(ToolError::not_found(format!("No such city: {}", input.city)));
                }
                std::fs::write(ctx.data_dir.join("chart.png"), b"png")?;
                Ok(Response::text("Sunny, 21")
                    .structured(serde_json::to_value(Weather { temp: 21 })?)
                    .attachment(Attachment::path(MediaType::Image, "chart.png").mime_type("image/png").size(3)))
            })
            .output_schema::<Weather>(),
        )
        .tool("as_json", "Returns JSON.", |_: NoInput, _: &Context| {
            Response::json(&json!({"sum": 6, "text": "héllo"}))
        })
        .tool("fail", "Fails with a kind.", |input: Value, _: &Context| -> Result<String, ToolError> {
            let kind = serde_json::from_value(input["kind"].clone())?;
            Err(ToolError::new(kind, "failed on purpose"))
        })
        .tool("crash", "Panics.", |_: NoInput, _: &Context| -> Result<String, ToolError> {
            println!("about to crash");
            let v: Vec<u8> = Vec::new();
            Ok(v[3].to_string())
        })
        .tool("noisy", "Prints everywhere it can.", |_: NoInput, _: &Context| {
            println!("println");
            print!("unfinished line");
            Command::new("echo").arg("child process").status()?;
            Ok("quiet answer")
        })
        .tool("whoami", "Echoes its context.", |_: NoInput, ctx: &Context| {
            Ok(json!({
                "plugin_dir": ctx.plugin_dir, "data_dir": ctx.data_dir, "request_id": ctx.request_id,
                "session_id": ctx.session_id, "actor": ctx.actor, "source": ctx.source, "scope": ctx.scope,
            }))
        })
        .tool("slow", "Works until cancelled.", |_: NoInput, ctx: &Context| {
            ctx.progress(0, None, "started");
            while !ctx.cancelled() {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok("stopped early")
        })
}

fn main() {
    if std::env::var_os("PLUGHOST_SDK_TEST_PLUGIN").is_some() {
        demo().run();
        return;
    }
    let tests: &[(&str, fn())] = &[
        (
            "per_call_text_result_with_full_context",
            text_result_with_full_context,
        ),
        (
            "per_call_without_context_or_input",
            without_context_or_input,
        ),
        ("per_call_pretty_printed_request", pretty_printed_request),
        (
            "per_call_structured_and_attachments",
            structured_and_attachments,
        ),
        ("per_call_json_result", json_result),
        ("per_call_error_kinds", error_kinds),
        ("per_call_panic_is_failed", panic_is_failed),
        ("per_call_progress_on_stderr", progress_on_stderr),
        ("per_call_stdout_is_protected", stdout_is_protected),
        ("per_call_invalid_input", invalid_input),
        ("per_call_bad_requests", bad_requests),
        ("manifest_tools", manifest_tools),
        (
            "persistent_two_requests_and_a_bad_line",
            persistent_two_requests_and_a_bad_line,
        ),
        ("persistent_one_at_a_time", persistent_one_at_a_time),
        (
            "persistent_sigterm_while_busy",
            persistent_sigterm_while_busy,
        ),
        (
            "persistent_sigterm_while_idle",
            persistent_sigterm_while_idle,
        ),
    ];
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let (mut passed, mut failed) = (0, Vec::new());
    for (name, test) in tests.iter().filter(|(name, _)| name.contains(&filter)) {
        if std::panic::catch_unwind(test).is_ok() {
            println!("test {name} ... ok");
            passed += 1;
        } else {
            println!("test {name} ... FAILED");
            failed.push(*name);
        }
    }
    let _ = std::fs::remove_dir_all(scratch());
    println!(
        "\ntest result: {passed} passed; {} failed {failed:?}",
        failed.len()
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

/// A folder of this test run, used as data_dir.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("plughost-plugin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn full_context() -> Value {
    json!({"plugin_dir": "/p", "data_dir": "/d", "request_id": "r-1", "session_id": "s-1",
           "actor": "alice", "source": "cli", "scope": "foreground"})
}

fn plugin(args: &[&str], persistent: bool) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(args)
        .env("PLUGHOST_SDK_TEST_PLUGIN", "1")
        .env_remove("PLUGHOST_PERSISTENT")
        .env_remove("PLUGHOST_PLUGIN_DIR")
        .env_remove("PLUGHOST_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if persistent {
        cmd.env("PLUGHOST_PERSISTENT", "1");
    }
    cmd
}

fn run(mut cmd: Command, stdin: &str) -> Output {
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// One per-call request: checks exit 0 and exactly one line on stdout.
fn call(tool: &str, input: Value) -> (Value, String) {
    let request = json!({"tool": tool, "input": input, "context": {"data_dir": scratch()}});
    let out = run(plugin(&[], false), &request.to_string());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.matches('\n').count(), 1, "{stdout}");
    assert!(stdout.ends_with('\n'));
    (serde_json::from_str(&stdout).unwrap(), stderr)
}

fn text_result_with_full_context() {
    let request = json!({"tool": "hello_greet", "input": {"name": "Alice", "times": 2}, "context": full_context()});
    let out = run(plugin(&[], false), &request.to_string());
    assert_eq!(
        text(&out.stdout),
        "{\"result\":\"Hello, Alice! Hello, Alice!\",\"is_error\":false}\n"
    );
    assert!(out.status.success());
    let request = json!({"tool": "whoami", "context": full_context()});
    let out = run(plugin(&[], false), &request.to_string());
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(response["structured"], full_context());
}

fn without_context_or_input() {
    let dir = scratch().join("plugin");
    let mut cmd = plugin(&[], false);
    cmd.env("PLUGHOST_PLUGIN_DIR", &dir);
    let out = run(cmd, r#"{"tool": "whoami"}"#);
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(response["structured"]["plugin_dir"], json!(dir));
    assert_eq!(response["structured"]["data_dir"], json!(dir.join(".data")));
    assert!(dir.join(".data").is_dir());
    assert_eq!(response["structured"]["request_id"], Value::Null);
}

fn pretty_printed_request() {
    let request = serde_json::to_string_pretty(
        &json!({"tool": "hello_greet", "input": {"name": "Bob"}, "context": {}}),
    );
    let request = request.unwrap();
    assert!(request.lines().count() > 3);
    let out = run(plugin(&[], false), &format!("{request}\n"));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!({"result": "Hello, Bob!", "is_error": false})
    );
}

fn structured_and_attachments() {
    let (response, _) = call("weather", json!({"city": "Paris"}));
    assert_eq!(
        response,
        json!({"result": "Sunny, 21", "is_error": false, "structured": {"temp": 21},
               "attachments": [{"media_type": "image", "mime_type": "image/png", "path": "chart.png", "size": 3}]})
    );
    assert_eq!(std::fs::read(scratch().join("chart.png")).unwrap(), b"png");
}

fn json_result() {
    let (response, _) = call("as_json", json!({}));
    assert_eq!(
        response,
        json!({"result": "{\"sum\":6,\"text\":\"héllo\"}", "is_error": false,
                                "structured": {"sum": 6, "text": "héllo"}})
    );
}

fn error_kinds() {
    for kind in [
        "invalid_args",
        "not_found",
        "not_allowed",
        "failed",
        "timeout",
    ] {
        let (response, _) = call("fail", json!({"kind": kind}));
        assert_eq!(
            response,
            json!({"result": "failed on purpose", "is_error": true, "error": {"kind": kind, "message": "failed on purpose"}})
        );
    }
    let (response, _) = call("weather", json!({"city": "Atlantis"}));
    assert_eq!(
        response["error"],
        json!({"kind": "not_found", "message": "No such city: Atlantis"})
    );
}

fn panic_is_failed() {
    let (response, stderr) = call("crash", json!({}));
    assert_eq!(response["error"]["kind"], "failed");
    let result = response["result"].as_str().unwrap();
    assert!(result.starts_with("panic: index out of bounds"), "{result}");
    assert!(
        stderr.contains("about to crash") && stderr.contains("panicked at"),
        "{stderr}"
    );
}

fn progress_on_stderr() {
    let (response, stderr) = call("hello_greet", json!({"name": "Al"}));
    assert_eq!(response["result"], "Hello, Al!");
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("::progress::"))
        .collect();
    assert_eq!(
        progress,
        ["::progress:: 1/2 warming up", "::progress:: 2/2"]
    );
}

fn stdout_is_protected() {
    let out = run(plugin(&[], false), r#"{"tool": "noisy"}"#);
    assert_eq!(
        text(&out.stdout),
        "{\"result\":\"quiet answer\",\"is_error\":false}\n"
    );
    let stderr = text(&out.stderr);
    for needle in ["println", "unfinished line", "child process"] {
        assert!(stderr.contains(needle), "{needle} not in {stderr}");
    }
}

fn invalid_input() {
    let (response, _) = call("hello_greet", json!({"nme": "Al"}));
    assert_eq!(response["error"]["kind"], "invalid_args");
    let result = response["result"].as_str().unwrap();
    assert!(
        result.starts_with(
            "Invalid input for hello_greet: unknown field `nme`, expected `name` or `times`"
        ),
        "{result}"
    );
    let (response, _) = call("hello_greet", json!({"name": 3}));
    assert!(
        response["result"]
            .as_str()
            .unwrap()
            .contains("invalid type: integer `3`, expected a string"),
        "{response}"
    );
    let (response, _) = call("nope", json!({}));
    assert_eq!(response["error"]["kind"], "not_found");
    assert!(
        response["result"]
            .as_str()
            .unwrap()
            .contains("this plugin provides: hello_greet, weather, as_json")
    );
}

fn bad_requests() {
    for (stdin, needle) in [
        ("not json", "not JSON"),
        ("[1, 2]", "string \"tool\""),
        ("", "stdin is empty"),
        (r#"{"tool": "whoami", "input": []}"#, "must be JSON objects"),
    ] {
        let out = run(plugin(&[], false), stdin);
        assert!(out.status.success());
        let response: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(response["error"]["kind"], "invalid_args", "{stdin}");
        assert!(
            response["result"].as_str().unwrap().contains(needle),
            "{response}"
        );
    }
}

fn manifest_tools() {
    let out = run(plugin(&["--manifest-tools"], false), "");
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("[\n  {\n    \"name\": \"hello_greet\""),
        "{stdout}"
    );
    let tools: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        tools[0],
        json!({"name": "hello_greet", "description": "Greets a person by name.", "timeout_secs": 10,
               "input_schema": {"type": "object", "additionalProperties": false, "required": ["name"],
                                "properties": {"name": {"type": "string"},
                                               "times": {"type": ["integer", "null"], "format": "uint", "minimum": 0,
                                                         "default": null}}}})
    );
    assert_eq!(
        tools[1]["output_schema"]["properties"]["temp"]["type"],
        "integer"
    );
    assert_eq!(tools.as_array().unwrap().len(), 8);
}

fn persistent_two_requests_and_a_bad_line() {
    let lines = [
        json!({"tool": "hello_greet", "input": {"name": "A"}, "context": full_context()})
            .to_string(),
        "{not json".into(),
        String::new(),
        json!({"tool": "crash", "input": {}, "context": full_context()}).to_string(),
        json!({"tool": "noisy", "input": {}, "context": full_context()}).to_string(),
        json!({"tool": "hello_greet", "input": {"name": "B"}, "context": full_context()})
            .to_string(),
    ];
    let out = run(plugin(&[], true), &(lines.join("\n") + "\n"));
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(stdout.ends_with('\n'));
    let responses: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(responses.len(), 5, "{stdout}");
    assert_eq!(responses[0]["result"], "Hello, A!");
    assert_eq!(responses[1]["error"]["kind"], "invalid_args");
    assert_eq!(responses[2]["error"]["kind"], "failed");
    assert_eq!(responses[3]["result"], "quiet answer");
    assert_eq!(responses[4]["result"], "Hello, B!");
}

/// A worker with open pipes.
struct Worker {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    fn start() -> Worker {
        let mut child = plugin(&[], true).spawn().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Worker { child, stdout }
    }
    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    fn response(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }
    fn sigterm(&self) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
    }
    fn exit_code(&mut self) -> Option<i32> {
        self.child.wait().unwrap().code()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn persistent_one_at_a_time() {
    let mut worker = Worker::start();
    for name in ["A", "B", "C"] {
        worker.send(&json!({"tool": "hello_greet", "input": {"name": name}}).to_string());
        assert_eq!(worker.response()["result"], format!("Hello, {name}!"));
    }
    drop(worker.child.stdin.take());
    assert_eq!(worker.exit_code(), Some(0));
}

fn persistent_sigterm_while_busy() {
    let mut worker = Worker::start();
    let mut stderr = BufReader::new(worker.child.stderr.take().unwrap());
    worker.send(r#"{"tool":"slow","input":{}}"#);
    let mut line = String::new();
    while !line.starts_with("::progress::") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no progress line");
    }
    assert_eq!(line, "::progress:: 0 started\n");
    worker.sigterm();
    assert_eq!(worker.response()["result"], "stopped early");
    assert_eq!(worker.exit_code(), Some(0)); // stdin still open: it left on its own
    let mut rest = String::new();
    worker.stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "");
}

fn persistent_sigterm_while_idle() {
    let mut worker = Worker::start();
    worker.send(r#"{"tool":"hello_greet","input":{"name":"A"}}"#);
    worker.response();
    std::thread::sleep(Duration::from_millis(200)); // let it go back to waiting for a line
    worker.sigterm();
    assert_eq!(worker.exit_code(), Some(143));
}
