//! `plughost serve --http` under clients that vanish, flood, resume, delete
//! their session or send what is not JSON-RPC; and tenants side by side.
//! Real clients: the official Python SDK, and raw sockets where a test must
//! drop a connection or send bytes no SDK would.
#![cfg(feature = "mcp-server")]

use crate::util;

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use util::Sandbox;
use util::http::{Client, Server, TOKEN, read_reply};

/// The Python SDK client of `tests/mcp_http_hostile.py` in `mode`.
fn python(mode: &str, server: &Server, token: &str, tool: &str, args: Value) -> Option<Command> {
    let pydeps = util::python_mcp_sdk()?;
    let mut c = Command::new("python3");
    c.arg(util::repo().join("tests/mcp_http_hostile.py"))
        .args([mode, &server.url(), token, tool, &args.to_string()])
        .env("PYTHONPATH", pydeps);
    Some(c)
}

/// Waits until `dir` holds no process, or panics after `within`.
fn wait_gone(dir: &std::path::Path, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        if util::processes_in(dir).is_empty() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "processes left in {} after {within:?}: {:#?}",
            dir.display(),
            util::processes_in(dir)
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn slow_answer(sandbox: &Sandbox, secs: u32) {
    sandbox.write_plugin(
        "slow-answer",
        &util::manifest("slow-answer", "slow_answer"),
        &format!("#!/usr/bin/env bash\ncat >/dev/null\nsleep {secs}\necho '{{\"result\":\"late answer\"}}'\n"),
    );
}

#[test]
fn a_killed_client_leaves_no_process_of_its_calls_once_the_resume_window_passed() {
    let sandbox = Sandbox::new().with_fixtures(&["many-children"]);
    let dir = sandbox.plugins().join("many-children");
    let server = Server::start(&sandbox, &["--resume-window", "2"]);
    let Some(mut cmd) = python("hang", &server, TOKEN, "many_children", json!({})) else {
        return;
    };
    let mut client = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(client.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "calling");
    util::block_until_processes(&dir, 51);
    client.kill().unwrap();
    client.wait().unwrap();
    // Within the window the call goes on: the client could resume its stream.
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        util::processes_in(&dir).len() > 50,
        "cancelled before the resume window passed"
    );
    let gone = wait_gone(&dir, Duration::from_secs(8));
    assert!(gone > Duration::from_millis(800), "gone after {gone:?}");
    let log = server.log_text();
    assert!(
        log.contains("did not resume within 2000 ms"),
        "the log says why: {log}"
    );
    // The server goes on serving.
    let c = server.client().initialize();
    let r = c.call(1, "many_children", json!({"x": 1}));
    assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
}

#[test]
fn a_client_that_resumes_within_the_window_gets_the_answer() {
    let sandbox = Sandbox::new();
    slow_answer(&sandbox, 2);
    let server = Server::start(&sandbox, &["--resume-window", "5"]);
    let c = server.client().initialize();
    let (stream, event_id) = c.start_call(1, "slow_answer");
    assert!(event_id.ends_with("/0"), "{event_id}");
    drop(stream);
    std::thread::sleep(Duration::from_millis(500));
    let resumed = read_reply(c.send("GET", b"", &[("Last-Event-ID", &event_id)]));
    assert_eq!(resumed.status, 200, "{resumed:?}");
    let answer = resumed
        .answer(&json!(1))
        .expect("the answer on the resumed stream");
    assert_eq!(
        answer["result"]["content"][0]["text"], "late answer",
        "{answer}"
    );
}

