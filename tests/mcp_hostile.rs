//! plughost as the client of MCP servers that misbehave, against a
//! hand-written server (`tests/fixtures/mcp/raw.py`) that records every
//! message it reads: one that never answers the `server/discover` probe, or
//! answers it late; one that ends or never acknowledges its
//! `subscriptions/listen` streams; one that asks its client too much.
#![cfg(feature = "mcp-server")]

use crate::mcp_plugins::host_with;
use crate::util;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plughost::approval::Approval;
use plughost::client::{BoxFuture, CallClient, ClientCapabilities, ClientRequestError};
use plughost::protocol::Invocation;
use plughost::{CallOptions, PluginHost};
use serde_json::{Value, json};
use util::Sandbox;

const PLUGIN: &str = "raw";

/// The raw server as a plugin behaving as `mode` says; returns the file
/// where it records what it reads.
fn raw_plugin(sandbox: &Sandbox, mode: &str) -> PathBuf {
    let dir = sandbox.plugins().join(PLUGIN);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        util::repo().join("tests/fixtures/mcp/raw.py"),
        dir.join("server.py"),
    )
    .unwrap();
    let seen = sandbox.state().parent().unwrap().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let manifest = json!({"name": PLUGIN, "version": "1.0.0", "description": "A server that misbehaves.",
        "entrypoint": "main.sh", "protocol": "mcp", "tool_prefix": "r_",
        "permissions": [format!("filesystem:write:{}", seen.display())]});
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    util::write_executable(
        &dir.join("main.sh"),
        &format!(
            "#!/bin/sh\nRAW_MODE='{mode}' RAW_SEEN='{}' PYTHONDONTWRITEBYTECODE=1 exec '{}' \"$(dirname \"$0\")/server.py\"\n",
            seen.join("messages").display(),
            util::real_python3().display()
        ),
    );
    seen.join("messages")
}

/// The methods the server read, in order.
fn methods(seen: &Path) -> Vec<String> {
    std::fs::read_to_string(seen)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect()
}

async fn call_t(host: &PluginHost) -> String {
    match host.call("r_t", json!({}), Invocation::default()).await {
        Ok(o) => o.result,
        Err(e) => panic!("the call failed: {e}"),
    }
}

/// A 2025-11-25 server that ignores what it does not know before
/// `initialize` gets the handshake once the probe has waited half the
/// start-up time; its listing remembers the revision, so the next start
/// sends the handshake at once.
#[tokio::test]
async fn a_server_that_never_answers_the_probe_gets_the_handshake_and_no_probe_later() {
    let sandbox = Sandbox::new();
    let seen = raw_plugin(&sandbox, "legacy-silent");
    let host = host_with(&sandbox, Duration::from_secs(4));
    assert_eq!(host.approve(PLUGIN).await.unwrap(), Approval::Approved);
    assert_eq!(call_t(&host).await, "ok");
    let first = methods(&seen);
    assert_eq!(first[..2], ["server/discover", "initialize"], "{first:?}");
    drop(host);

    // A later start of plughost: the cached listing says 2025-11-25.
    std::fs::remove_file(&seen).unwrap();
    let host = host_with(&sandbox, Duration::from_secs(4));
    assert_eq!(call_t(&host).await, "ok");
    let later = methods(&seen);
    assert_eq!(
        later.first().map(String::as_str),
        Some("initialize"),
        "{later:?}"
    );
    assert!(!later.iter().any(|m| m == "server/discover"), "{later:?}");
}

/// A server that puts the id of its answers last, after a long result (the
/// probe's answer too), is read at 2026-07-28: the probe's answer is found
/// wherever its id is, and never reaches the handshake.
#[tokio::test]
async fn an_answer_whose_id_comes_last_is_read() {
    let sandbox = Sandbox::new();
    let seen = raw_plugin(&sandbox, "id-last");
    let host = host_with(&sandbox, Duration::from_secs(20));
    assert_eq!(host.approve(PLUGIN).await.unwrap(), Approval::Approved);
    assert_eq!(call_t(&host).await, "ok");
    let methods = methods(&seen);
    assert_eq!(methods.first().map(String::as_str), Some("server/discover"));
    assert!(!methods.iter().any(|m| m == "initialize"), "{methods:?}");
}

