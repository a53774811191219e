//! Turning samples into the figures the rows report: percentiles in
//! microseconds, ratios, and calls per second under a fixed concurrency.
//! Figures are rounded here, once, so every row reads alike.

use std::sync::Arc;
use std::time::{Duration, Instant};

use plughost::PluginHost;
use plughost::protocol::Invocation;
use serde_json::json;

/// The `p`th percentile of `samples` in microseconds, one decimal.
pub(crate) fn pct(samples: &mut [Duration], p: usize) -> f64 {
    samples.sort();
    let i = ((samples.len() - 1) * p) / 100;
    round1(samples[i].as_secs_f64() * 1e6)
}

/// `a / b`, three decimals.
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    (a / b * 1000.0).round() / 1000.0
}

/// One decimal.
pub(crate) fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Kilobytes as megabytes, one decimal.
pub(crate) fn mb(kb: f64) -> f64 {
    round1(kb / 1024.0)
}

/// The median of paired differences `a[i] - b[i]`, in microseconds: less
/// noisy than the difference of two medians when both drift together.
pub(crate) fn median_diff_us(a: &[Duration], b: &[Duration]) -> f64 {
    let mut d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| a.as_secs_f64() - b.as_secs_f64())
        .collect();
    d.sort_by(f64::total_cmp);
    round1(d[d.len() / 2] * 1e6)
}

/// Calls per second of `calls` futures made by `make`, at most `concurrency`
/// of them in flight at once.
pub(crate) async fn rate<F, Fut>(concurrency: usize, calls: usize, make: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let sem = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(calls);
    for i in 0..calls {
        let permit = sem.clone().acquire_owned().await.unwrap();
        let fut = make(i);
        tasks.push(tokio::spawn(async move {
            fut.await;
            drop(permit);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    calls as f64 / start.elapsed().as_secs_f64()
}

/// [`rate`] of calls of `tool`, without input, through `host`.
pub(crate) async fn call_rate(
    host: &PluginHost,
    tool: &str,
    concurrency: usize,
    calls: usize,
) -> f64 {
    rate(concurrency, calls, |_| {
        let call = host.call(tool, json!({}), Invocation::default());
        async move {
            call.await.unwrap();
        }
    })
    .await
}

/// A process's own `/proc/self/status` field in kB (`VmRSS`, `VmHWM`).
pub(crate) fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}
