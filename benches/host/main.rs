//! The host's cost next to a raw baseline of the same plugin, measured side by
//! side in one run so the machine's noise cancels: ratios and differences
//! count, absolute times move from run to run. Run through `scripts/bench`
//! (`--quick` for fewer calls, `--json` for one JSON object, `--only
//! GROUP[,GROUP]` for some groups: `calls`, `protected`, `net`, `traces`, `spawn`,
//! `children`, `workers`, `mcp`, `http`, `sdk`, `load`, `search`, `fleet`, `brokered`).
//!
//! Each module measures one group of rows and prints its section of the table:
//! `calls` (a process per call), `traces` (a span per call, exported),
//! `spawn` (the ways to start a process),
//! `workers` (persistent plugins), `mcp` (MCP on either side of the host),
//! `http` (MCP over HTTP at 2026-07-28 and 2025-11-25),
//! `sdk` (the Python SDK's own cost), `load` (loading and hot reload),
//! `children` (scenarios run in a fresh process, for memory and file
//! descriptors), `search` (tool search's recall and the tool list's size),
//! `fleet` (replicas behind HAProxy), `brokered` (a secret placed on HTTPS
//! requests by the egress proxy). `raw` holds the baselines, `fixtures` the plugins, `stats`
//! the arithmetic.
//!
//! # JSON keys
//!
//! Times are microseconds (`_us`) or milliseconds (`_ms`), one decimal;
//! `ratio`s are host / baseline. `sandbox` says whether the host confined the
//! plugin. A row that cannot be measured on this machine (no node, no static
//! C toolchain for the helper, no Python MCP SDK) says why in `skipped`
//! instead of vanishing.
//!
//! - `call_latency`: `[{plugin, sandbox, host_p50_us, host_p99_us,
//!   raw_p50_us, raw_p99_us, ratio_p50}]`: a process per call through
//!   `PluginHost::call`, interleaved with a raw tokio spawn of the same plugin.
//!   Plugins: `tiny` (static C), `hello-world` (bash), `password-gen`
//!   (python3).
//! - `protected_paths`: `[{plugin, granted_p50_us, granted_p99_us,
//!   bare_p50_us, ratio_p50}]`: the tiny plugin granted `filesystem:read`
//!   (`tiny-reader`) or read and write (`tiny-writer`), sandboxed, whose
//!   rulesets are built around the protected paths, in turn with the same
//!   binary granted nothing (`bare`, nothing to build around).
//! - `throughput`: `[{plugin, sandbox, concurrency, host_calls_per_s,
//!   raw_calls_per_s, ratio}]`: the tiny plugin at 1, 2, 8 and 32 calls in
//!   flight, sandbox off and on.
//! - `library_call_us`: `call_latency`'s tiny p50 without the sandbox.
//! - `host_grants`: `[{level, granted_p50_us, granted_p99_us, bare_p50_us,
//!   raw_p50_us, ratio_p50, ratio_raw_p50}]`: the tiny plugin granted one
//!   host (`tiny-hosts`, held to the egress proxy), the same binary granted
//!   nothing (`bare`, sandboxed, no network) and a raw spawn, in turn, at
//!   `level` `namespace` (user and network namespaces) and `proxy_port`
//!   (namespaces off: Landlock's TCP rule). `ratio_p50` is granted / bare.
//! - `host_grants_throughput`: `[{level, concurrency, granted_calls_per_s,
//!   bare_calls_per_s, ratio}]`: the same two at 2 and 32 calls in flight.
//! - `proxy_download`: `[{level, proxied_p50_ms, direct_p50_ms,
//!   ratio_p50}]`: curl in a plugin downloading a megabyte from an origin on
//!   127.0.0.1, through the egress proxy (`fetch-proxied`) or directly, with
//!   plain `network` (`fetch-direct`), in turn; both sandboxed.
//! - `tracing`: `{rows: [{plugin, sandbox, calls, on_p50_us, on_p99_us,
//!   off_p50_us, off_p99_us, ratio_p50}], exports}`: the tiny plugin through
//!   a host that makes a span per call and exports it over OTLP/HTTP (the
//!   SDK's batch processor, the command line's HTTP client) to a receiver in
//!   the bench, in turn with a host without a tracer; `exports` is how many
//!   exports the receiver took.
//! - `spawn_paths`: `[{host_mb, host_rss_mb, path, p50_us, p99_us,
//!   ratio_p50}]`: one full exchange with the tiny plugin, in a fresh process
//!   holding `host_mb` of touched memory (its `VmRSS` is `host_rss_mb`), by
//!   `path`: `posix_spawn` (raw tokio), `fork_exec` (raw with a no-op
//!   `pre_exec` hook), `landlock_helper` (raw, through a static helper that
//!   confines itself with Landlock and execs the plugin), `host_sandbox_off`,
//!   `host_sandbox_on`. `ratio_p50` is against `posix_spawn` of the same size.
//! - `soak`: `{calls, fds_before, fds_after, rss_before_kb, rss_after_kb}`: a
//!   sandboxed host in a fresh process, its open file descriptors and `VmRSS`
//!   after 20 warm-up calls and after `calls` more.
//! - `persistent`: `[{plugin, mode, sandbox, calls, host_p50_us, host_p99_us}]`
//!   for `plugin` `tiny` (static C), `python` and `node` (the echo of
//!   `plughost new --persistent`) in `mode` `persistent` (a worker) and
//!   `spawn` (the same plugin without `persistent`). Persistent rows add
//!   `line_raw_p50_us` and `line_raw_p99_us` (a request line written to a
//!   running copy of the worker by the bench itself, interleaved with the host's
//!   calls) and `host_minus_raw_us` (the p50s' difference).
//! - `persistent_serve`: `[{plugin, sandbox, calls, serve_p50_us,
//!   serve_p99_us}]`: `tools/call` of the python and node workers through
//!   `plughost serve` on stdio, from rmcp's client.
//! - `persistent_throughput`: `{plugin, max_workers, workers, concurrency,
//!   calls, calls_per_s}`: 32 callers at once on the python echo with
//!   `max_workers: 4`; `workers` is how many were running at the end.
//! - `idle_workers_rss_mb`: `VmRSS` of a fresh process whose host has 16
//!   idle workers (the workers' memory is their own).
//! - `mcp_roundtrip_us`: p50 of a `tools/call` of the tiny plugin through
//!   `plughost serve --no-sandbox` on stdio.
//! - `mcp_http`: `[{what, modern_p50_us, modern_p99_us, legacy_p50_us,
//!   legacy_p99_us, modern_over_legacy_p50, direct_p50_us, direct_p99_us,
//!   modern_over_direct_p50}]`: a `tools/call` over HTTP through `plughost
//!   serve --http` at 2026-07-28 (no session) and at 2025-11-25 (in a
//!   session), in turn, for `tiny` (sandboxed) and for the conformance
//!   fixture run as an MCP server plugin, whose row also has the fixture
//!   served directly (`direct_…`, at 2025-11-25).
//! - `mcp_server`: `[{what, sandbox, calls, library_p50_us, library_p99_us,
//!   serve_p50_us, serve_p99_us, direct_p50_us, direct_p99_us,
//!   library_ratio_p50, serve_ratio_p50}]`: a Python MCP SDK server wrapped
//!   as a plugin, `what` being a trivial `tools/call` or a `resources/read`,
//!   through `PluginHost` (the library), through `plughost serve` on stdio
//!   (rmcp's client), and the same server spawned once and asked by rmcp's
//!   client directly (speaking the host's protocol version), interleaved;
//!   `{"skipped": "why"}` when the SDK cannot be found.
//! - `python_sdk_vs_hand`: `[{sandbox, sdk_p50_us, hand_p50_us,
//!   sdk_minus_hand_us}]`: the echo of `plughost new --lang python` (on the
//!   SDK) next to the same tool written by hand, a process per call, in turn;
//!   `sdk_minus_hand_us` is the median of the pairs' differences.
//! - `flood_peak_rss_mb`, `inflight_peak_rss_mb`: the host's own `VmHWM` in a
//!   fresh process while a plugin floods 1 GB to stdout, and with 200 calls
//!   in flight.
//! - `load_1000_ms`: building a host over 1,000 plugin folders (best of 3).
//! - `reload_latency_ms`: a new plugin folder's last write to its tool being
//!   callable, with the watcher (p50 of 5).
//! - `fleet`: `{clients, throughput: [{replicas, calls_per_second}],
//!   through_haproxy_p50_us, direct_p50_us, added_p50_us,
//!   through_over_direct_p50}`: `tiny` over HTTP at 2026-07-28 through
//!   HAProxy with 1, 2, 3 replicas of `serve --http` (8 clients), and one
//!   client through HAProxy next to the same calls straight to the replica;
//!   `{"skipped": "why"}` without haproxy.