#[test]
fn twenty_dropped_clients_delay_a_new_clients_fast_call_by_no_more_than_the_window() {
    let sandbox = Sandbox::new()
        .with_fixtures(&["slow-sleeper"])
        .with_examples();
    let dir = sandbox.plugins().join("slow-sleeper");
    let server = Server::start(&sandbox, &["--concurrency", "16", "--resume-window", "3"]);
    let clients: Vec<Client> = (0..20).map(|_| server.client().initialize()).collect();
    // The new client is connected and ready before the others drop.
    let Some(mut cmd) = python(
        "ready-fast",
        &server,
        TOKEN,
        "hello_greet",
        json!({"name": "late"}),
    ) else {
        return;
    };
    let mut fast = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(fast.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    // Each starts a call that would run for ten minutes, then drops its connection.
    for c in &clients {
        let (stream, _) = c.start_call(1, "slow_sleep");
        drop(stream);
    }
    util::block_until_processes(&dir, 32);
    std::io::Write::write_all(&mut fast.stdin.take().unwrap(), b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(fast.wait().unwrap().success());
    let report: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(report["text"], "Hello, late!");
    // The call waits for a slot until the window of the dropped calls has
    // passed, and no longer.
    let ms = report["ms"].as_f64().unwrap();
    eprintln!("fast call: {ms:.0} ms");
    assert!(ms < 3000.0 + 1500.0, "the fast call took {ms:.0} ms");
    wait_gone(&dir, Duration::from_secs(5));
}

#[test]
fn a_flood_from_one_session_holds_only_its_share_and_delete_cancels_it_all() {
    let sandbox = Sandbox::new()
        .with_fixtures(&["slow-sleeper"])
        .with_examples();
    let dir = sandbox.plugins().join("slow-sleeper");
    // 8 slots: 2 per session; a long window, so only DELETE ends the calls.
    let server = Server::start(&sandbox, &["--concurrency", "8", "--resume-window", "60"]);
    let flood = server.client().initialize();
    let streams: Vec<_> = (1..=10)
        .map(|id| flood.start_call(id, "slow_sleep").0)
        .collect();
    // bash and its sleep per call: two calls run, eight wait their turn.
    util::block_until_processes(&dir, 4);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        util::processes_in(&dir).len(),
        4,
        "{:#?}",
        util::processes_in(&dir)
    );
    // Another client is served at once.
    let other = server.client().initialize();
    let start = Instant::now();
    let r = other.call(1, "hello_greet", json!({"name": "next"}));
    assert_eq!(r["result"]["content"][0]["text"], "Hello, next!");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );

    // DELETE ends the session: running and queued calls are cancelled.
    let d = flood.delete();
    assert_eq!(d.status, 204, "{d:?}");
    wait_gone(&dir, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(500));
    assert!(util::processes_in(&dir).is_empty(), "a queued call started");
    for s in streams {
        let _ = read_reply(s);
    }
    assert_eq!(flood.delete().status, 404, "an unknown session");
    let mut none = flood.clone();
    none.session = None;
    assert_eq!(none.delete().status, 400, "DELETE without a session id");
    // A request of a deleted session is 404 too.
    assert_eq!(
        flood
            .post(&Client::call_message(
                11,
                "hello_greet",
                json!({"name": "x"})
            ))
            .status,
        404
    );
}

#[test]
fn the_sdk_closes_its_session_without_a_warning() {
    let sandbox = Sandbox::new().with_examples();
    let server = Server::start(&sandbox, &[]);
    let Some(mut cmd) = python(
        "fast",
        &server,
        TOKEN,
        "hello_greet",
        json!({"name": "sdk"}),
    ) else {
        return;
    };
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("WARNING") && !stderr.contains("termination failed"),
        "{stderr}"
    );
    let log = server.log_text();
    assert!(
        log.contains("deleted"),
        "the SDK deleted its session: {log}"
    );
}

