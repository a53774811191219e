//! Plugins written with the author SDKs (Python, Node, Rust) called through
//! plughost, per call and as persistent workers: the error kind a plugin
//! reports, progress, an attachment, and progress over MCP. The plugins'
//! code is in `tests/fixtures/sdk-plugins/`; each folder is assembled here
//! from it, a copy of the SDK, and a manifest whose tools the code prints.
#![cfg(feature = "mcp-server")]

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plughost::protocol::Invocation;
use plughost::protocol::{MediaType, ToolErrorKind};
use plughost::{CallOptions, PluginHost, Progress, ToolOutcome};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use util::{Sandbox, scaffold};

fn fixture(file: &str) -> PathBuf {
    util::repo().join("tests/fixtures/sdk-plugins").join(file)
}

/// Writes `plugin.json` for the folder from what `ENTRYPOINT --manifest-tools` prints.
fn write_manifest(dir: &Path, entrypoint: &str, persistent: bool) {
    let mut cmd = Command::new(dir.join(entrypoint));
    cmd.arg("--manifest-tools")
        .current_dir(dir)
        .stdin(Stdio::null());
    let out = util::run(cmd);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let name = dir.file_name().unwrap().to_str().unwrap();
    let mut m = json!({"name": name, "version": "1.0.0", "description": "An SDK test plugin.",
        "entrypoint": entrypoint, "permissions": [], "tools": tools});
    if persistent {
        m["persistent"] = json!({});
    }
    std::fs::write(
        dir.join("plugin.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
}

/// `sdk-py`: the Python fixture next to a copy of the Python SDK.
fn python_plugin(sandbox: &Sandbox, persistent: bool) {
    let dir = sandbox.plugins().join("sdk-py");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture("main.py"), dir.join("main.py")).unwrap();
    let sdk = util::repo().join("sdk/python/plughost_plugin.py");
    std::fs::copy(sdk, dir.join("plughost_plugin.py")).unwrap();
    write_manifest(&dir, "main.py", persistent);
}

/// `sdk-js`: the Node fixture next to a copy of the Node SDK.
fn node_plugin(sandbox: &Sandbox, persistent: bool) {
    let dir = sandbox.plugins().join("sdk-js");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture("main.mjs"), dir.join("main.mjs")).unwrap();
    let sdk = util::repo().join("sdk/node/plughost_plugin.mjs");
    std::fs::copy(sdk, dir.join("plughost_plugin.mjs")).unwrap();
    write_manifest(&dir, "main.mjs", persistent);
}

fn host(sandbox: &Sandbox) -> PluginHost {
    PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .build()
        .unwrap()
}

async fn call(host: &PluginHost, tool: &str, input: Value) -> ToolOutcome {
    host.call(tool, input, Invocation::default())
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// Everything the SDKs promise, through the library, for the plugin whose
/// tools start with `p_`.
async fn exercise(host: &PluginHost, plugin: &str, p: &str, persistent: bool) {
    let tool = |t: &str| format!("{p}_{t}");

    // The plugin's own error keeps its kind.
    let o = call(host, &tool("find"), json!({"key": "nowhere"})).await;
    assert!(o.is_error, "{p}: {o:?}");
    assert_eq!(o.result, "no nowhere here");
    let error = o
        .error
        .as_ref()
        .expect("the plugin's error kind reaches the outcome");
    assert_eq!(error.kind, ToolErrorKind::NotFound, "{p}");
    let o = call(host, &tool("find"), json!({"key": "here"})).await;
    assert_eq!(
        (o.result.as_str(), o.is_error, o.error.is_none()),
        ("found", false, true)
    );

    // Progress reaches the caller, in order, before the answer.
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = seen.clone();
    let options = CallOptions {
        on_progress: Some(Arc::new(move |p| sink.lock().unwrap().push(p))),
        ..CallOptions::default()
    };
    let o = host
        .call_with(&tool("steps"), json!({}), options)
        .await
        .unwrap();
    assert_eq!(o.result, "steps done");
    let seen: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|p| (p.progress, p.total, p.message.clone()))
        .collect();
    assert_eq!(
        seen,
        [1.0, 2.0, 3.0].map(|n| (n, Some(3.0), Some(format!("step {n}")))),
        "{p}"
    );

    // An attachment written in the data folder arrives with its full path.
    let o = call(host, &tool("picture"), json!({})).await;
    assert_eq!(o.result, "a picture");
    assert_eq!(o.attachments.len(), 1, "{p}: {o:?}");
    let picture = &o.attachments[0];
    assert_eq!(picture.media_type, MediaType::Image);
    assert_eq!(picture.mime_type.as_deref(), Some("image/png"));
    let path = picture.path.as_ref().expect("a path");
    assert!(
        path.is_absolute() && path.ends_with(format!("data/{plugin}/pic.png")),
        "{path:?}"
    );
    assert!(std::fs::read(path).unwrap().starts_with(b"\x89PNG"));

    // A worker answers every call from one process; per call, each is new.
    let (a, b) = (
        call(host, &tool("pid"), json!({})).await,
        call(host, &tool("pid"), json!({})).await,
    );
    if persistent {
        assert_eq!(a.result, b.result, "{p}: one worker");
        assert_eq!((a.exit_code, b.exit_code), (None, None));
        assert_eq!(host.workers()[plugin].len(), 1);
    } else {
        assert_ne!(a.result, b.result, "{p}: a process per call");
        assert_eq!((a.exit_code, b.exit_code), (Some(0), Some(0)));
    }
}

