//! Persistent plugins through the library: a call on a running worker next to
//! the same plugin spawned per call, the worker's own line round trip as the
//! floor, many callers on a pool of workers, and the host's memory with idle
//! workers. The host has the sandbox on (a worker is confined once, when it
//! starts, so it costs nothing per call).

use std::sync::Arc;
use std::time::{Duration, Instant};

use plughost::PluginHost;
use plughost::protocol::Invocation;
use serde_json::{Value, json};

use crate::fixtures::{IDLE_WORKERS, idle_plugins_dir};
use crate::stats::{mb, pct, rate, round1, status_kb};
use crate::{Bench, cell, children, raw};

/// One plugin, both ways.
struct Subject {
    label: &'static str,
    worker: &'static str,
    spawn: &'static str,
    entry: &'static str,
    /// Calls in spawn mode: in a full run, and with `--quick`.
    spawn_calls: (usize, usize),
    needs_node: bool,
}

const SUBJECTS: [Subject; 3] = [
    Subject {
        label: "tiny",
        worker: "tiny-worker",
        spawn: "tiny",
        entry: "main",
        spawn_calls: (1000, 100),
        needs_node: false,
    },
    Subject {
        label: "python",
        worker: "py-worker",
        spawn: "py-spawn",
        entry: "main.py",
        spawn_calls: (100, 20),
        needs_node: false,
    },
    Subject {
        label: "node",
        worker: "node-worker",
        spawn: "node-spawn",
        entry: "main.mjs",
        spawn_calls: (40, 10),
        needs_node: true,
    },
];

/// The tool of plugin `name` and an input it accepts.
pub(crate) fn tool_of(name: &str) -> (String, Value) {
    let tool = format!("{}_echo", name.replace('-', "_"));
    // The tiny program takes any object and ignores it.
    let input = if name.starts_with("tiny") || name.starts_with("idle") {
        json!({})
    } else {
        json!({"text": "hi"})
    };
    (tool, input)
}

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    let host = Arc::new(bench.host(true));
    let mut rows = Vec::new();
    for s in &SUBJECTS {
        if s.needs_node && bench.node.is_none() {
            rows.push(json!({"plugin": s.label, "skipped": "node was not found"}));
            continue;
        }
        rows.push(persistent_row(bench, &host, s).await);
        rows.push(spawn_row(bench, &host, s).await);
    }
    report["persistent"] = json!(rows);
    report["persistent_throughput"] = pool_throughput(bench, &host).await;
    host.stop_workers().await;
    let idle = children::run(
        "idle-workers",
        &[
            idle_plugins_dir(bench).display().to_string(),
            bench.state.display().to_string(),
            IDLE_WORKERS.to_string(),
        ],
    );
    report["idle_workers_rss_mb"] = json!(mb(idle["rss_kb"].as_f64().unwrap()));
}

async fn call(host: &PluginHost, tool: &str, input: &Value) -> Duration {
    let t = Instant::now();
    let outcome = host
        .call(tool, input.clone(), Invocation::default())
        .await
        .unwrap();
    let took = t.elapsed();
    assert!(!outcome.is_error, "{tool}: {}", outcome.result);
    took
}

/// Host calls on its worker and raw round trips on the bench's own copy of
/// the worker, in turn.
async fn persistent_row(bench: &Bench, host: &PluginHost, s: &Subject) -> Value {
    let dir = bench.plugins.join(s.worker);
    let (tool, input) = tool_of(s.worker);
    let mut line = raw::request(&tool, &input, &dir, &bench.state);
    line.push(b'\n');
    let mut raw_worker = raw::LineWorker::start(&dir.join(s.entry), &dir);
    // Both workers start and warm up before anything counts.
    for _ in 0..20 {
        call(host, &tool, &input).await;
        raw_worker.round_trip(&line).await;
    }
    let n = bench.iters(2000, 300);
    let (mut host_t, mut raw_t) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        host_t.push(call(host, &tool, &input).await);
        raw_t.push(raw_worker.round_trip(&line).await);
    }
    let (hp50, rp50) = (pct(&mut host_t, 50), pct(&mut raw_t, 50));
    json!({"plugin": s.label, "mode": "persistent", "sandbox": true, "calls": n,
           "host_p50_us": hp50, "host_p99_us": pct(&mut host_t, 99),
           "line_raw_p50_us": rp50, "line_raw_p99_us": pct(&mut raw_t, 99),
           "host_minus_raw_us": round1(hp50 - rp50)})
}

