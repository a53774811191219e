//! MCP on either side of the host: `plughost serve` answering rmcp's client
//! (a per-call plugin, and persistent workers), and a real Python MCP SDK
//! server run as a plugin, next to the same server called directly.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use plughost::approval::Approval;
use plughost::protocol::Invocation;
use plughost::{CallOptions, PluginHost};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
    ReadResourceRequestParams,
};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::stats::{pct, ratio};
use crate::workers::tool_of;
use crate::{Bench, cell, fixtures};

type Client = RunningService<RoleClient, ()>;

pub(crate) async fn rows(bench: &Bench, report: &mut Value) {
    let n = bench.iters(1000, 100);
    let client = serve(bench, false).await;
    let mut t = Vec::with_capacity(n);
    for _ in 0..n.max(10) {
        t.push(tool_call(&client, "tiny_echo", &json!({})).await);
    }
    let _ = client.cancel().await;
    report["mcp_roundtrip_us"] = json!(pct(&mut t, 50));

    let client = serve(bench, true).await;
    let mut rows = Vec::new();
    for (label, plugin) in [("python", "py-worker"), ("node", "node-worker")] {
        if label == "node" && bench.node.is_none() {
            rows.push(json!({"plugin": label, "skipped": "node was not found"}));
            continue;
        }
        let (tool, input) = tool_of(plugin);
        for _ in 0..20 {
            tool_call(&client, &tool, &input).await;
        }
        let n = bench.iters(2000, 300);
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            t.push(tool_call(&client, &tool, &input).await);
        }
        rows.push(json!({"plugin": label, "sandbox": true, "calls": n,
                         "serve_p50_us": pct(&mut t, 50), "serve_p99_us": pct(&mut t, 99)}));
    }
    let _ = client.cancel().await;
    report["persistent_serve"] = json!(rows);

    report["mcp_server"] = match python_mcp_sdk() {
        Ok(pydeps) => mcp_server_row(bench, &pydeps).await,
        Err(why) => json!({"skipped": why}),
    };
}

/// `plughost serve` on stdio over the bench's plugins, and a client of it.
async fn serve(bench: &Bench, sandbox: bool) -> Client {
    let cmd = Command::new(crate::binary::plughost()).configure(|c| {
        c.arg("--plugins-dir")
            .arg(&bench.plugins)
            .arg("--state-dir")
            .arg(&bench.state);
        if !sandbox {
            c.arg("--no-sandbox");
        }
        c.arg("serve");
    });
    connect(cmd).await
}

async fn connect(cmd: Command) -> Client {
    connect_as((), cmd).await
}

async fn connect_as<H: ClientHandler>(handler: H, cmd: Command) -> RunningService<RoleClient, H> {
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    handler.serve(transport).await.unwrap()
}

/// One `tools/call`, which must succeed; how long it took.
async fn tool_call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    input: &Value,
) -> Duration {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Some(args) = input.as_object().filter(|a| !a.is_empty()) {
        params = params.with_arguments(args.clone());
    }
    let t = Instant::now();
    let r = client.call_tool(params).await.unwrap();
    let took = t.elapsed();
    assert_eq!(r.is_error, Some(false), "{tool}: {r:?}");
    took
}

/// The Python MCP SDK's folder (for `PYTHONPATH`): `PLUGHOST_PYDEPS`, else
/// `pydeps` in the cargo target folder, else the checkout's `target/pydeps`.
fn python_mcp_sdk() -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    candidates.extend(std::env::var_os("PLUGHOST_PYDEPS").map(PathBuf::from));
    candidates
        .extend(std::env::var_os("CARGO_TARGET_DIR").map(|t| PathBuf::from(t).join("pydeps")));
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pydeps"));
    for deps in &candidates {
        let found = std::process::Command::new("python3")
            .args(["-c", "import mcp.server.mcpserver"])
            .env("PYTHONPATH", deps)
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return Ok(deps.clone());
        }
    }
    let looked: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    Err(format!(
        "the Python MCP SDK is not in {} (pip install --target target/pydeps 'mcp==2.3.0', or set PLUGHOST_PYDEPS)",
        looked.join(", ")
    ))
}

/// `tests/fixtures/mcp/server.py` as a plugin (`"protocol": "mcp"`, tools
/// named `py_…`) in a plugins folder of its own; its entrypoint.
fn server_plugin(bench: &Bench, pydeps: &Path) -> (PathBuf, PathBuf) {
    let plugins = bench.dir.join("mcp-plugins");
    let dir = plugins.join("pyserver");
    std::fs::create_dir_all(&dir).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        repo.join("tests/fixtures/mcp/server.py"),
        dir.join("server.py"),
    )
    .unwrap();
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap()
        .stdout;
    let main = dir.join("main.sh");
    std::fs::write(
        &main,
        format!(
            "#!/bin/sh\nPYTHONPATH='{}' PYTHONDONTWRITEBYTECODE=1 exec '{}' \"$(dirname \"$0\")/server.py\"\n",
            pydeps.display(),
            String::from_utf8_lossy(&python).trim()
        ),
    )
    .unwrap();
    fixtures::set_exec(&main);
    let manifest = json!({
        "name": "pyserver", "version": "1.0.0", "description": "The test MCP server.",
        "entrypoint": "main.sh", "protocol": "mcp", "tool_prefix": "py_",
        "permissions": [format!("filesystem:read:{}", pydeps.display())],
    });
    fixtures::write_manifest(&dir, &manifest);
    (plugins, main)
}