mod brokered;
mod calls;
mod children;
mod fixtures;
mod http;
// The built binary, found as the integration tests find it.
#[path = "../../tests/util/binary.rs"]
mod binary;
mod fleet;
mod load;
mod mcp;
mod net;
mod raw;
mod sdk;
mod search;
mod spawn;
mod stats;
// The OTLP exporter and its client come with the `otel` feature.
#[cfg(feature = "otel")]
mod traces;
mod workers;

use std::path::{Path, PathBuf};

use plughost::{PluginHost, SandboxMode};
use serde_json::{Value, json};

/// The bench's folders, and how long to run.
pub(crate) struct Bench {
    /// Everything the bench writes, removed at the end.
    pub(crate) dir: PathBuf,
    pub(crate) plugins: PathBuf,
    pub(crate) state: PathBuf,
    pub(crate) quick: bool,
    /// The real node binary, when there is one.
    pub(crate) node: Option<PathBuf>,
    /// The port of the HTTP origin on 127.0.0.1 (`net.rs`).
    pub(crate) origin: u16,
    /// The groups to measure (`--only`); all when `None`.
    only: Option<Vec<String>>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return children::main(&args[i + 1], &args[i + 2..]);
    }
    if let Some(code) = brokered::reexec_with_roots(&args) {
        std::process::exit(code);
    }
    let json_out = args.iter().any(|a| a == "--json");
    let quick = args.iter().any(|a| a == "--quick");
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|groups| groups.split(',').map(str::to_owned).collect());
    // In the target folder, not the system's temp folder: the rules kept
    // around plughost's state folder grow with the entries of the folders
    // above it, and what else sits in /tmp should not move the figures.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("plughost-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The host canonicalizes plugin folders: the raw requests must name the
    // same paths.
    let dir = dir.canonicalize().unwrap();
    let mut bench = Bench {
        plugins: dir.join("plugins"),
        state: dir.join("state"),
        dir,
        quick,
        only,
        node: None,
        origin: 0,
    };
    fixtures::setup(&mut bench);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let report = rt.block_on(bench.run());
    drop(rt);
    let _ = std::fs::remove_dir_all(&bench.dir);
    if json_out {
        println!("{}", serde_json::to_string_pretty(&report).unwrap());
    } else {
        print_table(&bench, &report);
    }
}

