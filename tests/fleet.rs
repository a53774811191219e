//! One approval state for many hosts: `--approvals FILE`. `approve` and
//! `revoke` write the file (not the state folder's); `serve` only reads it,
//! follows its changes within seconds (a revoke, a ConfigMap-style link
//! swapped to a new version) and fails closed on a missing or broken file.
#![cfg(feature = "mcp-server")]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp_client;
use crate::util::{self, Sandbox, stderr, stdout};

/// A plugin that needs approval (it asks for the network), and one whose
/// tool answers `ok`.
fn fleet_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    let mut manifest = util::manifest("greeter", "greet");
    manifest["permissions"] = json!(["network"]);
    sandbox.write_plugin("greeter", &manifest, &util::answer_script("hello"));
    sandbox
}

fn with_approvals(sandbox: &Sandbox, file: &Path, args: &[&str]) -> std::process::Output {
    let mut c = sandbox.cmd();
    c.arg("--approvals").arg(file).args(args);
    util::run(c)
}

/// `plughost serve` reading `file`, with an MCP client that approves what
/// it is asked to (`approve`), or cannot be asked (`None`).
async fn serve(sandbox: &Sandbox, file: &Path, approve: Option<bool>) -> mcp_client::Session {
    let mut c = tokio::process::Command::new(util::plughost());
    c.arg("--plugins-dir")
        .arg(sandbox.plugins())
        .arg("--state-dir")
        .arg(sandbox.state())
        .arg("--approvals")
        .arg(file)
        .arg("serve");
    mcp_client::connect_command(c, approve).await
}

async fn greet(s: &mcp_client::Session) -> (bool, String) {
    let r = s
        .client
        .call_tool(mcp_client::call("greet", json!({})))
        .await
        .unwrap();
    (r.is_error != Some(true), mcp_client::text(&r))
}