/// Its `echo` tool and its resource `fixture://greeting`, each through
/// `PluginHost` (the library), through `plughost serve` (stdio, rmcp's
/// client) and directly from rmcp's client, in turn.
async fn mcp_server_row(bench: &Bench, pydeps: &Path) -> Value {
    let (plugins, main) = server_plugin(bench, pydeps);
    let host = PluginHost::builder()
        .plugins_dir(&plugins)
        .state_dir(&bench.state)
        .build()
        .unwrap();
    assert_eq!(host.approve("pyserver").await.unwrap(), Approval::Approved);
    let mut cmd = Command::new(&main);
    cmd.current_dir(main.parent().unwrap());
    // The protocol version the host's client speaks (rmcp's default is a
    // newer one without `initialize`), so that both sides ask the server for
    // the same work.
    let config = || {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("plughost-bench", "0"),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    };
    let direct = connect_as(config(), cmd).await;
    let serve_cmd = Command::new(crate::binary::plughost()).configure(|c| {
        c.arg("--plugins-dir")
            .arg(&plugins)
            .arg("--state-dir")
            .arg(&bench.state)
            .arg("serve");
    });
    let served = connect_as(config(), serve_cmd).await;
    let input = json!({"text": "hi"});
    let lib_call = async || {
        let t = Instant::now();
        let o = host
            .call("py_echo", input.clone(), Invocation::default())
            .await
            .unwrap();
        let took = t.elapsed();
        assert_eq!(o.result, "hi");
        took
    };
    let lib_read = async || {
        let t = Instant::now();
        let r = host
            .read_resource(GREETING, CallOptions::default())
            .await
            .unwrap();
        let took = t.elapsed();
        assert_eq!(r["contents"][0]["text"], "hello from the fixture");
        took
    };
    for _ in 0..20 {
        lib_call().await;
        lib_read().await;
        tool_call(&direct, "echo", &input).await;
        tool_call(&served, "py_echo", &input).await;
        read(&direct).await;
        read(&served).await;
    }
    let n = bench.iters(1000, 200);
    let mut t: [Vec<Duration>; 6] = Default::default();
    for _ in 0..n {
        t[0].push(lib_call().await);
        t[1].push(tool_call(&served, "py_echo", &input).await);
        t[2].push(tool_call(&direct, "echo", &input).await);
        t[3].push(lib_read().await);
        t[4].push(read(&served).await);
        t[5].push(read(&direct).await);
    }
    let _ = direct.cancel().await;
    let _ = served.cancel().await;
    host.stop_workers().await;
    let row = |what: &str, [lib, serve, direct]: [&mut Vec<Duration>; 3]| {
        let (l, s, d) = (pct(lib, 50), pct(serve, 50), pct(direct, 50));
        json!({"what": what, "sandbox": true, "calls": n,
               "library_p50_us": l, "library_p99_us": pct(lib, 99),
               "serve_p50_us": s, "serve_p99_us": pct(serve, 99),
               "direct_p50_us": d, "direct_p99_us": pct(direct, 99),
               "library_ratio_p50": ratio(l, d), "serve_ratio_p50": ratio(s, d)})
    };
    let [a, b, c, d, e, f] = &mut t;
    json!([
        row("tools/call echo", [a, b, c]),
        row("resources/read", [d, e, f])
    ])
}

const GREETING: &str = "fixture://greeting";

/// One `resources/read` of the fixture's greeting; how long it took.
async fn read<H: ClientHandler>(client: &RunningService<RoleClient, H>) -> Duration {
    let t = Instant::now();
    let r = client
        .read_resource(ReadResourceRequestParams::new(GREETING))
        .await
        .unwrap();
    let took = t.elapsed();
    assert_eq!(r.contents.len(), 1, "{r:?}");
    took
}

pub(crate) fn print(r: &Value) {
    println!("MCP (µs)                                    p50       p99");
    println!(
        "  tiny through plughost serve       {:>11}",
        cell(&r["mcp_roundtrip_us"])
    );
    for row in r["persistent_serve"].as_array().unwrap() {
        let label = format!("{} worker through plughost serve", cell(&row["plugin"]));
        match row.get("skipped") {
            Some(why) => println!("  {label:<34} skipped: {}", cell(why)),
            None => println!(
                "  {label:<34} {:>9} {:>9}",
                cell(&row["serve_p50_us"]),
                cell(&row["serve_p99_us"])
            ),
        }
    }
    let m = &r["mcp_server"];
    match m.get("skipped") {
        Some(why) => println!("  Python SDK server: skipped: {}", cell(why)),
        None => {
            for row in m.as_array().unwrap() {
                println!("  Python SDK server, {}", cell(&row["what"]));
                println!(
                    "    through the library              {:>9} {:>9}  /direct p50 {}",
                    cell(&row["library_p50_us"]),
                    cell(&row["library_p99_us"]),
                    cell(&row["library_ratio_p50"])
                );
                println!(
                    "    through plughost serve           {:>9} {:>9}  /direct p50 {}",
                    cell(&row["serve_p50_us"]),
                    cell(&row["serve_p99_us"]),
                    cell(&row["serve_ratio_p50"])
                );
                println!(
                    "    rmcp's client directly           {:>9} {:>9}",
                    cell(&row["direct_p50_us"]),
                    cell(&row["direct_p99_us"])
                );
            }
        }
    }
}