#[test]
fn every_malformed_post_gets_the_right_error_and_the_session_goes_on() {
    let sandbox = Sandbox::new().with_examples();
    let server = Server::start(&sandbox, &["--max-message-bytes", "65536"]);
    let c = server.client().initialize();
    let error = |r: &util::http::Reply| -> (Value, i64, String) {
        let m = r
            .messages()
            .pop()
            .unwrap_or_else(|| panic!("no JSON-RPC body: {r:?}"));
        (
            m["id"].clone(),
            m["error"]["code"].as_i64().unwrap_or_default(),
            m["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    let deep = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
    for (body, status, id, code) in [
        (b"not json".to_vec(), 400, Value::Null, -32700),
        (b"\xff\xfe{}".to_vec(), 400, Value::Null, -32700),
        (deep.into_bytes(), 400, Value::Null, -32700),
        (
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}"#.to_vec(),
            200,
            json!(5),
            -32602,
        ),
        (
            br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"hello_greet","arguments":"Ada"}}"#.to_vec(),
            200,
            json!(6),
            -32602,
        ),
        (
            br#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#.to_vec(),
            400,
            Value::Null,
            -32600,
        ),
    ] {
        let r = c.request("POST", &body);
        assert_eq!(r.status, status, "{r:?}");
        let (got_id, got_code, _) = error(&r);
        assert_eq!((got_id, got_code), (id, code), "{r:?}");
    }
    // Over the limit: 413, the limit named, the id found in the first bytes.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"hello_greet","arguments":{{"name":"{}"}}}}}}"#,
        "x".repeat(100_000)
    );
    let r = c.request("POST", big.as_bytes());
    assert_eq!(r.status, 413, "{r:?}");
    let (id, code, message) = error(&r);
    assert_eq!((id, code), (json!(8), -32600));
    assert!(message.contains("65536 bytes"), "{message}");
    // A request outside a session is refused with its id (no stateless bypass).
    let mut lone = c.clone();
    lone.session = None;
    let r = lone.post(&Client::call_message(
        9,
        "hello_greet",
        json!({"name": "x"}),
    ));
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(error(&r).0, json!(9));
    // The session goes on.
    let r = c.call(10, "hello_greet", json!({"name": "after"}));
    assert_eq!(r["result"]["content"][0]["text"], "Hello, after!");
    let log = server.log_text();
    assert!(
        log.matches("refused a message").count() >= 7,
        "each refusal is logged: {log}"
    );
}

#[test]
fn two_tenants_side_by_side_keep_their_approvals_data_and_sessions_apart() {
    let sandbox = Sandbox::new().with_examples();
    let mut m = util::manifest("net-tool", "net_fetch");
    m["permissions"] = json!(["network"]);
    sandbox.write_plugin("net-tool", &m, &util::answer_script("fetched"));
    let (alice_token, bob_token) = ("alice-0123456789abcdef", "bob-0123456789abcdef00");
    let tokens = sandbox.root.path().join("tokens");
    std::fs::write(
        &tokens,
        format!("# tenants\nalice {alice_token}\nbob   {bob_token}\n"),
    )
    .unwrap();
    // Alice approves the network plugin in her own state folder.
    let alice_state = sandbox.state().join("tenants/alice");
    let approved = util::run({
        let mut c = Command::new(crate::util::plughost());
        c.arg("--plugins-dir")
            .arg(sandbox.plugins())
            .arg("--state-dir")
            .arg(&alice_state)
            .args(["approve", "net-tool", "--yes"]);
        c
    });
    assert!(approved.status.success(), "{}", util::stderr(&approved));

    let server = Server::start(&sandbox, &["--tokens", tokens.to_str().unwrap()]);
    let alice = server.client_with(alice_token).initialize();
    let bob = server.client_with(bob_token).initialize();

    let text = |r: &Value| {
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let r = alice.call(1, "net_fetch", json!({}));
    assert_eq!(text(&r), "fetched", "{r}");
    let r = bob.call(1, "net_fetch", json!({}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        text(&r).contains("not_allowed") && text(&r).contains("tenants/bob"),
        "bob's refusal names his own state folder: {r}"
    );
    let listed = |c: &Client| {
        let r = c.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let tools = r.answer(&json!(2)).unwrap()["result"]["tools"].clone();
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "net_fetch")
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        !listed(&alice).contains("needs approval"),
        "{}",
        listed(&alice)
    );
    assert!(listed(&bob).contains("needs approval"), "{}", listed(&bob));

    // Data folders are apart.
    alice.call(3, "kv_set", json!({"key": "k", "value": "alice's"}));
    let r = bob.call(4, "kv_get", json!({"key": "k"}));
    assert_eq!(
        r["result"]["isError"], true,
        "bob cannot read alice's data: {r}"
    );
    let r = alice.call(5, "kv_get", json!({"key": "k"}));
    assert_eq!(text(&r), "alice's");
    assert!(alice_state.join("data/kv-store").is_dir());
    assert!(!sandbox.state().join("data").exists());

    // A session belongs to its tenant; other tokens get nothing.
    let mut stolen = bob.clone();
    stolen.session = alice.session.clone();
    assert_eq!(
        stolen
            .post(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}))
            .status,
        404
    );
    assert_eq!(
        server
            .client_with("nobody-0123456789abcdef")
            .post(&json!({}))
            .status,
        401
    );
    assert_eq!(server.client_with(TOKEN).post(&json!({})).status, 401);
}

