//! Scenarios run in a fresh process (`--child MODE ARGS…`), so that what they
//! read about themselves (peak and current memory, open file descriptors)
//! belongs to that scenario alone. A child prints one JSON value on stdout.
//!
//! | mode | prints |
//! |---|---|
//! | `flood PLUGINS STATE` | `{peak_rss_kb}` after a plugin flooded 1 GB to stdout |
//! | `inflight PLUGINS STATE N` | `{peak_rss_kb}` after N calls at once |
//! | `soak PLUGINS STATE N` | file descriptors and `VmRSS` after a warm-up and after N more calls |
//! | `profile PLUGINS STATE N` | N tiny calls back to back, for profilers |
//! | `flight PLUGINS STATE N ROUNDS` | N callers at once, each making ROUNDS tiny calls back to back, for profilers |
//! | `spawn-paths …` | the rows of `spawn` |
//! | `idle-workers …` | the figures of `workers`' idle scenario |
//!
//! A scenario's host has the sandbox on unless `BENCH_NO_SANDBOX` is set.

use std::process::Stdio;
use std::sync::Arc;

use plughost::protocol::Invocation;
use plughost::{PluginHost, SandboxMode};
use serde_json::{Value, json};

use crate::stats::{mb, status_kb};
use crate::{Bench, cell, spawn, workers};

/// Runs `--child MODE ARGS…` in a fresh copy of this program; its JSON.
pub(crate) fn run(mode: &str, args: &[String]) -> Value {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--child")
        .arg(mode)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "child {mode} failed: {}", out.status);
    serde_json::from_slice(&out.stdout).expect("a child prints one JSON value")
}

/// The runtime a child runs on: the shape of the parent's.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A child's host over `plugins`, with room for many calls at once.
pub(crate) fn host(plugins: &str, state: &str) -> Arc<PluginHost> {
    let sandbox = if std::env::var_os("BENCH_NO_SANDBOX").is_some() {
        SandboxMode::Off
    } else {
        SandboxMode::On
    };
    Arc::new(
        PluginHost::builder()
            .plugins_dir(plugins)
            .state_dir(state)
            .concurrency(256)
            .sandbox(sandbox)
            .build()
            .unwrap(),
    )
}

/// The child's entry point.
pub(crate) fn main(mode: &str, args: &[String]) {
    let out = match mode {
        "spawn-paths" => spawn::child(args),
        "idle-workers" => workers::idle_child(args),
        _ => runtime().block_on(scenario(mode, args)),
    };
    println!("{out}");
}

async fn scenario(mode: &str, args: &[String]) -> Value {
    let host = host(&args[0], &args[1]);
    let n = || -> usize { args[2].parse().unwrap() };
    let tiny = || host.call("tiny_echo", json!({}), Invocation::default());
    match mode {
        "flood" => {
            let e = host
                .call("flood_stdout", json!({}), Invocation::default())
                .await
                .unwrap_err();
            assert_eq!(e.kind(), plughost::ErrorKind::OutputTooLarge);
        }
        "inflight" => {
            let calls: Vec<_> = (0..n())
                .map(|_| {
                    tokio::spawn(host.call(
                        "hello_greet",
                        json!({"name": "x"}),
                        Invocation::default(),
                    ))
                })
                .collect();
            for c in calls {
                c.await.unwrap().unwrap();
            }
        }
        "soak" => {
            for _ in 0..20 {
                tiny().await.unwrap();
            }
            let (fds_before, rss_before_kb) = (open_fds(), status_kb("VmRSS"));
            for _ in 0..n() {
                tiny().await.unwrap();
            }
            return json!({"calls": n(), "fds_before": fds_before, "fds_after": open_fds(),
                          "rss_before_kb": rss_before_kb, "rss_after_kb": status_kb("VmRSS")});
        }
        "flight" => {
            let rounds: usize = args[3].parse().unwrap();
            let calls: Vec<_> = (0..n())
                .map(|_| {
                    let host = host.clone();
                    tokio::spawn(async move {
                        for _ in 0..rounds {
                            host.call("tiny_echo", json!({}), Invocation::default())
                                .await
                                .unwrap();
                        }
                    })
                })
                .collect();
            for c in calls {
                c.await.unwrap();
            }
        }
        "profile" => {
            for _ in 0..n() {
                tiny().await.unwrap();
            }
        }
        other => panic!("unknown child mode {other}"),
    }
    json!({"peak_rss_kb": status_kb("VmHWM")})
}

/// Entries of `/proc/self/fd` (the directory's own descriptor included).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn dirs(bench: &Bench) -> [String; 2] {
    [
        bench.plugins.display().to_string(),
        bench.state.display().to_string(),
    ]
}

/// `soak`: a sandboxed host's descriptors and memory over 1,000 calls.
pub(crate) fn soak(bench: &Bench, report: &mut Value) {
    let [plugins, state] = dirs(bench);
    report["soak"] = run("soak", &[plugins, state, "1000".into()]);
}

/// `flood_peak_rss_mb` and `inflight_peak_rss_mb`.
pub(crate) fn peak_rss(bench: &Bench, report: &mut Value) {
    let [plugins, state] = dirs(bench);
    for (key, mode, extra) in [
        ("flood_peak_rss_mb", "flood", None),
        ("inflight_peak_rss_mb", "inflight", Some("200")),
    ] {
        let mut args = vec![plugins.clone(), state.clone()];
        args.extend(extra.map(str::to_owned));
        let out = run(mode, &args);
        report[key] = json!(mb(out["peak_rss_kb"].as_f64().unwrap()));
    }
}

pub(crate) fn print(r: &Value) {
    println!("fresh process, sandboxed host");
    let s = &r["soak"];
    println!(
        "  soak: {} tiny calls after 20 warm-up calls: open fds {} -> {}, VmRSS {} -> {} kB",
        cell(&s["calls"]),
        cell(&s["fds_before"]),
        cell(&s["fds_after"]),
        cell(&s["rss_before_kb"]),
        cell(&s["rss_after_kb"])
    );
    println!(
        "  peak VmHWM while a plugin floods 1 GB to stdout: {} MB",
        cell(&r["flood_peak_rss_mb"])
    );
    println!(
        "  peak VmHWM with 200 calls in flight: {} MB",
        cell(&r["inflight_peak_rss_mb"])
    );
}
