//! Host grants (`network:HOST`): what holding a plugin to the egress proxy
//! costs a call, and what the proxy costs a download, at the namespace level
//! and at the fallback level (namespaces off).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;

use plughost::PluginHost;
use plughost::protocol::Invocation;
use serde_json::{Value, json};

use crate::raw;
use crate::stats::{call_rate, pct, ratio};
use crate::{Bench, cell};

/// The bytes `/big` answers with.
const BIG: usize = 1024 * 1024;

/// An HTTP origin on 127.0.0.1 for the downloads, on a thread per
/// connection: `/big` is a megabyte, anything else a few bytes.
pub(crate) fn origin() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let big = vec![b'x'; BIG];
        let big = Arc::new(big);
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let big = big.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 2048];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body: &[u8] = if head.starts_with(b"GET /big ") {
                    &big
                } else {
                    b"ok"
                };
                let _ = conn.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                );
                let _ = conn.write_all(body);
            });
        }
    });
    port
}

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    if !plughost::sandbox::SandboxSupport::here().network_tcp {
        report["host_grants"] = json!({"skipped": "no Landlock ABI 4 here"});
        return;
    }
    let n = bench.iters(1000, 100);
    let (mut grants, mut throughput, mut download) = (Vec::new(), Vec::new(), Vec::new());
    for (level, namespaces) in [("namespace", true), ("proxy_port", false)] {
        let host = Arc::new(bench.host_with(true, namespaces));
        for plugin in ["tiny-hosts", "fetch-proxied", "fetch-direct"] {
            host.approve(plugin).await.unwrap();
        }
        let mut row = latency_row(bench, &host, n).await;
        row["level"] = json!(level);
        grants.push(row);
        for concurrency in [2, 32] {
            let calls = bench.iters(2000, 200);
            let granted = call_rate(&host, "tiny_hosts_echo", concurrency, calls).await;
            let bare = call_rate(&host, "tiny_echo", concurrency, calls).await;
            throughput.push(json!({"level": level, "concurrency": concurrency,
                "granted_calls_per_s": granted.round() as u64, "bare_calls_per_s": bare.round() as u64,
                "ratio": ratio(granted, bare)}));
        }
        let mut row = download_row(&host, bench.iters(100, 10)).await;
        row["level"] = json!(level);
        download.push(row);
    }
    report["host_grants"] = json!(grants);
    report["host_grants_throughput"] = json!(throughput);
    report["proxy_download"] = json!(download);
}

/// The granted tiny plugin, the bare one and a raw spawn, in turn.
async fn latency_row(bench: &Bench, host: &PluginHost, calls: usize) -> Value {
    let dir = bench.plugins.join("tiny");
    let program = dir.join("main");
    let request = raw::request("tiny_echo", &json!({}), &dir, &bench.state);
    let (mut granted, mut bare, mut raw_t) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..calls.max(10) {
        let t = Instant::now();
        host.call("tiny_hosts_echo", json!({}), Invocation::default())
            .await
            .unwrap();
        granted.push(t.elapsed());
        let t = Instant::now();
        host.call("tiny_echo", json!({}), Invocation::default())
            .await
            .unwrap();
        bare.push(t.elapsed());
        let t = Instant::now();
        raw::call(&program, &dir, &request).await;
        raw_t.push(t.elapsed());
    }
    let (g50, b50, r50) = (
        pct(&mut granted, 50),
        pct(&mut bare, 50),
        pct(&mut raw_t, 50),
    );
    json!({"granted_p50_us": g50, "granted_p99_us": pct(&mut granted, 99),
           "bare_p50_us": b50, "raw_p50_us": r50,
           "ratio_p50": ratio(g50, b50), "ratio_raw_p50": ratio(g50, r50)})
}

/// A megabyte through the proxy and directly, in turn.
async fn download_row(host: &PluginHost, calls: usize) -> Value {
    let (mut proxied, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..calls.max(5) {
        for (tool, times) in [
            ("fetch_proxied_get", &mut proxied),
            ("fetch_direct_get", &mut direct),
        ] {
            let t = Instant::now();
            let o = host
                .call(tool, json!({}), Invocation::default())
                .await
                .unwrap();
            assert_eq!(o.result, BIG.to_string(), "{tool}");
            times.push(t.elapsed());
        }
    }
    let ms = |us: f64| (us / 100.0).round() / 10.0;
    let (p50, d50) = (pct(&mut proxied, 50), pct(&mut direct, 50));
    json!({"proxied_p50_ms": ms(p50), "direct_p50_ms": ms(d50), "ratio_p50": ratio(p50, d50)})
}

pub(crate) fn print(r: &Value) {
    let Some(rows) = r["host_grants"].as_array() else {
        println!("host grants: {}", cell(&r["host_grants"]["skipped"]));
        return;
    };
    println!(
        "host grants, tiny (µs)   granted p50  granted p99  bare p50   raw p50  granted/bare  granted/raw"
    );
    for row in rows {
        println!(
            "  {:<22} {:>11} {:>12} {:>9} {:>9} {:>13} {:>12}",
            cell(&row["level"]),
            cell(&row["granted_p50_us"]),
            cell(&row["granted_p99_us"]),
            cell(&row["bare_p50_us"]),
            cell(&row["raw_p50_us"]),
            cell(&row["ratio_p50"]),
            cell(&row["ratio_raw_p50"])
        );
    }
    println!("host grants throughput     concurrency  granted/s   bare/s  granted/bare");
    for row in r["host_grants_throughput"].as_array().unwrap() {
        println!(
            "  {:<24} {:>11} {:>10} {:>8} {:>13}",
            cell(&row["level"]),
            cell(&row["concurrency"]),
            cell(&row["granted_calls_per_s"]),
            cell(&row["bare_calls_per_s"]),
            cell(&row["ratio"])
        );
    }
    println!("1 MB download with curl (ms)   through proxy p50  direct p50  ratio");
    for row in r["proxy_download"].as_array().unwrap() {
        println!(
            "  {:<28} {:>17} {:>11} {:>6}",
            cell(&row["level"]),
            cell(&row["proxied_p50_ms"]),
            cell(&row["direct_p50_ms"]),
            cell(&row["ratio_p50"])
        );
    }
}
