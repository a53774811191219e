//! A process per call: latency of single calls and throughput with calls in
//! flight, each through the host and as a raw spawn of the same plugin, with
//! the sandbox off and on.

use std::sync::Arc;
use std::time::Instant;

use plughost::PluginHost;
use plughost::protocol::Invocation;
use serde_json::{Value, json};

use crate::raw;
use crate::stats::{call_rate, pct, rate, ratio};
use crate::{Bench, cell};

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    let off = Arc::new(bench.host(false));
    let on = Arc::new(bench.host(true));
    let n = bench.iters(1000, 100);
    let mut latency = Vec::new();
    for (plugin, tool, entry, input, calls) in [
        ("tiny", "tiny_echo", "main", json!({}), n),
        (
            "hello-world",
            "hello_greet",
            "main.sh",
            json!({"name": "Alice"}),
            n / 4,
        ),
        (
            "password-gen",
            "password_generate",
            "main.py",
            json!({}),
            n / 20,
        ),
    ] {
        for (host, sandbox) in [(&off, false), (&on, true)] {
            let mut row = latency_row(bench, host, plugin, tool, entry, &input, calls).await;
            row["sandbox"] = json!(sandbox);
            latency.push(row);
        }
    }
    let mut throughput = Vec::new();
    for (host, sandbox) in [(&off, false), (&on, true)] {
        for concurrency in [1, 2, 8, 32] {
            let calls = bench.iters(2000, 200);
            let mut row = throughput_row(bench, host, concurrency, calls).await;
            row["sandbox"] = json!(sandbox);
            throughput.push(row);
        }
    }
    report["library_call_us"] = latency[0]["host_p50_us"].clone();
    report["call_latency"] = json!(latency);
    report["throughput"] = json!(throughput);
}

/// The tiny plugin granted everywhere, next to the same binary granted
/// nothing (the `protected` group).
pub(crate) async fn protected_rows(bench: &Bench, report: &mut Value) {
    let on = bench.host(true);
    let n = bench.iters(1000, 100);
    let mut protected = Vec::new();
    on.approve("tiny-writer").await.unwrap();
    for (plugin, tool) in [
        ("tiny-reader", "tiny_reader_echo"),
        ("tiny-writer", "tiny_writer_echo"),
    ] {
        protected.push(protected_row(&on, plugin, tool, n).await);
    }
    report["protected_paths"] = json!(protected);
}

/// Host calls and raw calls in turn, so drift affects both alike.
async fn latency_row(
    bench: &Bench,
    host: &PluginHost,
    plugin: &str,
    tool: &str,
    entry: &str,
    input: &Value,
    calls: usize,
) -> Value {
    let dir = bench.plugins.join(plugin);
    let program = dir.join(entry);
    let request = raw::request(tool, input, &dir, &bench.state);
    let (mut host_t, mut raw_t) = (Vec::new(), Vec::new());
    for _ in 0..calls.max(10) {
        let t = Instant::now();
        host.call(tool, input.clone(), Invocation::default())
            .await
            .unwrap();
        host_t.push(t.elapsed());
        let t = Instant::now();
        raw::call(&program, &dir, &request).await;
        raw_t.push(t.elapsed());
    }
    let (hp50, hp99, rp50, rp99) = (
        pct(&mut host_t, 50),
        pct(&mut host_t, 99),
        pct(&mut raw_t, 50),
        pct(&mut raw_t, 99),
    );
    json!({"plugin": plugin, "host_p50_us": hp50, "host_p99_us": hp99,
           "raw_p50_us": rp50, "raw_p99_us": rp99, "ratio_p50": ratio(hp50, rp50)})
}

