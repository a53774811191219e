//! `plughost serve` on stdio under a client that sends what is not JSON-RPC:
//! raw pipes, every line answered as JSON-RPC promises.
#![cfg(feature = "mcp-server")]

use crate::util;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use util::Sandbox;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_malformed_line_gets_the_right_error_and_the_next_request_is_answered() {
    let sandbox = Sandbox::new().with_examples();
    let mut server = tokio::process::Command::new(crate::util::plughost())
        .arg("--plugins-dir")
        .arg(sandbox.plugins())
        .arg("--state-dir")
        .arg(sandbox.state())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut stderr = server.stderr.take().unwrap();
    let mut next = async move || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };

    // Before initialize: a notification is dropped (rmcp would end the
    // session), garbage is answered.
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\nnot json\n")
        .await
        .unwrap();
    let m = next().await;
    assert_eq!(
        (&m["id"], &m["error"]["code"]),
        (&Value::Null, &json!(-32700)),
        "{m}"
    );
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await.unwrap();
    assert_eq!(next().await["id"], 0);

    let deep = "[".repeat(100_000);
    let oversized = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"hello_greet","arguments":{{"name":"{}"}}}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let cases: Vec<(&str, Vec<u8>, Value, i64)> = vec![
        ("not JSON", b"{\"jsonrpc\":".to_vec(), Value::Null, -32700),
        ("not UTF-8", b"\xff\xfe\xfd".to_vec(), Value::Null, -32700),
        ("nested 100k deep", deep.into_bytes(), Value::Null, -32700),
        (
            "params as an array",
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":["hello_greet"]}"#.to_vec(),
            json!(5),
            -32602,
        ),
        (
            "arguments not an object",
            br#"{"jsonrpc":"2.0","id":"six","method":"tools/call","params":{"name":"hello_greet","arguments":"Ada"}}"#.to_vec(),
            json!("six"),
            -32602,
        ),
        (
            "a batch",
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(),
            Value::Null,
            -32600,
        ),
        (
            "not JSON-RPC 2.0",
            br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#.to_vec(),
            json!(7),
            -32600,
        ),
        ("over the limit", oversized.into_bytes(), json!(8), -32600),
        (
            "an unknown method",
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/nope"}"#.to_vec(),
            json!(9),
            -32601,
        ),
    ];
    for (i, (what, bytes, id, code)) in cases.into_iter().enumerate() {
        stdin.write_all(&bytes).await.unwrap();
        let ping = 100 + i as i64;
        stdin
            .write_all(
                format!("\n{{\"jsonrpc\":\"2.0\",\"id\":{ping},\"method\":\"ping\"}}\n").as_bytes(),
            )
            .await
            .unwrap();
        // The error and the next request's answer (rmcp may answer in either order).
        let (a, b) = (next().await, next().await);
        let (error, pong) = if a["id"] == ping { (b, a) } else { (a, b) };
        assert_eq!(
            (&error["id"], &error["error"]["code"]),
            (&id, &json!(code)),
            "{what}: {error}"
        );
        if what == "over the limit" {
            let message = error["error"]["message"].as_str().unwrap();
            assert!(message.contains("4194304 bytes"), "{message}");
        }
        assert_eq!(pong["id"], ping, "{what}: the next request is answered");
    }
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"tools/call\",\"params\":{\"name\":\"hello_greet\",\"arguments\":{\"name\":\"Ada\"}}}\n").await.unwrap();
    let r = next().await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello, Ada!", "{r}");

    drop(stdin);
    assert!(server.wait().await.unwrap().success());
    let mut log = String::new();
    stderr.read_to_string(&mut log).await.unwrap();
    assert_eq!(
        log.matches("refused a message").count(),
        9,
        "a log line per refusal (the unknown method is rmcp's to answer): {log}"
    );
    assert!(log.contains("before initialize"), "{log}");
}
