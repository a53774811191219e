//! What tracing costs a call: the tiny plugin through a host that makes a
//! span per call and exports it over OTLP/HTTP (the batch processor and the
//! command line's own HTTP client, to a receiver in this process), in turn
//! with the same calls through a host without a tracer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use plughost::protocol::Invocation;
use plughost::{PluginHost, SandboxMode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::stats::{pct, ratio};
use crate::{Bench, cell};

// The exporter's HTTP client is the command line's, compiled in here as is.
#[path = "../../cli/src/otlp_client.rs"]
#[allow(
    dead_code,
    unreachable_pub,
    reason = "the command line's module, of which the bench uses the client alone"
)]
mod otlp_client;

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    let (port, exports) = receiver().await;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(otlp_client::OtlpClient::new(
            tokio::runtime::Handle::current(),
            Duration::from_secs(10),
        ))
        .with_endpoint(format!("http://127.0.0.1:{port}/v1/traces"))
        .build()
        .unwrap();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let mut rows = Vec::new();
    for sandbox in [false, true] {
        let host = |traced: bool| {
            let b = PluginHost::builder()
                .plugins_dir(&bench.plugins)
                .state_dir(&bench.state)
                .sandbox(if sandbox {
                    SandboxMode::On
                } else {
                    SandboxMode::Off
                });
            if traced {
                b.tracer_provider(&provider)
            } else {
                b
            }
            .build()
            .unwrap()
        };
        let (on, off) = (host(true), host(false));
        let calls = bench.iters(2000, 200);
        let (mut on_t, mut off_t) = (Vec::new(), Vec::new());
        for _ in 0..calls {
            off_t.push(timed(&off).await);
            on_t.push(timed(&on).await);
        }
        let (on50, off50) = (pct(&mut on_t, 50), pct(&mut off_t, 50));
        rows.push(json!({"plugin": "tiny", "sandbox": sandbox, "calls": calls,
            "on_p50_us": on50, "on_p99_us": pct(&mut on_t, 99),
            "off_p50_us": off50, "off_p99_us": pct(&mut off_t, 99),
            "ratio_p50": ratio(on50, off50)}));
    }
    let _ = tokio::task::spawn_blocking(move || provider.shutdown()).await;
    report["tracing"] = json!({"rows": rows, "exports": exports.load(Ordering::Relaxed)});
}

async fn timed(host: &PluginHost) -> Duration {
    let t = Instant::now();
    host.call("tiny_echo", json!({}), Invocation::default())
        .await
        .unwrap();
    t.elapsed()
}

/// An OTLP/HTTP endpoint that reads each export and answers 200: its port,
/// and how many exports it took.
async fn receiver() -> (u16, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let exports = Arc::new(AtomicU64::new(0));
    let counted = exports.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = vec![0u8; 64 * 1024];
                let body_at = loop {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&seen[..body_at]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while seen.len() < body_at + length {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                counted.fetch_add(1, Ordering::Relaxed);
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    (port, exports)
}

pub(crate) fn print(r: &Value) {
    println!("tracing, tiny (µs)             on p50    on p99   off p50   off p99  on/off p50");
    for row in r["tracing"]["rows"].as_array().into_iter().flatten() {
        println!(
            "  sandbox {:<19} {:>9} {:>9} {:>9} {:>9} {:>11}",
            cell(&row["sandbox"]),
            cell(&row["on_p50_us"]),
            cell(&row["on_p99_us"]),
            cell(&row["off_p50_us"]),
            cell(&row["off_p99_us"]),
            cell(&row["ratio_p50"])
        );
    }
    println!("  exports received: {}", cell(&r["tracing"]["exports"]));
}