/// The same plugin without `persistent`: a process per call.
async fn spawn_row(bench: &Bench, host: &PluginHost, s: &Subject) -> Value {
    let (tool, input) = tool_of(s.spawn);
    for _ in 0..3 {
        call(host, &tool, &input).await;
    }
    let n = bench.iters(s.spawn_calls.0, s.spawn_calls.1);
    let mut t = Vec::with_capacity(n);
    for _ in 0..n {
        t.push(call(host, &tool, &input).await);
    }
    json!({"plugin": s.label, "mode": "spawn", "sandbox": true, "calls": n,
           "host_p50_us": pct(&mut t, 50), "host_p99_us": pct(&mut t, 99)})
}

/// 32 callers at once on the python echo with `max_workers: 4`.
async fn pool_throughput(bench: &Bench, host: &Arc<PluginHost>) -> Value {
    let (tool, input) = tool_of("py-pool");
    let one = |_| {
        let call = host.call(&tool, input.clone(), Invocation::default());
        async move {
            assert!(!call.await.unwrap().is_error);
        }
    };
    // Starts all four workers before the clock runs.
    rate(32, 128, one).await;
    let calls = bench.iters(8000, 1000);
    let calls_per_s = rate(32, calls, one).await;
    let workers = host.workers().get("py-pool").map_or(0, Vec::len);
    json!({"plugin": "python", "max_workers": 4, "workers": workers, "concurrency": 32,
           "calls": calls, "calls_per_s": calls_per_s.round() as u64})
}

/// `--child idle-workers PLUGINS STATE N`: one call to each of N persistent
/// plugins, then the host's `VmRSS` once their workers are idle.
pub(crate) fn idle_child(args: &[String]) -> Value {
    let n: usize = args[2].parse().unwrap();
    children::runtime().block_on(async {
        let host = children::host(&args[0], &args[1]);
        let calls: Vec<_> = (0..n)
            .map(|i| {
                let (tool, input) = tool_of(&format!("idle-{i:02}"));
                tokio::spawn(host.call(&tool, input, Invocation::default()))
            })
            .collect();
        for c in calls {
            c.await.unwrap().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let idle: usize = host
            .workers()
            .values()
            .map(|w| w.iter().filter(|w| w.idle_secs.is_some()).count())
            .sum();
        assert_eq!(idle, n, "every worker idle");
        json!({"workers": idle, "rss_kb": status_kb("VmRSS")})
    })
}

pub(crate) fn print(r: &Value) {
    println!(
        "persistent, library (µs)   host p50  host p99  line raw p50  line raw p99  host - raw"
    );
    for row in r["persistent"].as_array().unwrap() {
        let label = format!("{} {}", cell(&row["plugin"]), cell(&row["mode"]));
        if let Some(why) = row.get("skipped") {
            println!("  {label:<22} skipped: {}", cell(why));
            continue;
        }
        println!(
            "  {label:<22} {:>9} {:>9} {:>13} {:>13} {:>11}",
            cell(&row["host_p50_us"]),
            cell(&row["host_p99_us"]),
            cell(&row["line_raw_p50_us"]),
            cell(&row["line_raw_p99_us"]),
            cell(&row["host_minus_raw_us"])
        );
    }
    let t = &r["persistent_throughput"];
    println!(
        "  {} callers on the {} echo, max_workers {} ({} running): {} calls/s",
        cell(&t["concurrency"]),
        cell(&t["plugin"]),
        cell(&t["max_workers"]),
        cell(&t["workers"]),
        cell(&t["calls_per_s"])
    );
    println!(
        "  host VmRSS with {IDLE_WORKERS} idle workers (fresh process): {} MB",
        cell(&r["idle_workers_rss_mb"])
    );
}
