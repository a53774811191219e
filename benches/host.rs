//! The host's cost next to a raw spawn of the same plugin, measured side by
//! side in one run so the machine's noise cancels. Run through `scripts/bench`.
//!
//! `--json` prints one object with `call_latency`, `throughput`,
//! `flood_peak_rss_mb`, `inflight_peak_rss_mb`, `load_1000_ms`,
//! `reload_latency_ms`, `mcp_roundtrip_us`, `library_call_us` and
//! `python_sdk_vs_hand`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plughost::{Invocation, PluginHost, SandboxMode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TINY_C: &str = r#"
#include <unistd.h>
int main(void) {
    char buf[65536];
    while (read(0, buf, sizeof buf) > 0) {}
    static const char out[] = "{\"result\":\"ok\"}";
    write(1, out, sizeof out - 1);
    return 0;
}
"#;

struct Bench {
    dir: PathBuf,
    plugins: PathBuf,
    state: PathBuf,
    quick: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return child_mode(&args[i + 1], &args[i + 2..]);
    }
    let json_out = args.iter().any(|a| a == "--json");
    let quick = args.iter().any(|a| a == "--quick");
    let dir = std::env::temp_dir().join(format!("plughost-bench-{}", std::process::id()));
    let bench = Bench {
        plugins: dir.join("plugins"),
        state: dir.join("state"),
        dir,
        quick,
    };
    std::fs::create_dir_all(&bench.plugins).unwrap();
    bench.setup();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let report = rt.block_on(bench.run());
    let _ = std::fs::remove_dir_all(&bench.dir);
    if json_out {
        println!("{}", serde_json::to_string_pretty(&report).unwrap());
    } else {
        print_table(&report);
    }
}

impl Bench {
    fn setup(&self) {
        let tiny = self.plugins.join("tiny");
        std::fs::create_dir_all(&tiny).unwrap();
        std::fs::write(self.dir.join("tiny.c"), TINY_C).unwrap();
        let status = std::process::Command::new("gcc")
            .args(["-O2", "-static", "-o"])
            .arg(tiny.join("main"))
            .arg(self.dir.join("tiny.c"))
            .status()
            .expect("gcc runs");
        assert!(status.success(), "gcc failed");
        write_manifest(&tiny, "tiny", "main", "tiny_echo");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        for example in ["hello-world", "password-gen"] {
            copy_dir(
                &repo.join("plugins-examples").join(example),
                &self.plugins.join(example),
            );
        }
        // password-gen is persistent; its row measures a process per call.
        let manifest = self.plugins.join("password-gen/plugin.json");
        let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
        m.as_object_mut().unwrap().remove("persistent");
        std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
        self.python_echo_plugins();
        let flood = self.plugins.join("flood");
        std::fs::create_dir_all(&flood).unwrap();
        std::fs::write(
            flood.join("main.sh"),
            "#!/bin/sh\nexec head -c 1000000000 /dev/zero\n",
        )
        .unwrap();
        set_exec(&flood.join("main.sh"));
        write_manifest(&flood, "flood", "main.sh", "flood_stdout");
    }

