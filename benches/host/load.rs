//! Loading: building a host over 1,000 plugin folders, and how soon a new
//! plugin folder is callable with the watcher running.

use std::time::{Duration, Instant};

use plughost::PluginHost;
use serde_json::{Value, json};

use crate::Bench;
use crate::fixtures::{manifest, set_exec, write_manifest};
use crate::stats::{pct, round1};

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    report["load_1000_ms"] = json!(load_1000(bench));
    report["reload_latency_ms"] = json!(reload_latency(bench).await);
}

/// A plugin folder `parent/name` with a shell entrypoint and one tool.
fn shell_plugin(parent: &std::path::Path, name: &str, tool: &str) {
    let d = parent.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("main.sh"), "#!/bin/sh\necho '{\"result\":\"x\"}'\n").unwrap();
    set_exec(&d.join("main.sh"));
    write_manifest(&d, &manifest(name, "main.sh", tool));
}

/// Best of three host builds over 1,000 plugin folders, in milliseconds.
fn load_1000(bench: &Bench) -> f64 {
    let root = bench.dir.join("thousand");
    for i in 0..1000 {
        shell_plugin(&root, &format!("p{i:04}"), &format!("tool_{i:04}"));
    }
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let host = PluginHost::builder()
            .plugins_dir(&root)
            .state_dir(&bench.state)
            .build()
            .unwrap();
        assert_eq!(host.tools().len(), 1000);
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    round1(best)
}

/// p50 of five new folders' last write to their tool being listed, in
/// milliseconds.
async fn reload_latency(bench: &Bench) -> f64 {
    let host = bench.host(false);
    let _watch = host.watch().unwrap();
    let mut samples = Vec::new();
    for i in 0..5 {
        let name = format!("fresh{i}");
        let tool = format!("fresh_tool_{i}");
        shell_plugin(&bench.plugins, &name, &tool);
        let last_write = Instant::now();
        while !host.tools().iter().any(|t| t.name == tool) {
            assert!(
                last_write.elapsed() < Duration::from_secs(10),
                "the watcher never loaded {name}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        samples.push(last_write.elapsed());
        let _ = std::fs::remove_dir_all(bench.plugins.join(&name));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    round1(pct(&mut samples, 50) / 1000.0)
}

pub(crate) fn print(r: &Value) {
    println!("loading");
    println!("  1,000 plugin folders: {} ms", r["load_1000_ms"]);
    println!(
        "  a new plugin folder callable after its last write: {} ms",
        r["reload_latency_ms"]
    );
}