/// A server of an older SDK that exits on `server/discover` (a method it
/// cannot validate) is started once more with `initialize` alone, and
/// works; the next start, knowing its revision, sends no probe.
#[tokio::test]
async fn a_server_that_exits_on_the_probe_is_started_again_without_it() {
    let sandbox = Sandbox::new();
    let seen = raw_plugin(&sandbox, "legacy-exit");
    let host = host_with(&sandbox, Duration::from_secs(20));
    assert_eq!(host.approve(PLUGIN).await.unwrap(), Approval::Approved);
    assert_eq!(call_t(&host).await, "ok");
    let read = methods(&seen);
    assert_eq!(read[..2], ["server/discover", "initialize"], "{read:?}");
    host.stop_workers().await;
    std::fs::write(&seen, "").unwrap();
    assert_eq!(call_t(&host).await, "ok");
    assert_eq!(
        methods(&seen).first().map(String::as_str),
        Some("initialize")
    );
}

/// A server slow to start answers the probe after plughost gave up on it
/// and sent the handshake: the late answer is dropped, and the handshake's
/// answer that follows it is read.
#[tokio::test]
async fn a_late_answer_to_the_probe_does_not_break_the_handshake() {
    for mode in ["legacy sleep=3", "sleep=3"] {
        let sandbox = Sandbox::new();
        let seen = raw_plugin(&sandbox, mode);
        let host = host_with(&sandbox, Duration::from_secs(4));
        assert_eq!(
            host.approve(PLUGIN).await.unwrap(),
            Approval::Approved,
            "{mode}"
        );
        assert_eq!(call_t(&host).await, "ok", "{mode}");
        let read = methods(&seen);
        assert_eq!(
            read[..2],
            ["server/discover", "initialize"],
            "{mode}: {read:?}"
        );
    }
}

/// A stream the server ends as soon as it acknowledged it is opened again,
/// but after pauses that grow, never in a loop.
#[tokio::test]
async fn a_listen_stream_that_ends_at_once_is_opened_again_slowly() {
    let sandbox = Sandbox::new();
    let seen = raw_plugin(&sandbox, "listen-end");
    let host = host_with(&sandbox, Duration::from_secs(10));
    assert_eq!(host.approve(PLUGIN).await.unwrap(), Approval::Approved);
    assert_eq!(call_t(&host).await, "ok");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let listens = methods(&seen)
        .iter()
        .filter(|m| *m == "subscriptions/listen")
        .count();
    // Two starts (approval, call), each opening at once and then after
    // 0.2, 0.4, 0.8, 1.6 s…: a dozen at most in these seconds.
    assert!((2..=12).contains(&listens), "{listens} listen requests");
}

/// A server that never acknowledges `subscriptions/listen` still starts
/// and answers: the stream is given up after a few seconds and asked for
/// again later.
#[tokio::test]
async fn a_server_that_never_acknowledges_listen_still_serves() {
    let sandbox = Sandbox::new();
    let seen = raw_plugin(&sandbox, "listen-hang");
    let host = host_with(&sandbox, Duration::from_secs(15));
    assert_eq!(host.approve(PLUGIN).await.unwrap(), Approval::Approved);
    assert_eq!(call_t(&host).await, "ok");
    assert!(methods(&seen).iter().any(|m| m == "subscriptions/listen"));
}

/// A client that declines whatever it is asked, and counts.
#[derive(Default)]
struct Declines {
    asked: Mutex<usize>,
}

impl CallClient for Declines {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::all(true)
    }
    fn session(&self) -> String {
        "declines".into()
    }
    fn request<'a>(
        &'a self,
        _: &'a str,
        _: Value,
    ) -> BoxFuture<'a, Result<Value, ClientRequestError>> {
        Box::pin(async move {
            *self.asked.lock().unwrap() += 1;
            Ok(json!({"action": "decline"}))
        })
    }
}

/// A server may not ask a call's client without end: a round of more than
/// 16 questions is refused before one is asked, and a server that asks
/// again after every answer is stopped after 16 rounds.
#[tokio::test]
async fn a_server_that_asks_too_much_is_stopped() {
    for (mode, asked, says) in [
        ("ask=50", 0, "asked 50 questions in one round"),
        ("ask=1", 16, "asked for input 16 times"),
    ] {
        let sandbox = Sandbox::new();
        raw_plugin(&sandbox, mode);
        let host = host_with(&sandbox, Duration::from_secs(20));
        assert_eq!(host.approve(PLUGIN).await.unwrap(), Approval::Approved);
        let client = Arc::new(Declines::default());
        let options = CallOptions {
            client: Some(client.clone()),
            ..CallOptions::default()
        };
        let text = match host.call_with("r_t", json!({}), options).await {
            Ok(o) => o.result,
            Err(e) => e.to_string(),
        };
        assert!(text.contains(says), "{mode}: {text}");
        assert_eq!(*client.asked.lock().unwrap(), asked, "{mode}");
    }
}
