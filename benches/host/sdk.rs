//! What the Python SDK costs per call: the echo of `plughost new --lang
//! python` (on the SDK) next to the same tool written by hand, a process per
//! call, sandbox off and on.

use std::time::{Duration, Instant};

use plughost::PluginHost;
use plughost::protocol::Invocation;
use serde_json::{Value, json};

use crate::stats::{median_diff_us, pct};
use crate::{Bench, cell};

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    let mut rows = Vec::new();
    for sandbox in [false, true] {
        let host = bench.host(sandbox);
        let mut row = sdk_vs_hand(&host, bench.iters(200, 20)).await;
        row["sandbox"] = json!(sandbox);
        rows.push(row);
    }
    report["python_sdk_vs_hand"] = json!(rows);
}

/// The two echoes called in turn so drift affects both alike; p50 of each
/// and the median of the pairs' differences.
async fn sdk_vs_hand(host: &PluginHost, pairs: usize) -> Value {
    let input = json!({"text": "hi", "shout": true});
    let (mut sdk_t, mut hand_t) = (Vec::new(), Vec::new());
    for _ in 0..pairs.max(10) {
        let mut pair = [Duration::ZERO; 2];
        for (i, tool) in ["py_sdk_echo", "py_hand_echo"].into_iter().enumerate() {
            let t = Instant::now();
            let o = host
                .call(tool, input.clone(), Invocation::default())
                .await
                .unwrap();
            pair[i] = t.elapsed();
            assert_eq!(o.result, "HI");
        }
        sdk_t.push(pair[0]);
        hand_t.push(pair[1]);
    }
    let sdk_minus_hand_us = median_diff_us(&sdk_t, &hand_t);
    json!({"sdk_p50_us": pct(&mut sdk_t, 50), "hand_p50_us": pct(&mut hand_t, 50),
           "sdk_minus_hand_us": sdk_minus_hand_us})
}

pub(crate) fn print(r: &Value) {
    println!("python echo per call (µs)      SDK p50  by hand p50  SDK - by hand");
    for row in r["python_sdk_vs_hand"].as_array().unwrap() {
        println!(
            "  sandbox {:<20} {:>9} {:>12} {:>14}",
            cell(&row["sandbox"]),
            cell(&row["sdk_p50_us"]),
            cell(&row["hand_p50_us"]),
            cell(&row["sdk_minus_hand_us"])
        );
    }
}