/// Opens a 2026-07-28 `subscriptions/listen` stream and reads until the
/// server acknowledged it or refused it: the stream (open while it lives)
/// and what was read.
pub(crate) fn listen(client: &Client, id: i64) -> (std::net::TcpStream, String) {
    use std::io::Read;
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}},
                   "notifications": {"toolsListChanged": true}}});
    let mut s = client.send(
        "POST",
        body.to_string().as_bytes(),
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "subscriptions/listen"),
        ],
    );
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&read).contains("acknowledged")
        && !String::from_utf8_lossy(&read).contains("\"error\"")
    {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => read.extend_from_slice(&buf[..n]),
        }
    }
    (s, String::from_utf8_lossy(&read).into_owned())
}

/// A tenant holds as many `subscriptions/listen` streams as sessions: one
/// more is refused in a sentence that says what to do, and closing one
/// makes room.
#[test]
fn listen_streams_are_held_to_the_session_limit() {
    let sandbox = Sandbox::new();
    slow_answer(&sandbox, 1);
    let server = Server::start(&sandbox, &["--max-sessions", "2"]);
    let client = server.client();
    let (first, read) = listen(&client, 1);
    assert!(
        read.contains("notifications/subscriptions/acknowledged"),
        "{read}"
    );
    let (_second, read) = listen(&client, 2);
    assert!(
        read.contains("notifications/subscriptions/acknowledged"),
        "{read}"
    );
    let (_, read) = listen(&client, 3);
    assert!(
        read.contains("2 subscriptions/listen streams are open") && read.contains("close one"),
        "{read}"
    );
    drop(first);
    // The server notices the closed stream when it next writes to it, or
    // when the connection's end reaches it: within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_again, read) = listen(&client, 4);
        if read.contains("notifications/subscriptions/acknowledged") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no room after a stream closed: {read}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_tenant_at_its_session_limit_ends_the_quietest_session_and_refuses_when_all_are_busy() {
    let sandbox = Sandbox::new();
    slow_answer(&sandbox, 3);
    let server = Server::start(&sandbox, &["--max-sessions", "2"]);
    let quiet = server.client().initialize();
    let busy = server.client().initialize();
    let _busy_call = busy.start_call(1, "slow_answer");

    // A third session ends the quiet one, whose id is then unknown.
    let third = server.client().initialize();
    let r = quiet.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert_eq!(r.status, 404, "{r:?}");
    assert!(
        server
            .log_text()
            .contains("ended to make room for a new one: 2 sessions is the limit"),
        "{}",
        server.log_text()
    );

    // Both sessions busy: a new one is refused, saying why and what to do.
    let _third_call = third.start_call(1, "slow_answer");
    let r = server
        .client()
        .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}));
    assert_eq!(r.status, 503, "{r:?}");
    let error = &r.answer(&json!(0)).expect("an answer with the id")["error"];
    let message = error["message"].as_str().unwrap();
    assert!(
        error["code"] == -32000
            && message.contains("all 2 sessions this server keeps")
            && message.contains("DELETE"),
        "{error}"
    );
    // The busy sessions go on.
    assert_eq!(
        busy.call(3, "slow_answer", json!({}))["result"]["content"][0]["text"],
        "late answer"
    );
}

