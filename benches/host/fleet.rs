//! `fleet`: `plughost serve --http` replicas behind HAProxy (Debian's
//! package), as `docs/deploy.md` runs them: one approvals file, a state
//! folder each, round robin. Calls per second of 8 clients (each on a
//! keep-alive connection to HAProxy, 2026-07-28 `tools/call` of the tiny
//! sandboxed plugin) with 1, 2 and 3 replicas; and the balancer's added
//! latency: one client's calls through HAProxy with one replica next to the
//! same calls straight to that replica, alternating. All replicas share
//! this machine's cores, so more replicas cannot add throughput here: the
//! figure says what the balancer and the replicas cost, not how a fleet of
//! machines scales.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Bench;
use crate::http::{Endpoint, free_port, stop};
use crate::stats::{pct, ratio};

const TOKEN: &str = "bench-token-0123456789abcdef";
const CLIENTS: usize = 8;

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    if Command::new("haproxy").arg("-v").output().is_err() {
        report["fleet"] = json!({"skipped": "haproxy is not installed (Debian's haproxy package)"});
        return;
    }
    let approvals = bench.dir.join("fleet-approvals.json");
    std::fs::write(&approvals, "{\"version\": 1, \"plugins\": {}}\n").unwrap();
    let token = bench.dir.join("fleet-token");
    std::fs::write(&token, TOKEN).unwrap();
    let mut replicas: Vec<(Child, u16)> = (0..3)
        .map(|n| replica(bench, n, &approvals, &token))
        .collect();
    let auth = || Some(format!("Bearer {TOKEN}"));

    // The balancer's added latency, one client.
    let n = bench.iters(600, 100);
    let mut lb = haproxy(&bench.dir, &[replicas[0].1]);
    let mut through = Endpoint::connect(lb.1, auth(), None).await;
    let mut direct = Endpoint::connect(replicas[0].1, auth(), None).await;
    let (mut t, mut d) = (Vec::new(), Vec::new());
    for _ in 0..n {
        t.push(through.call("tiny_echo").await);
        d.push(direct.call("tiny_echo").await);
    }
    stop(&mut lb.0);
    let (t50, d50) = (pct(&mut t, 50), pct(&mut d, 50));

    // Calls per second with 1, 2, 3 replicas.
    let seconds = if bench.quick { 3.0 } else { 10.0 };
    let mut throughput = Vec::new();
    for k in 1..=3 {
        let ports: Vec<u16> = replicas[..k].iter().map(|r| r.1).collect();
        let mut lb = haproxy(&bench.dir, &ports);
        let per_second = load(lb.1, seconds).await;
        stop(&mut lb.0);
        throughput.push(json!({"replicas": k, "calls_per_second": per_second}));
    }
    for (child, _) in &mut replicas {
        stop(child);
    }
    report["fleet"] = json!({
        "clients": CLIENTS,
        "throughput": throughput,
        "through_haproxy_p50_us": t50,
        "direct_p50_us": d50,
        "added_p50_us": ((t50 - d50) * 10.0).round() / 10.0,
        "through_over_direct_p50": ratio(t50, d50),
    });
}

/// `CLIENTS` clients calling through `port` for `seconds`: calls per second.
async fn load(port: u16, seconds: f64) -> f64 {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        tasks.push(tokio::spawn(async move {
            let mut e = Endpoint::connect(port, Some(format!("Bearer {TOKEN}")), None).await;
            let mut calls = 0u64;
            while Instant::now() < until {
                e.call("tiny_echo").await;
                calls += 1;
            }
            calls
        }));
    }
    let start = Instant::now();
    let mut calls = 0;
    for t in tasks {
        calls += t.await.unwrap();
    }
    (calls as f64 / start.elapsed().as_secs_f64() * 10.0).round() / 10.0
}

fn replica(bench: &Bench, n: usize, approvals: &Path, token: &Path) -> (Child, u16) {
    let port = free_port();
    let child = Command::new(crate::binary::plughost())
        .arg("--plugins-dir")
        .arg(&bench.plugins)
        .arg("--state-dir")
        .arg(bench.dir.join(format!("replica-{n}")))
        .arg("--approvals")
        .arg(approvals)
        .args([
            "serve",
            "--http",
            &format!("127.0.0.1:{port}"),
            "--token-file",
        ])
        .arg(token)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (child, port)
}

/// HAProxy on a free port in front of `ports`: round robin, checks on
/// `/readyz`.
fn haproxy(dir: &Path, ports: &[u16]) -> (Child, u16) {
    let port = free_port();
    let servers: String = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("  server r{i} 127.0.0.1:{p} check inter 1s\n"))
        .collect();
    let file = dir.join("haproxy.cfg");
    std::fs::write(
        &file,
        format!(
            "global\n  maxconn 1024\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n\
             frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
             backend replicas\n  balance roundrobin\n  option httpchk GET /readyz\n{servers}"
        ),
    )
    .unwrap();
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (child, port)
}

pub(crate) fn print(r: &Value) {
    let f = &r["fleet"];
    if f.is_null() {
        return;
    }
    println!("\nfleet: serve --http replicas behind HAProxy (one machine, its cores shared)");
    if let Some(why) = f.get("skipped") {
        println!("  skipped: {}", crate::cell(why));
        return;
    }
    for row in f["throughput"].as_array().unwrap() {
        println!(
            "  {} replica(s), {} clients: {} calls/s",
            row["replicas"], f["clients"], row["calls_per_second"]
        );
    }
    println!(
        "  one call, p50: through HAProxy {} µs, direct {} µs (+{} µs, {}x)",
        f["through_haproxy_p50_us"],
        f["direct_p50_us"],
        f["added_p50_us"],
        f["through_over_direct_p50"]
    );
}