    /// The echo tool of `plughost new --lang python` (on the SDK, compiled at
    /// scaffold time) and the same tool written by hand, both per call. Both
    /// run the real interpreter rather than a pyenv shim: the shim's start-up
    /// varies by tens of milliseconds, which would hide the SDK's cost.
    fn python_echo_plugins(&self) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_plughost"))
            .args(["new", "py-sdk", "--lang", "python", "--dir"])
            .arg(&self.plugins)
            .output()
            .unwrap();
        assert!(out.status.success(), "plughost new failed");
        let hand = self.plugins.join("py-hand");
        std::fs::create_dir_all(&hand).unwrap();
        std::fs::write(hand.join("main.py"), include_str!("hand_echo.py")).unwrap();
        set_exec(&hand.join("main.py"));
        let sdk_manifest = self.plugins.join("py-sdk/plugin.json");
        let mut m: Value = serde_json::from_slice(&std::fs::read(sdk_manifest).unwrap()).unwrap();
        m["name"] = json!("py-hand");
        m["tools"][0]["name"] = json!("py_hand_echo");
        std::fs::write(hand.join("plugin.json"), serde_json::to_vec(&m).unwrap()).unwrap();
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .unwrap();
        let python = String::from_utf8(out.stdout).unwrap();
        for main in [self.plugins.join("py-sdk/main.py"), hand.join("main.py")] {
            let text = std::fs::read_to_string(&main).unwrap();
            let body = text.split_once('\n').unwrap().1;
            std::fs::write(&main, format!("#!{}\n{body}", python.trim())).unwrap();
        }
    }

    fn host(&self) -> PluginHost {
        self.host_with(SandboxMode::Off)
    }

    fn host_with(&self, sandbox: SandboxMode) -> PluginHost {
        PluginHost::builder()
            .plugins_dir(&self.plugins)
            .state_dir(&self.state)
            .concurrency(64)
            .sandbox(sandbox)
            .build()
            .unwrap()
    }

    async fn run(&self) -> Value {
        let host = Arc::new(self.host());
        let sandboxed = self.host_with(SandboxMode::On);
        let n = if self.quick { 100 } else { 1000 };
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
            for (h, sandbox) in [(&*host, false), (&sandboxed, true)] {
                let row = self.latency(h, plugin, tool, entry, &input, calls).await;
                latency.push(with_sandbox(row, sandbox));
            }
        }
        let mut throughput = Vec::new();
        for concurrency in [1, 2, 8, 32] {
            throughput.push(
                self.throughput(&host, concurrency, if self.quick { 200 } else { 2000 })
                    .await,
            );
        }
        let library_call_us = latency[0]["host_p50_us"].clone();
        let mut python_sdk_vs_hand = Vec::new();
        for (h, sandbox) in [(&*host, false), (&sandboxed, true)] {
            let row = self.sdk_vs_hand(h, n / 5).await;
            python_sdk_vs_hand.push(with_sandbox(row, sandbox));
        }
        json!({
            "call_latency": latency,
            "throughput": throughput,
            "flood_peak_rss_mb": self.peak_rss("flood", &[]),
            "inflight_peak_rss_mb": self.peak_rss("inflight", &["200"]),
            "load_1000_ms": self.load_1000(),
            "reload_latency_ms": self.reload_latency().await,
            "mcp_roundtrip_us": self.mcp_roundtrip(n).await,
            "library_call_us": library_call_us,
            "python_sdk_vs_hand": python_sdk_vs_hand,
        })
    }

    /// What the SDK costs per call: the SDK echo and the hand-written echo
    /// through the host, called in turn so drift affects both alike; p50 of
    /// each and the median of the pairs' differences.
    async fn sdk_vs_hand(&self, host: &PluginHost, pairs: usize) -> Value {
        let input = json!({"text": "hi", "shout": true});
        let (mut sdk_t, mut hand_t, mut diffs) = (Vec::new(), Vec::new(), Vec::new());
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
            diffs.push(pair[0].as_secs_f64() - pair[1].as_secs_f64());
        }
        diffs.sort_by(f64::total_cmp);
        let median_diff = diffs[diffs.len() / 2] * 1e6;
        json!({"sdk_p50_us": pct(&mut sdk_t, 50), "hand_p50_us": pct(&mut hand_t, 50),
               "sdk_minus_hand_us": (median_diff * 10.0).round() / 10.0})
    }

    async fn latency(
        &self,
        host: &PluginHost,
        plugin: &str,
        tool: &str,
        entry: &str,
        input: &Value,
        calls: usize,
    ) -> Value {
        let program = self.plugins.join(plugin).join(entry);
        let request = raw_request(tool, input, &self.plugins.join(plugin), &self.state);
        let (mut host_t, mut raw_t) = (Vec::new(), Vec::new());
        // Interleave host and raw calls so drift affects both alike.
        for _ in 0..calls.max(10) {
            let t = Instant::now();
            host.call(tool, input.clone(), Invocation::default())
                .await
                .unwrap();
            host_t.push(t.elapsed());
            let t = Instant::now();
            raw_call(&program, &self.plugins.join(plugin), &request).await;
            raw_t.push(t.elapsed());
        }
        let (hp50, hp99, rp50, rp99) = (
            pct(&mut host_t, 50),
            pct(&mut host_t, 99),
            pct(&mut raw_t, 50),
            pct(&mut raw_t, 99),
        );
        json!({"plugin": plugin, "sandbox": false, "host_p50_us": hp50, "host_p99_us": hp99,
               "raw_p50_us": rp50, "raw_p99_us": rp99, "ratio_p50": ratio(hp50, rp50)})
    }

    async fn throughput(&self, host: &Arc<PluginHost>, concurrency: usize, calls: usize) -> Value {
        let program = Arc::new(self.plugins.join("tiny/main"));
        let cwd = Arc::new(self.plugins.join("tiny"));
        let request = Arc::new(raw_request("tiny_echo", &json!({}), &cwd, &self.state));
        let host_rate = rate(concurrency, calls, |_| {
            let call = host.call("tiny_echo", json!({}), Invocation::default());
            async move {
                call.await.unwrap();
            }
        })
        .await;
        let raw_rate = rate(concurrency, calls, |_| {
            let (p, c, r) = (program.clone(), cwd.clone(), request.clone());
            async move { raw_call(&p, &c, &r).await }
        })
        .await;
        json!({"plugin": "tiny", "concurrency": concurrency, "host_calls_per_s": host_rate.round(),
               "raw_calls_per_s": raw_rate.round(), "ratio": ratio(host_rate, raw_rate)})
    }

    /// p50 of a `tools/call` of the tiny plugin through `plughost serve` on stdio,
    /// from a real MCP client.
    async fn mcp_roundtrip(&self, calls: usize) -> f64 {
        use rmcp::ServiceExt;
        use rmcp::model::CallToolRequestParams;
        use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_plughost")).configure(|c| {
            c.arg("--plugins-dir")
                .arg(&self.plugins)
                .arg("--state-dir")
                .arg(&self.state)
                .arg("--no-sandbox")
                .arg("serve");
        });
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let client = ().serve(transport).await.unwrap();
        let mut samples = Vec::new();
        for _ in 0..calls.max(10) {
            let t = Instant::now();
            let r = client
                .call_tool(CallToolRequestParams::new("tiny_echo"))
                .await
                .unwrap();
            assert_eq!(r.is_error, Some(false));
            samples.push(t.elapsed());
        }
        let _ = client.cancel().await;
        pct(&mut samples, 50)
    }

    /// Peak RSS (MB) of the host in a fresh process running one scenario
    /// (`--child MODE`): its own `VmHWM`, so plugin processes do not count.
    fn peak_rss(&self, mode: &str, extra: &[&str]) -> f64 {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .arg("--child")
            .arg(mode)
            .arg(&self.plugins)
            .arg(&self.state)
            .args(extra)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "child {mode} failed");
        let kb: f64 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("the child prints VmHWM");
        (kb / 1024.0 * 10.0).round() / 10.0
    }

    fn load_1000(&self) -> f64 {
        let root = self.dir.join("thousand");
        for i in 0..1000 {
            let d = root.join(format!("p{i:04}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("main.sh"), "#!/bin/sh\necho '{\"result\":\"x\"}'\n").unwrap();
            set_exec(&d.join("main.sh"));
            write_manifest(&d, &format!("p{i:04}"), "main.sh", &format!("tool_{i:04}"));
        }
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            let host = PluginHost::builder()
                .plugins_dir(&root)
                .state_dir(&self.state)
                .build()
                .unwrap();
            assert_eq!(host.tools().len(), 1000);
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
        }
        (best * 10.0).round() / 10.0
    }

    async fn reload_latency(&self) -> f64 {
        let host = self.host();
        let _watch = host.watch().unwrap();
        let mut samples = Vec::new();
        for i in 0..5 {
            let name = format!("fresh{i}");
            let d = self.plugins.join(&name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("main.sh"), "#!/bin/sh\necho '{\"result\":\"x\"}'\n").unwrap();
            set_exec(&d.join("main.sh"));
            write_manifest(&d, &name, "main.sh", &format!("fresh_tool_{i}"));
            let last_write = Instant::now();
            let tool = format!("fresh_tool_{i}");
            while !host.tools().iter().any(|t| t.name == tool) {
                assert!(
                    last_write.elapsed() < Duration::from_secs(10),
                    "the watcher never loaded {name}"
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            samples.push(last_write.elapsed());
            let _ = std::fs::remove_dir_all(&d);
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        (pct(&mut samples, 50) / 100.0).round() / 10.0
    }
}

/// `--child flood|inflight PLUGINS STATE [N]`: one scenario in a fresh process.
fn child_mode(mode: &str, args: &[String]) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let host = Arc::new(
            PluginHost::builder()
                .plugins_dir(&args[0])
                .state_dir(&args[1])
                .concurrency(256)
                .sandbox(if std::env::var_os("BENCH_NO_SANDBOX").is_some() {
                    SandboxMode::Off
                } else {
                    SandboxMode::On
                })
                .build()
                .unwrap(),
        );
        match mode {
            "flood" => {
                let e = host
                    .call("flood_stdout", json!({}), Invocation::default())
                    .await
                    .unwrap_err();
                assert_eq!(e.kind(), plughost::ErrorKind::OutputTooLarge);
            }
            "inflight" => {
                let n: usize = args[2].parse().unwrap();
                let calls: Vec<_> = (0..n)
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
            "profile" => {
                // For profilers: N tiny calls back to back.
                let n: usize = args[2].parse().unwrap();
                for _ in 0..n {
                    host.call("tiny_echo", json!({}), Invocation::default())
                        .await
                        .unwrap();
                }
            }
            other => panic!("unknown child mode {other}"),
        }
    });
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap();
    println!("{}", hwm.trim().trim_end_matches("kB").trim());
}

async fn rate<F, Fut>(concurrency: usize, calls: usize, make: F) -> f64
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

/// The minimal raw spawn the host is compared with: tokio process, stdin
/// written, stdout read, wait.
async fn raw_call(program: &Path, cwd: &Path, request: &[u8]) {
    let mut child = tokio::process::Command::new(program)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let write = async {
        let _ = stdin.write_all(request).await;
        drop(stdin);
    };
    let mut out = Vec::new();
    let read = stdout.read_to_end(&mut out);
    let (_, r) = tokio::join!(write, read);
    r.unwrap();
    child.wait().await.unwrap();
    assert!(!out.is_empty());
}

fn raw_request(tool: &str, input: &Value, plugin_dir: &Path, state: &Path) -> Vec<u8> {
    let data = state.join("data").join(plugin_dir.file_name().unwrap());
    std::fs::create_dir_all(&data).unwrap();
    serde_json::to_vec(&json!({"tool": tool, "input": input, "context": {"plugin_dir": plugin_dir, "data_dir": data}}))
        .unwrap()
}

fn with_sandbox(mut row: Value, sandbox: bool) -> Value {
    row["sandbox"] = json!(sandbox);
    row
}

fn pct(samples: &mut [Duration], p: usize) -> f64 {
    samples.sort();
    let i = ((samples.len() - 1) * p) / 100;
    (samples[i].as_secs_f64() * 1e7).round() / 10.0
}

fn ratio(a: f64, b: f64) -> f64 {
    (a / b * 1000.0).round() / 1000.0
}

fn write_manifest(dir: &Path, name: &str, entry: &str, tool: &str) {
    let m = json!({"name": name, "version": "1.0.0", "description": "bench", "entrypoint": entry, "permissions": [],
        "tools": [{"name": tool, "description": "bench", "input_schema": {"type": "object"}}]});
    std::fs::write(dir.join("plugin.json"), serde_json::to_vec(&m).unwrap()).unwrap();
}

fn set_exec(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn print_table(r: &Value) {
    println!("per-call latency (µs)          host p50  host p99   raw p50   raw p99  host/raw p50");
    for row in r["call_latency"].as_array().unwrap() {
        println!(
            "  {:<14} sandbox {:<5} {:>9} {:>9} {:>9} {:>9} {:>12}",
            row["plugin"].as_str().unwrap(),
            row["sandbox"],
            row["host_p50_us"],
            row["host_p99_us"],
            row["raw_p50_us"],
            row["raw_p99_us"],
            row["ratio_p50"]
        );
    }
    println!("throughput (calls/s)  concurrency      host       raw  host/raw");
    for row in r["throughput"].as_array().unwrap() {
        println!(
            "  {:<20} {:>10} {:>9} {:>9} {:>9}",
            row["plugin"].as_str().unwrap(),
            row["concurrency"],
            row["host_calls_per_s"],
            row["raw_calls_per_s"],
            row["ratio"]
        );
    }
    println!("python echo per call (µs)      SDK p50  by hand p50  SDK - by hand");
    for row in r["python_sdk_vs_hand"].as_array().unwrap() {
        println!(
            "  sandbox {:<20} {:>9} {:>12} {:>14}",
            row["sandbox"], row["sdk_p50_us"], row["hand_p50_us"], row["sdk_minus_hand_us"]
        );
    }
    for key in [
        "flood_peak_rss_mb",
        "inflight_peak_rss_mb",
        "load_1000_ms",
        "reload_latency_ms",
        "mcp_roundtrip_us",
        "library_call_us",
    ] {
        println!("{key:<24} {}", r[key]);
    }
}