/// A tenant's plugin granted every file reads none of plughost's
/// credentials: not another tenant's secrets or approvals, not the base
/// state folder's secret store, not the tokens file (whose tokens would let
/// it act as another tenant), not the request-state key.
#[test]
fn a_tenants_plugin_reads_no_other_tenants_secrets_nor_the_tokens() {
    if !plughost::sandbox::SandboxSupport::here().filesystem {
        util::prerequisite("Landlock (file system confinement)", false);
        return;
    }
    let sandbox = Sandbox::new();
    let mut m = util::manifest("reader", "reader_read");
    m["permissions"] = json!(["filesystem:read"]);
    m["tools"][0]["input_schema"] =
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    sandbox.write_plugin(
        "reader",
        &m,
        "#!/bin/sh\npath=$(sed 's/.*\"path\": *\"\\([^\"]*\\)\".*/\\1/')\nif out=$(cat \"$path\" 2>&1); then printf '{\"result\":\"read\"}\\n'; else printf '{\"result\":\"refused\"}\\n'; fi\n",
    );
    let (alice_token, bob_token) = ("alice-0123456789abcdef", "bob-0123456789abcdef00");
    let tokens = sandbox.root.path().join("tokens");
    std::fs::write(&tokens, format!("alice {alice_token}\nbob {bob_token}\n")).unwrap();
    let in_state = |state: &std::path::Path, args: &[&str], input: Option<&str>| {
        let mut c = Command::new(crate::util::plughost());
        c.arg("--plugins-dir")
            .arg(sandbox.plugins())
            .arg("--state-dir")
            .arg(state)
            .args(args);
        let out = util::run_input(c, input.unwrap_or(""));
        assert!(out.status.success(), "{args:?}: {}", util::stderr(&out));
    };
    let alice_state = sandbox.state().join("tenants/alice");
    let bob_state = sandbox.state().join("tenants/bob");
    in_state(&alice_state, &["approve", "reader", "--yes"], None);
    in_state(
        &bob_state,
        &["secret", "set", "BOB_TOKEN"],
        Some("bob-secret\n"),
    );
    in_state(
        &sandbox.state(),
        &["secret", "set", "BASE_TOKEN"],
        Some("base-secret\n"),
    );
    std::fs::create_dir_all(&alice_state).unwrap();
    std::fs::write(alice_state.join("mine.txt"), "alice's own").unwrap();

    let key = sandbox.root.path().join("request-state.key");
    std::fs::write(&key, "5b0e7c2a91d84f63a7e1c0b94d2f8e61c3a5b7d9e0f2a4c6").unwrap();
    let server = Server::start(
        &sandbox,
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--request-state-key",
            key.to_str().unwrap(),
        ],
    );
    let alice = server.client_with(alice_token).initialize();
    let read = |id: i64, path: &std::path::Path| {
        let r = alice.call(
            id,
            "reader_read",
            json!({"path": path.display().to_string()}),
        );
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    // The plugin reads what it was granted (a control: the script works).
    let readable = sandbox.root.path().join("readable.txt");
    std::fs::write(&readable, "x").unwrap();
    assert_eq!(read(1, &readable), "read");
    for (id, path) in [
        (2, bob_state.join("secrets.json")),
        (3, bob_state.join("secrets.lock")),
        (4, sandbox.state().join("secrets.json")),
        (5, tokens.clone()),
        (6, alice_state.join("mine.txt")),
        (7, key.clone()),
    ] {
        assert!(path.exists(), "{}", path.display());
        assert_eq!(read(id, &path), "refused", "{}", path.display());
    }
}

/// `GET PATH` without a token; the status and the body.
fn probe(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let status = raw.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, raw.split("\r\n\r\n").nth(1)?.to_owned()))
}

/// A load balancer's probes need no token; a server asked to stop (SIGTERM)
/// takes no new connection, answers the call it took, then exits.
#[test]
fn a_server_asked_to_stop_answers_the_calls_it_took_then_exits() {
    let sandbox = Sandbox::new();
    slow_answer(&sandbox, 2);
    let mut server = Server::start(&sandbox, &[]);
    assert_eq!(probe(server.port, "/healthz"), Some((200, "ok".into())));
    assert_eq!(probe(server.port, "/readyz"), Some((200, "ready".into())));
    let client = server.client().initialize();
    let (stream, _) = client.start_call(7, "slow_answer");
    // SAFETY: a signal to the server this test started.
    unsafe {
        libc::kill(server.child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while probe(server.port, "/healthz").is_some() {
        assert!(Instant::now() < deadline, "still taking connections");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The rest of the call's stream, whose headers start_call read.
    let mut rest = String::new();
    let mut stream = stream;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = std::io::Read::read_to_string(&mut stream, &mut rest);
    assert!(
        rest.contains(r#""id":7,"result""#) && rest.contains("late answer"),
        "the call in flight is not answered: {rest}\n{}",
        server.log_text()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "it did not exit after draining");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let log = server.log_text();
    assert!(
        log.contains("drained: every call in flight was answered"),
        "{log}"
    );
}
