//! `plughost serve` driven by a real MCP client (rmcp's), over stdio.
#![cfg(feature = "mcp-server")]

use crate::mcp_client;
use crate::util;

use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp_client::{call, connect, start_call, text};
use rmcp::model::ServerResult;
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use util::Sandbox;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_list_and_call_every_example() {
    let sandbox = Sandbox::new().with_examples();
    let s = connect(&sandbox, None).await;
    let info = s.client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "plughost");
    assert_eq!(
        info.capabilities.tools.as_ref().unwrap().list_changed,
        Some(true)
    );

    let tools = s.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in [
        "hello_greet",
        "system_uptime",
        "password_generate",
        "kv_set",
        "kv_get",
        "note_create",
        "note_search",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let hello = tools.iter().find(|t| t.name == "hello_greet").unwrap();
    assert_eq!(hello.input_schema.get("required"), Some(&json!(["name"])));
    let hints = hello.annotations.as_ref().unwrap();
    assert_eq!(
        (hints.read_only_hint, hints.open_world_hint),
        (Some(true), Some(false))
    );

    let r = s
        .client
        .call_tool(call("hello_greet", json!({"name": "Ada"})))
        .await
        .unwrap();
    assert_eq!(
        (text(&r).as_str(), r.is_error),
        ("Hello, Ada!", Some(false))
    );
    let r = s
        .client
        .call_tool(call("system_uptime", json!({})))
        .await
        .unwrap();
    assert!(
        text(&r).contains("up") && r.structured_content.is_some(),
        "{r:?}"
    );
    let r = s
        .client
        .call_tool(call("password_generate", json!({"length": 12})))
        .await
        .unwrap();
    assert_eq!(text(&r).trim().chars().count(), 12);
    s.client
        .call_tool(call("kv_set", json!({"key": "k", "value": "v"})))
        .await
        .unwrap();
    assert_eq!(
        text(
            &s.client
                .call_tool(call("kv_get", json!({"key": "k"})))
                .await
                .unwrap()
        ),
        "v"
    );
    let r = s
        .client
        .call_tool(call("swatch_make", json!({"color": "#00ff00", "size": 2})))
        .await
        .unwrap();
    let image = r
        .content
        .iter()
        .find_map(|c| c.as_image())
        .expect("the swatch arrives as image content");
    assert_eq!(image.mime_type, "image/png");
    s.client
        .call_tool(call(
            "note_create",
            json!({"title": "T", "body": "find me"}),
        ))
        .await
        .unwrap();
    assert!(
        text(
            &s.client
                .call_tool(call("note_search", json!({"query": "find"})))
                .await
                .unwrap()
        )
        .contains("find me")
    );

    // The plugin's own error and a host error are both isError results.
    let r = s
        .client
        .call_tool(call("kv_get", json!({"key": "missing"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let r = s
        .client
        .call_tool(call("hello_greet", json!({"name": 7})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).starts_with("error invalid_args:"), "{}", text(&r));
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_attachments_and_host_errors() {
    let sandbox = Sandbox::new().with_fixtures(&["odd-results", "exit-no-body", "slow-sleeper"]);
    let s = connect(&sandbox, None).await;
    let r = s
        .client
        .call_tool(call("structured_attachments", json!({})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"n": 1})));
    let image = r
        .content
        .iter()
        .find_map(|c| c.as_image())
        .expect("the attachment is image content");
    assert_eq!(image.mime_type, "image/png");
    let r = s
        .client
        .call_tool(call("exit_no_body", json!({})))
        .await
        .unwrap();
    assert!(
        r.is_error == Some(true) && text(&r).starts_with("error failed:"),
        "{}",
        text(&r)
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_a_plugin_folder_sends_list_changed() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let mut s = connect(&sandbox, None).await;
    assert_eq!(s.client.list_all_tools().await.unwrap().len(), 1);
    util::copy_dir(
        &util::fixtures().join("early-exit"),
        &sandbox.plugins().join("early-exit"),
    );
    tokio::time::timeout(Duration::from_secs(5), s.list_changed.recv())
        .await
        .expect("list_changed arrives")
        .unwrap();
    let tools = s.client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "early_exit"), "{tools:?}");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_starting_and_stopping_send_no_list_changed() {
    let sandbox = Sandbox::new().with_fixtures(&["worker-counter"]);
    let mut s = connect(&sandbox, None).await;
    // A worker starts, then crashes (stops), then another starts.
    for tool in ["worker_count", "worker_crash", "worker_count"] {
        s.client
            .call_tool(call(tool, serde_json::json!({})))
            .await
            .unwrap();
    }
    let quiet = tokio::time::timeout(Duration::from_millis(700), s.list_changed.recv()).await;
    assert!(quiet.is_err(), "list_changed after worker churn: {quiet:?}");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_progress_becomes_progress_notifications() {
    let sandbox = Sandbox::new().with_fixtures(&["progress-reporter"]);
    let mut s = connect(&sandbox, None).await;
    let handle = start_call(
        &s,
        "report_progress",
        PeerRequestOptions::with_timeout(Duration::from_secs(20)),
    )
    .await;
    let token = handle.progress_token.clone();
    let ServerResult::CallToolResult(done) = handle.await_response().await.unwrap() else {
        panic!("not a tool result")
    };
    assert_eq!(text(&done), "progress done");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let p = s.next_progress().await;
        assert_eq!(p.progress_token, token);
        seen.push((p.progress, p.total, p.message));
    }
    assert_eq!(seen[0], (1.0, Some(3.0), Some("step one".to_owned())));
    assert_eq!(seen[2].0, 3.0);
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_kills_its_process_tree() {
    let sandbox = Sandbox::new().with_fixtures(&["many-children"]);
    let dir = sandbox.plugins().join("many-children");
    let s = connect(&sandbox, None).await;
    let handle = start_call(&s, "many_children", PeerRequestOptions::no_options()).await;
    util::wait_for_processes(&dir, 50).await;
    handle.cancel(Some("user abort".into())).await.unwrap();
    util::assert_no_processes_in(&dir);
    // The server goes on serving.
    assert!(s.client.list_all_tools().await.is_ok());
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_stops_the_server_and_kills_calls_in_flight() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-sleeper"]);
    let dir = sandbox.plugins().join("slow-sleeper");
    let s = connect(&sandbox, None).await;
    let _pending = start_call(&s, "slow_sleep", PeerRequestOptions::no_options()).await;
    util::wait_for_processes(&dir, 1).await;
    s.client.cancel().await.unwrap();
    util::assert_no_processes_in(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_concurrent_calls() {
    let sandbox = Sandbox::new().with_fixtures(&["slow-ok"]);
    let s = connect(&sandbox, None).await;
    let peer = s.client.peer().clone();
    let start = Instant::now();
    let calls: Vec<_> = (0..32)
        .map(|_| {
            let peer = peer.clone();
            tokio::spawn(async move { peer.call_tool(call("slow_ok", json!({}))).await })
        })
        .collect();
    for c in calls {
        let r = c.await.unwrap().unwrap();
        assert_eq!(text(&r), "slow ok");
    }
    // 32 calls of 0.3 s at 16 at a time: two rounds, not thirty-two.
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    s.client.cancel().await.unwrap();
}

fn network_plugin(sandbox: &Sandbox) {
    let mut m = util::manifest("net-tool", "net_fetch");
    m["permissions"] = json!(["network"]);
    sandbox.write_plugin("net-tool", &m, &util::answer_script("fetched"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unapproved_tools_say_so_and_elicitation_approves() {
    let sandbox = Sandbox::new();
    network_plugin(&sandbox);

    // A client without elicitation: the tool says it needs approval, the call says how.
    let s = connect(&sandbox, None).await;
    let tools = s.client.list_all_tools().await.unwrap();
    let description = tools[0]
        .description
        .as_deref()
        .unwrap_or_default()
        .to_owned();
    assert!(
        description.contains("needs approval: run plughost ")
            && description.contains("approve net-tool"),
        "{description}"
    );
    assert_eq!(
        tools[0].annotations.as_ref().unwrap().open_world_hint,
        Some(true)
    );
    let r = s
        .client
        .call_tool(call("net_fetch", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("error not_allowed")
            && text(&r).contains("; the user can approve it by running: plughost ")
            && text(&r).contains("approve net-tool"),
        "{}",
        text(&r)
    );
    s.client.cancel().await.unwrap();

    // A client that declines: still refused, nothing persisted.
    let s = connect(&sandbox, Some(false)).await;
    let r = s
        .client
        .call_tool(call("net_fetch", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(
        s.asked.lock().unwrap()[0].contains("network"),
        "the question names the permission"
    );
    assert!(!sandbox.state().join("approvals.json").exists());
    s.client.cancel().await.unwrap();

    // A client that accepts: the call runs and the approval is persisted.
    let s = connect(&sandbox, Some(true)).await;
    let r = s
        .client
        .call_tool(call("net_fetch", json!({})))
        .await
        .unwrap();
    assert_eq!((text(&r).as_str(), r.is_error), ("fetched", Some(false)));
    let saved: Value =
        serde_json::from_slice(&std::fs::read(sandbox.state().join("approvals.json")).unwrap())
            .unwrap();
    assert_eq!(
        saved["plugins"]["net-tool"]["permissions"],
        json!(["network"])
    );
    s.client.cancel().await.unwrap();
}

/// A 2026-07-28 client is asked the same question in an `input_required`
/// round of its `tools/call` when it declared elicitation: a no leaves the
/// tool refused and nothing saved, a yes runs it and saves the approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_approves_in_an_input_required_round() {
    let sandbox = Sandbox::new();
    network_plugin(&sandbox);

    // Without elicitation: refused with the approval it needs, as for a
    // 2025-11-25 client, never an input request it did not declare.
    let s = mcp_client::connect_2026(&sandbox, None).await;
    let r = s
        .client
        .call_tool(call("net_fetch", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(
        text(&r).contains("error not_allowed") && text(&r).contains("approve net-tool"),
        "{}",
        text(&r)
    );
    s.client.cancel().await.unwrap();

    let s = mcp_client::connect_2026(&sandbox, Some(false)).await;
    let r = s
        .client
        .call_tool(call("net_fetch", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(
        s.asked.lock().unwrap()[0].contains("network"),
        "the question names the permission"
    );
    assert!(!sandbox.state().join("approvals.json").exists());
    s.client.cancel().await.unwrap();

    let s = mcp_client::connect_2026(&sandbox, Some(true)).await;
    let r = s
        .client
        .call_tool(call("net_fetch", json!({})))
        .await
        .unwrap();
    assert_eq!((text(&r).as_str(), r.is_error), ("fetched", Some(false)));
    assert_eq!(s.asked.lock().unwrap().len(), 1);
    let saved: Value =
        serde_json::from_slice(&std::fs::read(sandbox.state().join("approvals.json")).unwrap())
            .unwrap();
    assert_eq!(
        saved["plugins"]["net-tool"]["permissions"],
        json!(["network"])
    );
    s.client.cancel().await.unwrap();
}

#[test]
fn http_requires_the_token_and_serves_a_real_client() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let sandbox = Sandbox::new().with_examples();
    let server = util::http::Server::start(&sandbox, &[]);
    let port = server.port;
    let out = std::process::Command::new("python3")
        .arg(util::repo().join("tests/mcp_http_client.py"))
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg("0123456789abcdef0123456789abcdef")
        .env("PYTHONPATH", &pydeps)
        .output()
        .unwrap();
    drop(server);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["no_token_status"], 401);
    assert_eq!(report["wrong_token_status"], 401);
    assert_eq!(report["server"], "plughost");
    assert!(
        report["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("hello_greet"))
    );
    assert_eq!(
        report["call"],
        json!({"text": "Hello, HTTP!", "is_error": false})
    );
    assert_eq!(report["host_error"]["is_error"], true);
    assert!(
        report["host_error"]["text"]
            .as_str()
            .unwrap()
            .starts_with("error invalid_args")
    );
}

#[test]
fn http_refuses_a_non_loopback_address_unless_told() {
    let sandbox = Sandbox::new();
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["serve", "--http", "0.0.0.0:0"])
            .stdin(Stdio::null());
        c
    });
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("--allow-remote"),
        "{}",
        util::stderr(&out)
    );
}

#[test]
fn http_generates_a_private_token_on_first_use() {
    let sandbox = Sandbox::new();
    let token = plughost::serve::load_or_create_token(None, &sandbox.state()).unwrap();
    assert_eq!(token.len(), 64);
    let path = sandbox.state().join("http-token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        plughost::serve::load_or_create_token(None, &sandbox.state()).unwrap(),
        token,
        "reused"
    );
}

/// SIGTERM to `plughost serve` stops it and kills the calls in flight.
#[test]
fn sigterm_stops_the_server_and_kills_calls_in_flight() {
    use std::io::Write;
    let sandbox = Sandbox::new().with_fixtures(&["slow-sleeper"]);
    let dir = sandbox.plugins().join("slow-sleeper");
    let mut server = sandbox
        .cmd()
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    // Eight calls, the signal once the first runs: the others are starting
    // their processes or waiting for them, and each must be killed before
    // the server exits.
    for id in 2..10 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "slow_sleep", "arguments": {}}});
        writeln!(stdin, "{call}").unwrap();
    }
    util::block_until_processes(&dir, 1);
    // SAFETY: kill takes plain integers; the pid is our own child's.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().unwrap();
    assert!(status.success(), "{status:?}");
    util::assert_no_processes_in(&dir);
    drop(stdin);
}

/// The status code of one raw HTTP POST to /mcp with an `Origin` header.
fn status_with_origin(port: u16, origin: &str) -> u16 {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\nAuthorization: Bearer 0123456789abcdef0123456789abcdef\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn http_refuses_a_foreign_origin_unless_allowed() {
    let sandbox = Sandbox::new().with_examples();
    let server = util::http::Server::start(&sandbox, &["--allow-origin", "http://localhost:3000"]);
    let port = server.port;
    let foreign = status_with_origin(port, "http://evil.example");
    let own = status_with_origin(port, &format!("http://127.0.0.1:{port}"));
    let allowed = status_with_origin(port, "http://localhost:3000");
    drop(server);
    assert_eq!(foreign, 403, "DNS rebinding: a page of another origin");
    assert_eq!(own, 200);
    assert_eq!(allowed, 200);
}

#[tokio::test]
async fn every_progress_notification_precedes_the_result_on_the_wire() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    // A burst of progress right before the answer: the race of the last ones
    // with the result.
    let sandbox = Sandbox::new();
    sandbox.write_plugin(
        "burst",
        &util::manifest("burst", "report_progress"),
        "#!/bin/bash\ncat >/dev/null\nfor i in $(seq 1 50); do echo \"::progress:: $i/50\" >&2; done\necho '{\"result\":\"done\"}'\n",
    );
    let mut server = tokio::process::Command::new(crate::util::plughost())
        .arg("--plugins-dir")
        .arg(sandbox.plugins())
        .arg("--state-dir")
        .arg(sandbox.state())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await.unwrap();
    lines.next_line().await.unwrap().unwrap();
    for id in 1..=3 {
        let call = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"report_progress\",\"arguments\":{{}},\"_meta\":{{\"progressToken\":\"t{id}\"}}}}}}\n"
        );
        stdin.write_all(call.as_bytes()).await.unwrap();
        let mut progress = 0;
        loop {
            let line = lines.next_line().await.unwrap().expect("a message");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "notifications/progress" {
                assert_eq!(message["params"]["progressToken"], format!("t{id}"));
                progress += 1;
            } else if message["id"] == id {
                assert_eq!(
                    progress, 50,
                    "call {id}: every progress line before the result"
                );
                break;
            }
        }
    }
    // Nothing arrives after the last result.
    let late = tokio::time::timeout(Duration::from_millis(300), lines.next_line()).await;
    assert!(late.is_err(), "a message after the last result: {late:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_error_kind_leads_the_mcp_text_and_a_rejected_tool_is_explained() {
    let sandbox = Sandbox::new().with_fixtures(&["odd-results"]);
    let mut m = util::manifest("weather", "weather_now");
    m["version"] = json!("one");
    sandbox.write_plugin("weather", &m, &util::answer_script("x"));
    let s = connect(&sandbox, None).await;
    let r = s
        .client
        .call_tool(call("reported_kind", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r), "error not_found: No such city");
    let r = s
        .client
        .call_tool(call("weather_now", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.starts_with("error not_found:") && t.contains("plugin \"weather\""),
        "{t}"
    );
}