/// Calls `greet` until `done` holds of its answer, for at most 3 s.
async fn until(s: &mcp_client::Session, done: impl Fn(bool, &str) -> bool) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (ok, text) = greet(s).await;
        if done(ok, &text) || Instant::now() > deadline {
            return (ok, text);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn replicas_share_an_approvals_file_they_only_read() {
    let sandbox = fleet_sandbox();
    let fleet = sandbox.root.path().join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let file = fleet.join("approvals.json");

    // A file beside the plugins and state folders is refused: its folder
    // is kept from every plugin.
    let beside = sandbox.root.path().join("approvals.json");
    let out = with_approvals(&sandbox, &beside, &["approve", "greeter", "--yes"]);
    assert!(
        !out.status.success()
            && stderr(&out).contains("keep the approvals file in a folder of its own"),
        "{}",
        stderr(&out)
    );

    // The operator approves into the file; the state folder gets none.
    let out = with_approvals(&sandbox, &file, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"greeter\"")
    );
    assert!(!sandbox.state().join("approvals.json").exists());
    let out = with_approvals(&sandbox, &file, &["call", "greet", "{}"]);
    assert_eq!(stdout(&out).trim(), "hello", "{}", stderr(&out));

    // A replica answers from it, and never writes it: a client's approval
    // of another plugin is refused with the reason.
    let before = std::fs::read(&file).unwrap();
    let s = serve(&sandbox, &file, Some(true)).await;
    assert_eq!(greet(&s).await, (true, "hello".to_owned()));
    let mut other = util::manifest("other", "other_tool");
    other["permissions"] = json!(["network"]);
    sandbox.write_plugin("other", &other, &util::answer_script("no"));
    let deadline = Instant::now() + Duration::from_secs(5);
    let refused = loop {
        let r = s
            .client
            .call_tool(mcp_client::call("other_tool", json!({})))
            .await
            .unwrap();
        let text = mcp_client::text(&r);
        if text.contains("only read here") || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        refused.contains("are only read here, never written"),
        "{refused}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // A revoke where the file is kept reaches the replica within seconds.
    let out = with_approvals(&sandbox, &file, &["revoke", "greeter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let started = Instant::now();
    let (ok, text) = until(&s, |ok, _| !ok).await;
    assert!(!ok, "still answered after a revoke: {text}");
    assert!(started.elapsed() < Duration::from_secs(3));

    // A broken file, then a missing one, withhold everything, saying why.
    let out = with_approvals(&sandbox, &file, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(until(&s, |ok, _| ok).await, (true, "hello".to_owned()));
    std::fs::write(&file, "{").unwrap();
    let (ok, text) = until(&s, |ok, _| !ok).await;
    assert!(!ok && text.contains("is corrupt"), "{text}");
    std::fs::remove_file(&file).unwrap();
    let (ok, text) = until(&s, |_, t| t.contains("does not exist")).await;
    assert!(!ok && text.contains("does not exist"), "{text}");
    s.client.cancel().await.unwrap();
}

/// A Kubernetes ConfigMap is a link (`approvals.json` -> `..data/approvals.json`,
/// `..data` -> a folder per version) swapped to a new version: followed.
#[tokio::test]
async fn a_configmap_style_link_is_followed_to_its_new_version() {
    let sandbox = fleet_sandbox();
    let mount = sandbox.root.path().join("mount");
    let v1 = mount.join("..2026_11_27_v1");
    let v2 = mount.join("..2026_11_27_v2");
    std::fs::create_dir_all(&v1).unwrap();
    std::fs::create_dir_all(&v2).unwrap();
    // v1 approves the plugin, v2 approves nothing.
    let scratch = sandbox.root.path().join("scratch/approvals.json");
    std::fs::create_dir_all(scratch.parent().unwrap()).unwrap();
    let out = with_approvals(&sandbox, &scratch, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::copy(&scratch, v1.join("approvals.json")).unwrap();
    std::fs::write(
        v2.join("approvals.json"),
        "{\"version\": 1, \"plugins\": {}}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("..2026_11_27_v1", mount.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/approvals.json", mount.join("approvals.json")).unwrap();

    let file = mount.join("approvals.json");
    let s = serve(&sandbox, &file, None).await;
    assert_eq!(greet(&s).await, (true, "hello".to_owned()));
    // The swap as the kubelet makes it: a new link renamed over `..data`.
    std::os::unix::fs::symlink("..2026_11_27_v2", mount.join("..data_tmp")).unwrap();
    std::fs::rename(mount.join("..data_tmp"), mount.join("..data")).unwrap();
    let (ok, text) = until(&s, |ok, _| !ok).await;
    assert!(!ok && text.contains("needs approval"), "{text}");
    s.client.cancel().await.unwrap();
}

/// A process listening on `port` (a replica, the balancer), killed on drop.
struct Listening {
    child: std::process::Child,
    port: u16,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Listening {
    /// Starts `cmd`, which listens on `port`, and waits until it does.
    fn start(mut cmd: std::process::Command, port: u16) -> Listening {
        let child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let listening = Listening { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nothing listens on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        listening
    }
}

/// One `plughost serve --http` replica with a state folder of its own and
/// the fleet's approvals file, on a port the kernel picks.
fn replica(sandbox: &Sandbox, n: usize, approvals: &Path, token: &Path) -> Listening {
    replica_at(sandbox, n, approvals, token, 0)
}

/// [`replica`] on `port` (a replica started again where it was).
fn replica_at(sandbox: &Sandbox, n: usize, approvals: &Path, token: &Path, port: u16) -> Listening {
    replica_with(sandbox, n, approvals, token, port, |_| {})
}

/// [`replica_at`], its command changed by `change` before it starts.
fn replica_with(
    sandbox: &Sandbox,
    n: usize,
    approvals: &Path,
    token: &Path,
    port: u16,
    change: impl FnOnce(&mut std::process::Command),
) -> Listening {
    let state = sandbox.root.path().join(format!("replica-{n}"));
    // A log of each start's own: the port is read from it.
    let log = state.with_extension(format!("{port}.log"));
    let _ = std::fs::remove_file(&log);
    let mut cmd = std::process::Command::new(util::plughost());
    cmd.arg("--plugins-dir")
        .arg(sandbox.plugins())
        .arg("--state-dir")
        .arg(&state)
        .arg("--approvals")
        .arg(approvals)
        .args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .arg("--token-file")
        .arg(token)
        .arg("--log-file")
        .arg(&log);
    change(&mut cmd);
    let (child, port) = util::serving_http(&mut cmd, &log);
    Listening { child, port }
}

/// Whether Debian's HAProxy is here (CI fails without it).
fn haproxy_here() -> bool {
    util::prerequisite(
        "haproxy (Debian's package) to balance the replicas",
        std::process::Command::new("haproxy")
            .arg("-v")
            .output()
            .is_ok(),
    )
}

/// HAProxy in front of `replicas`: round robin, no stickiness, health
/// checks on `/readyz`, a connection refused by a dead replica sent to
/// another.
fn balancer(dir: &Path, replicas: &[u16]) -> Listening {
    let port = util::free_port();
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, p)| format!("  server r{i} 127.0.0.1:{p} check inter 200ms fall 2 rise 2\n"))
        .collect();
    let config = format!(
        "global\n  maxconn 512\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n  retries 3\n  option redispatch\n\
         frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
         backend replicas\n  balance roundrobin\n  option httpchk GET /readyz\n  http-check expect status 200\n{servers}"
    );
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, config).unwrap();
    let mut cmd = std::process::Command::new("haproxy");
    cmd.arg("-db").arg("-f").arg(&file);
    Listening::start(cmd, port)
}

/// A 2026-07-28 `tools/call` of `greet` through `port`: the answer's text,
/// or why there is none (an HTTP status, a JSON-RPC error).
fn call_2026(port: u16, id: u64) -> Result<String, String> {
    let client = util::http::Client {
        port,
        token: util::http::TOKEN.to_owned(),
        session: None,
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "greet", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}});
    let s = client.send(
        "POST",
        body.to_string().as_bytes(),
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "greet"),
        ],
    );
    let reply = util::http::read_reply(s);
    if reply.status != 200 {
        return Err(format!("HTTP {}: {}", reply.status, reply.body));
    }
    let answer = reply.answer(&json!(id)).ok_or("no answer")?;
    match answer["result"]["content"][0]["text"].as_str() {
        Some(t) if answer["result"]["isError"] != json!(true) => Ok(t.to_owned()),
        _ => Err(answer.to_string()),
    }
}