impl Bench {
    /// `full` in a full run, `quick` with `--quick`.
    pub(crate) fn iters(&self, full: usize, quick: usize) -> usize {
        if self.quick { quick } else { full }
    }

    /// A host over the bench's plugins; `sandbox` on or off.
    pub(crate) fn host(&self, sandbox: bool) -> PluginHost {
        self.host_with(sandbox, true)
    }

    /// [`Self::host`], with user namespaces when `namespaces`.
    pub(crate) fn host_with(&self, sandbox: bool, namespaces: bool) -> PluginHost {
        PluginHost::builder()
            .namespaces(namespaces)
            .plugins_dir(&self.plugins)
            .state_dir(&self.state)
            .concurrency(64)
            .sandbox(if sandbox {
                SandboxMode::On
            } else {
                SandboxMode::Off
            })
            .build()
            .unwrap()
    }

    /// Whether the group `name` is measured in this run.
    fn runs(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|g| g == name))
    }

    async fn run(&self) -> Value {
        let mut report = json!({});
        if self.runs("calls") {
            calls::rows(self, &mut report).await;
        }
        if self.runs("protected") {
            calls::protected_rows(self, &mut report).await;
        }
        if self.runs("net") {
            net::rows(self, &mut report).await;
        }
        #[cfg(feature = "otel")]
        if self.runs("traces") {
            traces::rows(self, &mut report).await;
        }
        if self.runs("spawn") {
            spawn::rows(self, &mut report);
        }
        if self.runs("children") {
            children::soak(self, &mut report);
        }
        if self.runs("workers") {
            workers::rows(self, &mut report).await;
        }
        if self.runs("mcp") {
            mcp::rows(self, &mut report).await;
        }
        if self.runs("http") {
            http::rows(self, &mut report).await;
        }
        if self.runs("sdk") {
            sdk::rows(self, &mut report).await;
        }
        if self.runs("children") {
            children::peak_rss(self, &mut report);
        }
        if self.runs("load") {
            load::rows(self, &mut report).await;
        }
        if self.runs("search") {
            search::rows(self, &mut report);
        }
        if self.runs("fleet") {
            fleet::rows(self, &mut report).await;
        }
        if self.runs("brokered") {
            brokered::rows(self, &mut report).await;
        }
        report
    }
}

/// A JSON value as a table cell: strings without their quotes, nothing for
/// an absent value. (`Value`'s own `Display` ignores widths.)
pub(crate) fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One section per group measured, each with its header line.
fn print_table(bench: &Bench, r: &Value) {
    type Print = fn(&Value);
    let groups: [(&str, Print); 14] = [
        ("calls", calls::print),
        ("protected", calls::print_protected),
        ("net", net::print),
        #[cfg(feature = "otel")]
        ("traces", traces::print),
        #[cfg(not(feature = "otel"))]
        ("traces", |_| {}),
        ("spawn", spawn::print),
        ("children", children::print),
        ("workers", workers::print),
        ("mcp", mcp::print),
        ("http", http::print),
        ("sdk", sdk::print),
        ("load", load::print),
        ("search", search::print),
        ("fleet", fleet::print),
        ("brokered", brokered::print),
    ];
    for (name, print) in groups {
        if bench.runs(name) {
            print(r);
        }
    }
}
