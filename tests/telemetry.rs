//! Traces and metrics the way operators collect them.
//!
//! - A real Prometheus (Debian's `prometheus`) scrapes `plughost serve
//!   --metrics` and answers queries of the call counter and the duration
//!   histogram through its own HTTP API.
//! - An OTLP receiver written in Python (the official `opentelemetry-proto`
//!   definitions) gets plughost's spans and those of plugins that use the
//!   OpenTelemetry SDK: a per-call process, a persistent worker and an MCP
//!   server each continue the trace of the MCP request that called them.
//! - An embedder's own tracer provider gets the spans, and the trace context
//!   reaches plugins with or without one.
#![cfg(all(feature = "mcp-server", feature = "otel", feature = "prometheus"))]

use crate::util;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use plughost::protocol::Invocation;
use plughost::protocol::TraceContext;
use plughost::{CallOptions, PluginHost};
use serde_json::{Value, json};
use util::Sandbox;
use util::http::{Client, Server};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A child process killed on drop.
pub(crate) struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------- Prometheus

/// A bash plugin answering `result` to each call; persistent when asked.
fn bash_plugin(sandbox: &Sandbox, name: &str, tool: &str, script: &str, persistent: bool) {
    let mut m = util::manifest(name, tool);
    if persistent {
        m["persistent"] = json!({});
    }
    sandbox.write_plugin(name, &m, script);
}

/// GET `path` on `port`; the status and body.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, dechunk(&body))
}

/// The body of a chunked response, or the body as it is.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    loop {
        let Some((size, after)) = rest.split_once("\r\n") else {
            return body.to_owned();
        };
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_owned();
        };
        if n == 0 {
            return out;
        }
        if after.len() < n {
            return body.to_owned();
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
}

/// A PromQL query through Prometheus's HTTP API: each series' labels and value.
fn query(port: u16, promql: &str) -> Vec<(Value, f64)> {
    let encoded: String = promql
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = get(port, &format!("/api/v1/query?query={encoded}"));
    assert_eq!(status, 200, "{promql}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["status"], "success", "{promql}: {body}");
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let value = r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
            (r["metric"].clone(), value)
        })
        .collect()
}