/// Three replicas behind HAProxy, one approvals file: every call of 8
/// clients is answered by whichever replica gets it; one replica killed
/// (SIGKILL) and another drained (SIGTERM) in the middle of the load cost
/// at most the calls in flight on the killed one, each with an HTTP error,
/// and none hangs; a revoke in the file reaches every replica within 2 s.
#[test]
fn replicas_behind_haproxy_answer_every_call() {
    if !haproxy_here() {
        return;
    }
    let sandbox = Sandbox::new();
    let mut manifest = util::manifest("greeter", "greet");
    manifest["permissions"] = json!(["network"]);
    // Each replica's data folder is its own: the answer names the replica.
    sandbox.write_plugin(
        "greeter",
        &manifest,
        "#!/usr/bin/env bash\ncat >/dev/null\nprintf '{\"result\":\"%s\"}' \"$PLUGHOST_DATA_DIR\"\n",
    );
    let fleet = sandbox.root.path().join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let file = fleet.join("approvals.json");
    let out = with_approvals(&sandbox, &file, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let token = sandbox.root.path().join("token");
    std::fs::write(&token, util::http::TOKEN).unwrap();
    let mut replicas: Vec<Listening> = (0..3)
        .map(|n| replica(&sandbox, n, &file, &token))
        .collect();
    let balancer = balancer(
        sandbox.root.path(),
        &replicas.iter().map(|r| r.port).collect::<Vec<_>>(),
    );
    let port = balancer.port;

    // Round robin: every replica answers.
    let seen: std::collections::BTreeSet<String> = (0..9)
        .map(|i| call_2026(port, i).unwrap())
        .map(|dir| dir.split("/replica-").nth(1).unwrap_or("?").to_owned())
        .collect();
    assert_eq!(seen.len(), 3, "{seen:?}");

    // The load: 8 clients, 2,000 calls; replica 0 killed, replica 1 drained.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let clients: Vec<_> = (0..8u64)
        .map(|c| {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut failed = Vec::new();
                for i in 0..250u64 {
                    if let Err(e) = call_2026(port, 1000 + c * 1000 + i) {
                        failed.push(e);
                    }
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                failed
            })
        })
        .collect();
    let at = |n: usize| {
        while done.load(std::sync::atomic::Ordering::Relaxed) < n {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    at(600);
    replicas[0].child.kill().unwrap();
    at(1200);
    // SAFETY: a signal to a replica this test started.
    unsafe {
        libc::kill(replicas[1].child.id() as i32, libc::SIGTERM);
    }
    let failed: Vec<String> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    eprintln!(
        "fleet: {} of 2000 calls failed with replica 0 killed and replica 1 drained: {failed:?}",
        failed.len()
    );
    assert!(
        failed.len() <= 8 && failed.iter().all(|e| e.starts_with("HTTP 50")),
        "{} calls failed: {failed:?}",
        failed.len()
    );
    let drained = replicas[1].child.wait().unwrap();
    assert!(drained.success(), "{drained:?}");

    // A revoke reaches the replica left within 2 s.
    let out = with_approvals(&sandbox, &file, &["revoke", "greeter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let started = Instant::now();
    loop {
        match call_2026(port, 9000) {
            Err(e) if e.contains("needs approval") => break,
            r => assert!(
                started.elapsed() < Duration::from_secs(2),
                "still answered 2 s after the revoke: {r:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(balancer);
}

/// A 2026-07-28 `subscriptions/listen` stream for tool changes through
/// `port`, read until it is acknowledged.
fn listen_2026(port: u16) -> (std::net::TcpStream, String) {
    let client = util::http::Client {
        port,
        token: util::http::TOKEN.to_owned(),
        session: None,
    };
    crate::mcp_http::listen(&client, 1)
}

/// Reads `s` until `what` was read, the stream ended, or it was silent for
/// its read timeout.
fn read_until(s: &mut std::net::TcpStream, what: &str) -> String {
    use std::io::Read;
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&read).contains(what) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => read.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&read).into_owned()
}

/// A `subscriptions/listen` stream through HAProxy outlives the replica it
/// was on the only way a stateless stream can: the replica's death ends it
/// (it never hangs), and the client's reconnect reaches a replica that
/// streams the changes from then on.
#[test]
fn a_listen_stream_survives_a_replica_restart_by_reconnecting() {
    if !haproxy_here() {
        return;
    }
    let sandbox = fleet_sandbox();
    let fleet = sandbox.root.path().join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let file = fleet.join("approvals.json");
    let out = with_approvals(&sandbox, &file, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let token = sandbox.root.path().join("token");
    std::fs::write(&token, util::http::TOKEN).unwrap();
    let mut replicas: Vec<Listening> = (0..2)
        .map(|n| replica(&sandbox, n, &file, &token))
        .collect();
    let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();
    let balancer = balancer(sandbox.root.path(), &ports);

    let (mut stream, read) = listen_2026(balancer.port);
    assert!(read.contains("acknowledged"), "{read}");
    // Each replica killed and started again where it was: the one that
    // held the stream takes it down with it.
    for (n, port) in ports.iter().enumerate() {
        replicas[n].child.kill().unwrap();
        let _ = replicas[n].child.wait();
        replicas[n] = replica_at(&sandbox, n, &file, &token, *port);
    }
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let started = Instant::now();
    let rest = read_until(&mut stream, "never sent");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the stream of a killed replica hangs: {rest}"
    );

    // Reconnected: a tool approved now reaches the new stream.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut stream, read) = loop {
        let (s, read) = listen_2026(balancer.port);
        if read.contains("acknowledged") || Instant::now() > deadline {
            break (s, read);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(read.contains("acknowledged"), "{read}");
    sandbox.write_plugin(
        "second",
        &util::manifest("second", "second_tool"),
        &util::answer_script("two"),
    );
    let out = with_approvals(&sandbox, &file, &["approve", "second", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let notified = read_until(&mut stream, "notifications/tools/list_changed");
    assert!(
        notified.contains("notifications/tools/list_changed"),
        "no change reached the reconnected stream: {notified}"
    );
    drop(balancer);
}

/// A 2026-07-28 request of `method` with `params` to `port`: the JSON-RPC
/// answer (its `result` or `error`).
fn request_2026(
    port: u16,
    id: u64,
    method: &str,
    mut params: serde_json::Value,
) -> serde_json::Value {
    let client = util::http::Client {
        port,
        token: util::http::TOKEN.to_owned(),
        session: None,
    };
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}});
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let reply = util::http::read_reply(client.send(
        "POST",
        body.to_string().as_bytes(),
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Mcp-Name", &name),
        ],
    ));
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.answer(&json!(id)).expect("an answer")
}

/// The one input request of an `input_required` result: its key, and the
/// round's `requestState`.
fn round_of(answer: &serde_json::Value) -> (String, String) {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let asked = result["inputRequests"].as_object().unwrap();
    assert_eq!(asked.len(), 1, "{answer}");
    let key = asked.keys().next().unwrap().clone();
    assert_eq!(asked[&key]["method"], "elicitation/create", "{answer}");
    (key, result["requestState"].as_str().unwrap().to_owned())
}

/// An `input_required` round of a 2026-07-28 server, begun on one replica,
/// is continued by another given the same `--request-state-key` (and back
/// again for the next round): the round's state travels sealed, the call
/// does not wait anywhere. A replica with another key, a changed state and
/// a state of another request are refused, each saying what to do.
#[test]
fn a_round_one_replica_began_is_continued_by_another() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let sandbox = Sandbox::new();
    let fixtures = util::repo().join("tests/conformance");
    sandbox.write_plugin(
        "fixture",
        &json!({"name": "fixture", "version": "1.0.0",
                "description": "The conformance fixture on the Python SDK.",
                "entrypoint": "main.sh", "protocol": "mcp",
                "permissions": [format!("filesystem:read:{}", fixtures.display()),
                                format!("filesystem:read:{}", pydeps.display())],
                "env": ["FIXTURE_STATE_KEY"]}),
        &format!(
            "#!/bin/sh\nPYTHONPATH='{}' PYTHONDONTWRITEBYTECODE=1 exec '{}' '{}'\n",
            pydeps.display(),
            util::real_python3().display(),
            fixtures.join("fixture_2026.py").display()
        ),
    );
    let fleet = sandbox.root.path().join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let file = fleet.join("approvals.json");
    let out = with_approvals(&sandbox, &file, &["approve", "fixture", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let token = sandbox.root.path().join("token");
    std::fs::write(&token, util::http::TOKEN).unwrap();
    let key = fleet.join("request-state.key");
    std::fs::write(
        &key,
        "9f2c41d07be85a36c1e4f90d2b7a6358e0c4d1f92a7b3e6c5d8f01a2b4c6e8d0\n",
    )
    .unwrap();
    let with_key = |cmd: &mut std::process::Command| {
        cmd.arg("--request-state-key").arg(&key).env(
            "FIXTURE_STATE_KEY",
            "the fleet's key for the fixture's own requestState",
        );
    };
    let a = replica_with(&sandbox, 0, &file, &token, 0, with_key);
    let b = replica_with(&sandbox, 1, &file, &token, 0, with_key);
    let other = replica_with(&sandbox, 2, &file, &token, 0, |cmd| {
        cmd.env(
            "FIXTURE_STATE_KEY",
            "the fleet's key for the fixture's own requestState",
        );
    });

    // A replica that never saw the server listed (its state folder has no
    // listing) offers the approved server's tools on its own, before any
    // call of one.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = request_2026(other.port, 100, "tools/list", json!({}));
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        if names.contains(&"test_input_required_result_multi_round") {
            break;
        }
        assert!(Instant::now() < deadline, "never listed: {listed}");
        std::thread::sleep(Duration::from_millis(200));
    }

    let call = |port, id, extra: serde_json::Value| {
        let mut params = json!({"name": "test_input_required_result_multi_round", "arguments": {}});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        request_2026(port, id, "tools/call", params)
    };
    let (first_key, first_state) = round_of(&call(a.port, 1, json!({})));
    let first_answer = json!({first_key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    // Continued elsewhere: the next round comes from replica 1.
    let (second_key, second_state) = round_of(&call(
        b.port,
        2,
        json!({"requestState": first_state, "inputResponses": first_answer}),
    ));
    assert_ne!(first_key, second_key);
    // And back on replica 0, which never saw the second round.
    let done = call(
        a.port,
        3,
        json!({"requestState": second_state,
               "inputResponses": {second_key.clone(): {"action": "accept", "content": {"color": "teal"}}}}),
    );
    assert_eq!(
        done["result"]["content"][0]["text"], "Ada likes teal",
        "{done}"
    );

    // A replica with another key cannot open the state, and says why.
    let refused = call(
        other.port,
        4,
        json!({"requestState": first_state, "inputResponses": first_answer}),
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("--request-state-key"), "{refused}");
    // A changed state, and the state sent with another tool, are refused.
    // (a character in the middle: the last may only carry padding bits)
    let middle = first_state.len() / 2;
    let swapped = if &first_state[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    let changed = format!(
        "{}{swapped}{}",
        &first_state[..middle],
        &first_state[middle + 1..]
    );
    let refused = call(
        b.port,
        5,
        json!({"requestState": changed, "inputResponses": first_answer}),
    );
    assert!(refused["error"]["message"].as_str().is_some(), "{refused}");
    let elsewhere = request_2026(
        b.port,
        6,
        "tools/call",
        json!({"name": "test_input_required_result_request_state", "arguments": {},
               "requestState": first_state, "inputResponses": first_answer}),
    );
    assert!(
        elsewhere["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("belongs to another request")),
        "{elsewhere}"
    );
}

/// Tenants of a fleet each have their own approvals file, named by
/// `--approvals` with `{tenant}` in it: alice's approval is not bob's (whose
/// missing file approves nothing, saying so), and a revoke in alice's file
/// reaches alice. Anything but `serve --tokens`
/// given such a name refuses it, saying what to name.
#[test]
fn each_tenant_has_its_own_approvals_file() {
    let sandbox = fleet_sandbox();
    let fleet = sandbox.root.path().join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let template = fleet.join("{tenant}.json");
    let out = with_approvals(&sandbox, &template, &["approve", "greeter", "--yes"]);
    assert!(
        !out.status.success() && stderr(&out).contains("only `serve --tokens` fills in {tenant}"),
        "{}",
        stderr(&out)
    );
    let in_folder = fleet.join("{tenant}/approvals.json");
    let out = with_approvals(&sandbox, &in_folder, &["approve", "greeter", "--yes"]);
    assert!(
        !out.status.success() && stderr(&out).contains("in the file's name, not in a folder's"),
        "{}",
        stderr(&out)
    );
    let alice_file = fleet.join("alice.json");
    let out = with_approvals(&sandbox, &alice_file, &["approve", "greeter", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let (alice, bob) = ("alice-0123456789abcdef", "bob-0123456789abcdef00");
    let tokens = sandbox.root.path().join("tokens");
    std::fs::write(&tokens, format!("alice {alice}\nbob {bob}\n")).unwrap();
    let server = util::http::Server::start(
        &sandbox,
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--approvals",
            template.to_str().unwrap(),
        ],
    );
    let text = |token: &str, id| {
        let r = server
            .client_with(token)
            .initialize()
            .call(id, "greet", json!({}));
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(text(alice, 1), "hello");
    // Bob has no file yet: nothing is approved for him, and he is told why.
    let refused = text(bob, 2);
    assert!(refused.contains("bob.json does not exist"), "{refused}");

    let out = with_approvals(&sandbox, &alice_file, &["revoke", "greeter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let now = text(alice, 3);
        if now.contains("needs approval") {
            break;
        }
        assert!(Instant::now() < deadline, "alice still answered: {now}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