#[tokio::test]
async fn a_python_sdk_plugin_answers_per_call_and_as_a_worker() {
    for persistent in [false, true] {
        let sandbox = Sandbox::new();
        python_plugin(&sandbox, persistent);
        exercise(&host(&sandbox), "sdk-py", "py", persistent).await;
    }
}

#[tokio::test]
async fn a_node_sdk_plugin_answers_per_call_and_as_a_worker() {
    for persistent in [false, true] {
        let sandbox = Sandbox::new();
        node_plugin(&sandbox, persistent);
        exercise(&host(&sandbox), "sdk-js", "js", persistent).await;
    }
}

/// Built once: `plughost new --lang rust` with the fixture as its main.rs,
/// through its build.sh, in the target folder the tests share.
#[tokio::test]
async fn a_rust_sdk_plugin_answers_per_call_and_as_a_worker() {
    if !scaffold::cargo_available() {
        return;
    }
    let build = Sandbox::new();
    let (built, _) = scaffold::new_plugin(&build, None, "sdk-rs", "rust", false);
    std::fs::copy(fixture("main.rs"), built.join("src/main.rs")).unwrap();
    tokio::task::spawn_blocking(move || {
        scaffold::build_rust(&built);
        write_manifest(&built, "main.sh", false);
    })
    .await
    .unwrap();
    for persistent in [false, true] {
        let sandbox = Sandbox::new();
        let dir = sandbox.plugins().join("sdk-rs");
        util::copy_dir(&build.plugins().join("sdk-rs"), &dir);
        write_manifest(&dir, "main.sh", persistent);
        exercise(&host(&sandbox), "sdk-rs", "rs", persistent).await;
    }
}

/// Records the progress notifications it receives.
#[derive(Clone)]
struct ProgressClient(mpsc::UnboundedSender<ProgressNotificationParam>);

impl ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

/// An SDK plugin's progress becomes `notifications/progress` for an MCP
/// client of `plughost serve`, from a worker (Python) and per call (Node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_progress_reaches_an_mcp_client() {
    let sandbox = Sandbox::new();
    python_plugin(&sandbox, true);
    node_plugin(&sandbox, false);
    let (tx, mut progress) = mpsc::unbounded_channel();
    let cmd = tokio::process::Command::new(crate::util::plughost()).configure(|c| {
        c.arg("--plugins-dir")
            .arg(sandbox.plugins())
            .arg("--state-dir")
            .arg(sandbox.state())
            .arg("serve");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ProgressClient(tx)
        .serve(transport)
        .await
        .expect("the MCP session starts");
    for tool in ["py_steps", "js_steps"] {
        let request = CallToolRequest::new(CallToolRequestParams::new(tool.to_owned()));
        let handle = client
            .send_cancellable_request(
                ClientRequest::CallToolRequest(request),
                PeerRequestOptions::with_timeout(Duration::from_secs(20)),
            )
            .await
            .unwrap();
        let token = handle.progress_token.clone();
        let ServerResult::CallToolResult(done) = handle.await_response().await.unwrap() else {
            panic!("{tool}: not a tool result")
        };
        assert_eq!(done.is_error, Some(false), "{tool}: {done:?}");
        // Notifications may trail the response by a moment, and rmcp's client
        // runs each notification handler in a task of its own, so they are
        // compared in progress order.
        let mut seen = Vec::new();
        while seen.len() < 3 {
            let p = tokio::time::timeout(Duration::from_secs(5), progress.recv())
                .await
                .unwrap_or_else(|_| panic!("{tool}: progress {} never arrived", seen.len() + 1))
                .unwrap();
            assert_eq!(p.progress_token, token, "{tool}");
            seen.push((p.progress, p.total, p.message));
        }
        seen.sort_by(|a, b| a.0.total_cmp(&b.0));
        let expected = [1.0, 2.0, 3.0].map(|n| (n, Some(3.0), Some(format!("step {n}"))));
        assert_eq!(seen, expected, "{tool}");
    }
    client.cancel().await.unwrap();
}