/// Waits until `promql` has exactly one series with value `want`.
fn wait_for(port: u16, promql: &str, want: f64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = query(port, promql);
        if got.len() == 1 && got[0].1 == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{promql}: wanted {want}, Prometheus says {got:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Prometheus scraping `target` every second, on a free loopback port, its
/// data in a folder of `sandbox`.
fn start_prometheus(sandbox: &Sandbox, target: u16) -> (Killed, u16) {
    let dir = sandbox.root.path().join("prometheus");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: plughost\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        ),
    )
    .unwrap();
    let port = util::free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("prometheus starts");
    let prometheus = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() || get(port, "/-/ready").0 != 200 {
        assert!(
            Instant::now() < deadline,
            "Prometheus never got ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (prometheus, port)
}

#[test]
fn prometheus_scrapes_calls_durations_workers_and_sessions() {
    let found = Command::new("prometheus")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !util::prerequisite("prometheus (Debian's package)", found) {
        return;
    }
    let sandbox = Sandbox::new();
    bash_plugin(
        &sandbox,
        "tiny",
        "tiny_ok",
        &util::answer_script("ok"),
        false,
    );
    bash_plugin(
        &sandbox,
        "broken",
        "broken_fail",
        "#!/usr/bin/env bash\ncat >/dev/null\nexit 3\n",
        false,
    );
    bash_plugin(
        &sandbox,
        "keeper",
        "keeper_ok",
        "#!/usr/bin/env bash\nwhile IFS= read -r line; do printf '{\"result\":\"kept\"}\\n'; done\n",
        true,
    );
    let server = Server::start(&sandbox, &["--metrics", "127.0.0.1:0"]);
    let metrics = metrics_port(&server);
    let client = server.client().initialize();
    for id in 1..=3 {
        assert_eq!(
            client.call(id, "tiny_ok", json!({}))["result"]["isError"],
            false
        );
    }
    assert_eq!(
        client.call(4, "broken_fail", json!({}))["result"]["isError"],
        true
    );
    assert_eq!(
        client.call(5, "keeper_ok", json!({}))["result"]["isError"],
        false
    );
    // A name no plugin has: counted, but never a label of its own.
    client.call(6, "nope_made_up_by_a_client", json!({}));

    let (status, text) = get(metrics, "/metrics");
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains(r#"plughost_calls_total{tenant="default",tool="tiny_ok",plugin="tiny",outcome="ok",kind=""} 3"#),
        "{text}"
    );
    assert!(!text.contains("nope_made_up"), "{text}");
    assert!(text.trim_end().ends_with("# EOF"), "OpenMetrics text");
    assert_eq!(get(metrics, "/mcp").0, 404);
    assert_eq!(
        server
            .client_with("wrong-token-0123456789")
            .post(&json!({}))
            .status,
        401,
        "the MCP endpoint keeps its token"
    );

    let (_prometheus, port) = start_prometheus(&sandbox, metrics);
    wait_for(port, r#"up{job="plughost"}"#, 1.0);
    wait_for(
        port,
        r#"sum(plughost_calls_total{tool="tiny_ok",plugin="tiny",outcome="ok"})"#,
        3.0,
    );
    wait_for(
        port,
        r#"plughost_calls_total{tool="broken_fail",outcome="error",kind="failed"}"#,
        1.0,
    );
    wait_for(
        port,
        r#"plughost_calls_total{tool="(unknown)",plugin="(unknown)",kind="not_found"}"#,
        1.0,
    );
    wait_for(
        port,
        r#"plughost_call_duration_seconds_count{tool="tiny_ok"}"#,
        3.0,
    );
    wait_for(
        port,
        r#"plughost_call_duration_seconds_bucket{tool="tiny_ok",le="+Inf"}"#,
        3.0,
    );
    let median = query(
        port,
        r#"histogram_quantile(0.5, sum by (le) (plughost_call_duration_seconds_bucket{tool="tiny_ok"}))"#,
    );
    assert!(
        median.len() == 1 && median[0].1 > 0.0 && median[0].1 < 30.0,
        "the median call duration: {median:?}"
    );
    wait_for(
        port,
        r#"plughost_workers{plugin="keeper",state="running"}"#,
        1.0,
    );
    wait_for(
        port,
        r#"plughost_worker_starts_total{plugin="keeper"}"#,
        1.0,
    );
    wait_for(port, r#"plughost_mcp_sessions{tenant="default"}"#, 1.0);
    wait_for(port, r#"sum(plughost_calls_in_flight)"#, 0.0);
    wait_for(port, r#"sum(plughost_calls_waiting)"#, 0.0);
    assert!(
        query(port, r#"{tool=~"nope.*"}"#).is_empty(),
        "a client's made-up tool name never became a label"
    );
}

#[test]
fn metrics_listen_on_loopback_unless_remote_is_allowed() {
    let sandbox = Sandbox::new();
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["serve", "--metrics", "0.0.0.0:0"])
            .stdin(Stdio::null());
        c
    });
    assert_eq!(out.status.code(), Some(2), "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains("not a loopback address; pass --allow-remote"),
        "{}",
        util::stderr(&out)
    );
}

// ---------------------------------------------------------------- OTLP

/// The OTLP receiver: its port and the file it appends spans to.
pub(crate) fn start_receiver(sandbox: &Sandbox, deps: &Path) -> (Killed, u16, PathBuf) {
    let spans = sandbox.root.path().join("spans.jsonl");
    let mut child = Command::new("python3")
        .arg(util::repo().join("tests/fixtures/otel/receiver.py"))
        .arg(&spans)
        .env("PYTHONPATH", deps)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the receiver prints its port");
    (Killed(child), port, spans)
}

/// A plugin folder running a Python fixture of `tests/fixtures/otel` with
/// the OpenTelemetry packages, exporting to the receiver.
fn python_plugin(
    sandbox: &Sandbox,
    deps: &Path,
    receiver: u16,
    name: &str,
    script: &str,
    extra: Value,
) {
    let dir = sandbox.plugins().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for from in [
        util::repo().join("tests/fixtures/otel").join(script),
        util::repo().join("sdk/python/plughost_plugin.py"),
    ] {
        std::fs::copy(&from, dir.join(from.file_name().unwrap())).unwrap();
    }
    let mut manifest = json!({
        "name": name,
        "version": "1.2.3",
        "description": "Traced test plugin.",
        "entrypoint": "main.sh",
        "permissions": ["network", format!("filesystem:read:{}", deps.display())],
    });
    for (k, v) in extra.as_object().unwrap() {
        manifest[k] = v.clone();
    }
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let tools: Vec<&str> = manifest["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["name"].as_str().unwrap()).collect())
        .unwrap_or_default();
    util::write_executable(
        &dir.join("main.sh"),
        &format!(
            "#!/bin/sh\nexport PYTHONPATH='{}' PYTHONDONTWRITEBYTECODE=1 OTEL_EXPORTER_OTLP_ENDPOINT='http://127.0.0.1:{receiver}'\nexec '{}' \"$(dirname \"$0\")/{script}\" {}\n",
            deps.display(),
            util::real_python3().display(),
            tools.join(" ")
        ),
    );
}

fn tool(name: &str) -> Value {
    json!([{"name": name, "description": "Makes a span.", "input_schema": {"type": "object"}}])
}

/// The spans received so far.
fn spans(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits for a span of `trace` that `pick` accepts.
fn wait_span(file: &Path, trace: &str, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = spans(file);
        if let Some(s) = all.iter().find(|s| s["trace_id"] == trace && pick(s)) {
            return s.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {what} in trace {trace}; received: {all:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A tools/call whose `_meta` carries `traceparent` and `tracestate`.
fn traced_call(client: &Client, id: i64, tool: &str, traceparent: &str) -> Value {
    let r = client.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {},
                   "_meta": {"traceparent": traceparent, "tracestate": "test=1"}}}));
    assert_eq!(r.status, 200, "{r:?}");
    r.answer(&json!(id)).unwrap()["result"].clone()
}

#[test]
fn spans_of_an_mcp_call_continue_its_trace_into_the_plugins() {
    let Some(deps) = util::python_otel() else {
        return;
    };
    let sandbox = Sandbox::new();
    let (_receiver, port, file) = start_receiver(&sandbox, &deps);
    python_plugin(
        &sandbox,
        &deps,
        port,
        "traced",
        "plugin.py",
        json!({"tools": tool("traced_call")}),
    );
    python_plugin(
        &sandbox,
        &deps,
        port,
        "traced-worker",
        "plugin.py",
        json!({"tools": tool("traced_worker"), "persistent": {}}),
    );
    python_plugin(
        &sandbox,
        &deps,
        port,
        "traced-server",
        "server.py",
        json!({"protocol": "mcp", "tool_prefix": "srv_"}),
    );
    // Granted the collector's address alone: the export goes through the
    // egress proxy.
    python_plugin(
        &sandbox,
        &deps,
        port,
        "traced-granted",
        "plugin.py",
        json!({"tools": tool("traced_granted"), "permissions": [
            format!("network:127.0.0.1:{port}"),
            format!("filesystem:read:{}", deps.display()),
        ]}),
    );
    for name in ["traced", "traced-worker", "traced-server", "traced-granted"] {
        let out = util::run({
            let mut c = sandbox.cmd();
            c.args(["approve", name, "--yes"]);
            c
        });
        assert!(out.status.success(), "{}", util::stderr(&out));
    }
    let endpoint = format!("http://127.0.0.1:{port}");
    let server = Server::start_env(
        &sandbox,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SERVICE_NAME", "plughost-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let client = server.client().initialize();

    for (id, tool, plugin, trace, child) in [
        (
            1,
            "traced_call",
            "traced",
            "11111111111111111111111111111111",
            "plughost.spawn",
        ),
        (
            2,
            "traced_worker",
            "traced-worker",
            "22222222222222222222222222222222",
            "plughost.worker.start",
        ),
        (
            3,
            "srv_work",
            "traced-server",
            "33333333333333333333333333333333",
            "plughost.worker.start",
        ),
        (
            6,
            "traced_granted",
            "traced-granted",
            "66666666666666666666666666666666",
            "plughost.spawn",
        ),
    ] {
        let caller = "0123456789abcdef";
        let result = traced_call(&client, id, tool, &format!("00-{trace}-{caller}-01"));
        assert_eq!(result["isError"], false, "{tool}: {result}");

        // plughost's span: the child of the MCP request's context.
        let call = wait_span(&file, trace, "plughost span", |s| {
            s["service"] == "plughost-test" && s["name"] == format!("execute_tool {tool}")
        });
        assert_eq!(call["parent_span_id"], caller, "{call:#}");
        assert_eq!(call["scope"], "plughost");
        assert_eq!(call["kind"], 2, "a server span: {call:#}");
        let a = &call["attributes"];
        assert_eq!(a["gen_ai.tool.name"], tool);
        assert_eq!(a["gen_ai.tool.call.id"], id.to_string());
        assert_eq!(a["plughost.plugin.name"], plugin);
        assert_eq!(a["plughost.plugin.version"], "1.2.3");
        assert_eq!(a["plughost.call.source"], "mcp");
        assert_eq!(a["plughost.call.outcome"], "ok");
        assert!(
            ["full", "partial"].contains(&a["plughost.sandbox"].as_str().unwrap_or("")),
            "{a:#}"
        );
        assert!(a["plughost.call.run_ms"].as_f64().unwrap() > 0.0, "{a:#}");
        assert!(a["plughost.call.wait_ms"].as_f64().is_some(), "{a:#}");
        assert!(a["plughost.call.bytes_out"].as_i64().unwrap() > 0, "{a:#}");
        let call_id = call["span_id"].as_str().unwrap();

        // What was started for the call: a child of plughost's span.
        let started = wait_span(&file, trace, child, |s| s["name"] == child);
        assert_eq!(started["parent_span_id"], call_id, "{started:#}");

        // The plugin's own span continues plughost's, tracestate and all.
        let own = wait_span(&file, trace, "the plugin's span", |s| {
            s["service"] != "plughost-test"
        });
        assert_eq!(own["parent_span_id"], call_id, "{tool}: {own:#}");
        assert_eq!(own["trace_state"], "test=1", "{own:#}");
        if plugin != "traced-server" {
            // The SDK gave the tool what it continued: plughost's span.
            let text = result["content"][0]["text"].as_str().unwrap();
            assert_eq!(text, format!("00-{trace}-{call_id}-01"));
        }
    }

    // Over HTTP, the request's own traceparent header does when `_meta` has none.
    let body = Client::call_message(4, "traced_call", json!({})).to_string();
    let by_header = "00-44444444444444444444444444444444-0123456789abcdef-01";
    let r =
        util::http::read_reply(client.send("POST", body.as_bytes(), &[("traceparent", by_header)]));
    assert_eq!(r.answer(&json!(4)).unwrap()["result"]["isError"], false);
    let call = wait_span(
        &file,
        "44444444444444444444444444444444",
        "plughost span",
        |s| s["name"] == "execute_tool traced_call",
    );
    assert_eq!(call["parent_span_id"], "0123456789abcdef", "{call:#}");

    // A call without a trace context starts a trace of its own.
    let answer = client.call(5, "traced_call", json!({}));
    let parent = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let fresh = TraceContext::parse(&parent, None).expect("a traceparent");
    let call = wait_span(&file, fresh.trace_id(), "plughost span", |s| {
        s["name"] == "execute_tool traced_call"
    });
    assert_eq!(call["parent_span_id"], "", "a root span: {call:#}");
}

// ---------------------------------------------------------------- library

/// Keeps what the SDK exports.
#[derive(Debug, Clone, Default)]
struct Collected(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collected {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// A bash plugin answering with the trace context it got: `ENV|CONTEXT`.
fn echo_trace_plugin(sandbox: &Sandbox, name: &str, persistent: bool) {
    let answer = r#"tp=$(printf '%s' "$line" | grep -o '"traceparent":"[^"]*"' | cut -d'"' -f4)
printf '{"result":"%s|%s"}\n' "${TRACEPARENT:-none}" "${tp:-none}""#;
    let script = if persistent {
        format!("#!/usr/bin/env bash\nwhile IFS= read -r line; do\n{answer}\ndone\n")
    } else {
        format!("#!/usr/bin/env bash\nline=$(cat)\n{answer}\n")
    };
    bash_plugin(sandbox, name, &format!("{name}_echo"), &script, persistent);
}

fn invocation(traceparent: &str) -> CallOptions {
    CallOptions {
        invocation: Invocation {
            trace: TraceContext::parse(traceparent, Some("vendor=x")),
            ..Invocation::default()
        },
        ..CallOptions::default()
    }
}

/// A host over `sandbox`'s folders whose spans go to an embedder's own
/// tracer provider, and what that provider collected.
fn traced_host(sandbox: &Sandbox) -> (PluginHost, Collected) {
    let collected = Collected::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(collected.clone())
        .build();
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .tracer_provider(&provider)
        .build()
        .unwrap();
    (host, collected)
}

#[tokio::test]
async fn an_embedders_tracer_provider_gets_the_call_spans() {
    let sandbox = Sandbox::new();
    echo_trace_plugin(&sandbox, "once", false);
    let (host, collected) = traced_host(&sandbox);
    let outcome = host
        .call_with("once_echo", json!({}), invocation(PARENT))
        .await
        .unwrap();
    let spans = collected.0.lock().unwrap().clone();
    let call = spans
        .iter()
        .find(|s| s.name == "execute_tool once_echo")
        .unwrap_or_else(|| panic!("no call span in {spans:#?}"));
    let parent = TraceContext::parse(PARENT, None).unwrap();
    assert_eq!(
        call.span_context.trace_id(),
        TraceId::from_hex(parent.trace_id()).unwrap()
    );
    assert_eq!(
        call.parent_span_id,
        SpanId::from_hex("00f067aa0ba902b7").unwrap()
    );
    assert!(call.parent_span_is_remote);
    assert_eq!(call.span_kind, SpanKind::Internal);
    assert_eq!(call.instrumentation_scope.name(), "plughost");
    assert_eq!(call.span_context.trace_state().header(), "vendor=x");
    let attr = |k: &str| {
        call.attributes
            .iter()
            .find(|kv| kv.key.as_str() == k)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(attr("plughost.call.outcome").as_deref(), Some("ok"));
    assert_eq!(
        attr("plughost.plugin.protocol").as_deref(),
        Some("stdio-json")
    );
    assert_eq!(attr("plughost.call.bytes_in").as_deref(), Some("2"));
    let spawn = spans
        .iter()
        .find(|s| s.name == "plughost.spawn")
        .expect("a spawn span");
    assert_eq!(spawn.parent_span_id, call.span_context.span_id());
    assert!(spawn.start_time >= call.start_time && spawn.end_time <= call.end_time);
    // The process got the call's span as its parent, in its environment and
    // in its request.
    let own = format!(
        "00-{}-{}-01",
        parent.trace_id(),
        call.span_context.span_id()
    );
    assert_eq!(outcome.result, format!("{own}|{own}"));
}

/// A call whose plugin the egress proxy refused a host: the span lists it.
#[tokio::test]
async fn the_call_span_lists_what_the_egress_proxy_refused() {
    if !util::prerequisite("curl", Path::new("/usr/bin/curl").exists()) {
        return;
    }
    let sandbox = Sandbox::new();
    let mut m = util::manifest("fetcher", "fetcher_get");
    m["permissions"] = json!(["network:127.0.0.1:9"]);
    sandbox.write_plugin(
        "fetcher",
        &m,
        "#!/usr/bin/env bash\ncat >/dev/null\ncode=$(/usr/bin/curl -s -o /dev/null -w '%{http_code}' -x \"$HTTP_PROXY\" http://127.0.0.2:9/)\nprintf '{\"result\":\"%s\"}\\n' \"$code\"\n",
    );
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["approve", "fetcher", "--yes"]);
        c
    });
    assert!(out.status.success(), "{}", util::stderr(&out));
    let (host, collected) = traced_host(&sandbox);
    let outcome = host
        .call("fetcher_get", json!({}), Invocation::default())
        .await
        .unwrap();
    assert_eq!(outcome.result, "403");
    let spans = collected.0.lock().unwrap().clone();
    let call = spans
        .iter()
        .find(|s| s.name == "execute_tool fetcher_get")
        .unwrap_or_else(|| panic!("no call span in {spans:#?}"));
    let refused = call
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "plughost.egress.refused")
        .map(|kv| kv.value.to_string())
        .unwrap_or_else(|| panic!("no refusals on {call:#?}"));
    assert!(
        refused.contains("127.0.0.2:9") && refused.contains("network:127.0.0.2:9"),
        "{refused}"
    );
}

#[tokio::test]
async fn without_a_tracer_plugins_continue_the_callers_trace() {
    let sandbox = Sandbox::new();
    echo_trace_plugin(&sandbox, "once", false);
    echo_trace_plugin(&sandbox, "kept", true);
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .build()
        .unwrap();
    let once = host
        .call_with("once_echo", json!({}), invocation(PARENT))
        .await
        .unwrap();
    assert_eq!(once.result, format!("{PARENT}|{PARENT}"));
    // A worker gets each request's own context, never one in its environment.
    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    for parent in [PARENT, other] {
        let kept = host
            .call_with("kept_echo", json!({}), invocation(parent))
            .await
            .unwrap();
        assert_eq!(kept.result, format!("none|{parent}"));
    }
    let none = host
        .call("once_echo", json!({}), Invocation::default())
        .await
        .unwrap();
    assert_eq!(none.result, "none|none");
}

/// The port `serve --metrics 127.0.0.1:0` was given, from its log.
fn metrics_port(server: &Server) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let port = server.log_text().lines().find_map(|l| {
            let rest = l
                .split("serving Prometheus metrics at http://127.0.0.1:")
                .nth(1)?;
            rest.split('/').next()?.parse().ok()
        });
        if let Some(port) = port {
            return port;
        }
        assert!(Instant::now() < deadline, "{}", server.log_text());
        std::thread::sleep(Duration::from_millis(20));
    }
}