/// A sandboxed call of a plugin granted everywhere, whose ruleset is built
/// around the protected paths, next to the same binary granted nothing
/// (whose ruleset holds no protected path to build around), in turn.
async fn protected_row(host: &PluginHost, plugin: &str, tool: &str, calls: usize) -> Value {
    let (mut granted, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..calls.max(10) {
        let t = Instant::now();
        host.call(tool, json!({}), Invocation::default())
            .await
            .unwrap();
        granted.push(t.elapsed());
        let t = Instant::now();
        host.call("tiny_echo", json!({}), Invocation::default())
            .await
            .unwrap();
        bare.push(t.elapsed());
    }
    let (g50, b50) = (pct(&mut granted, 50), pct(&mut bare, 50));
    json!({"plugin": plugin, "granted_p50_us": g50, "granted_p99_us": pct(&mut granted, 99),
           "bare_p50_us": b50, "ratio_p50": ratio(g50, b50)})
}

/// Host and raw calls in alternating rounds, so drift (another process,
/// the machine's clock) affects both alike.
async fn throughput_row(
    bench: &Bench,
    host: &Arc<PluginHost>,
    concurrency: usize,
    calls: usize,
) -> Value {
    let dir = Arc::new(bench.plugins.join("tiny"));
    let program = Arc::new(dir.join("main"));
    let request = Arc::new(raw::request("tiny_echo", &json!({}), &dir, &bench.state));
    const ROUNDS: usize = 4;
    let per_round = (calls / ROUNDS).max(concurrency);
    let (mut host_s, mut raw_s) = (0.0, 0.0);
    for _ in 0..ROUNDS {
        let host_rate = call_rate(host, "tiny_echo", concurrency, per_round).await;
        let raw_rate = rate(concurrency, per_round, |_| {
            let (p, d, r) = (program.clone(), dir.clone(), request.clone());
            async move { raw::call(&p, &d, &r).await }
        })
        .await;
        host_s += per_round as f64 / host_rate;
        raw_s += per_round as f64 / raw_rate;
    }
    let all = (per_round * ROUNDS) as f64;
    let (host_rate, raw_rate) = (all / host_s, all / raw_s);
    json!({"plugin": "tiny", "concurrency": concurrency,
           "host_calls_per_s": host_rate.round() as u64, "raw_calls_per_s": raw_rate.round() as u64,
           "ratio": ratio(host_rate, raw_rate)})
}

pub(crate) fn print(r: &Value) {
    println!("per-call latency (µs)          host p50  host p99   raw p50   raw p99  host/raw p50");
    for row in r["call_latency"].as_array().unwrap() {
        println!(
            "  {:<14} sandbox {:<5} {:>9} {:>9} {:>9} {:>9} {:>13}",
            cell(&row["plugin"]),
            cell(&row["sandbox"]),
            cell(&row["host_p50_us"]),
            cell(&row["host_p99_us"]),
            cell(&row["raw_p50_us"]),
            cell(&row["raw_p99_us"]),
            cell(&row["ratio_p50"])
        );
    }
    println!("  library_call_us: {}", cell(&r["library_call_us"]));
    println!("throughput, tiny (calls/s)     concurrency      host       raw  host/raw");
    for row in r["throughput"].as_array().unwrap() {
        println!(
            "  sandbox {:<20} {:>12} {:>9} {:>9} {:>9}",
            cell(&row["sandbox"]),
            cell(&row["concurrency"]),
            cell(&row["host_calls_per_s"]),
            cell(&row["raw_calls_per_s"]),
            cell(&row["ratio"])
        );
    }
}

pub(crate) fn print_protected(r: &Value) {
    println!("protected paths (µs, sandbox on)  granted p50  granted p99  bare tiny p50  ratio");
    for row in r["protected_paths"].as_array().unwrap() {
        println!(
            "  {:<30} {:>11} {:>12} {:>14} {:>6}",
            cell(&row["plugin"]),
            cell(&row["granted_p50_us"]),
            cell(&row["granted_p99_us"]),
            cell(&row["bare_p50_us"]),
            cell(&row["ratio_p50"])
        );
    }
}
