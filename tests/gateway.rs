//! The gateway with a real server and a real client: the npm
//! `@modelcontextprotocol/server-everything` as an MCP plugin behind
//! `plughost serve`, driven by the official Python SDK's client
//! (`tests/gateway_client.py`). Sampling, elicitation and roots reach the
//! client and back; resources, templates, prompts, completions and logs
//! come through; an embedded blob keeps its bytes; three slow calls share
//! the server's connection.
#![cfg(feature = "mcp-server")]

use crate::util;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use util::{Sandbox, assert_no_processes_in};

/// server-everything, installed by `scripts/test` into target/npm.
fn server_everything() -> Option<PathBuf> {
    let install = util::repo().join("target/npm/server-everything");
    let index = install.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    util::prerequisite(
        "@modelcontextprotocol/server-everything in target/npm/server-everything (npm install --prefix target/npm/server-everything @modelcontextprotocol/server-everything@2026.8.31)",
        index.is_file(),
    )
    .then_some(install)
}

/// A plugin folder `everything` wrapping the server, tools named `ev_…`,
/// allowed to read its own install only.
fn everything_plugin(sandbox: &Sandbox, install: &std::path::Path) -> PathBuf {
    let dir = sandbox.plugins().join("everything");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        json!({
            "name": "everything",
            "version": "1.0.0",
            "description": "The MCP server that exercises every feature.",
            "entrypoint": "main.sh",
            "protocol": "mcp",
            "tool_prefix": "ev_",
            // `/srv` is what its roots may name (`file:///srv/project`).
            "permissions": [format!("filesystem:read:{}", install.display()), "filesystem:read:/srv"],
        })
        .to_string(),
    )
    .unwrap();
    util::write_executable(
        &dir.join("main.sh"),
        &format!(
            "#!/bin/sh\nexec node '{}' stdio\n",
            install
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                .display()
        ),
    );
    dir
}

#[test]
fn server_everything_loses_nothing_through_serve() {
    let Some(install) = server_everything() else {
        return;
    };
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let sandbox = Sandbox::new();
    let dir = everything_plugin(&sandbox, &install);
    let approve = util::run({
        let mut c = sandbox.cmd();
        c.args(["approve", "everything", "--yes"]);
        c
    });
    assert!(approve.status.success(), "{}", util::stderr(&approve));
    // Approval pinned the tools the server offers a client that samples,
    // elicits and has roots.
    let list = util::run({
        let mut c = sandbox.cmd();
        c.arg("list");
        c
    });
    let listed = util::stdout(&list);
    assert!(
        listed.contains("ev_trigger-sampling-request") && listed.contains("ev_get-roots-list"),
        "{listed}"
    );
    let bin = crate::util::plughost();
    let out = Command::new(util::real_python3())
        .arg(util::repo().join("tests/gateway_client.py"))
        .arg(bin)
        .arg(sandbox.plugins())
        .arg(sandbox.state())
        .env("PYTHONPATH", &pydeps)
        .env_remove("PLUGHOST_PLUGINS_DIR")
        .env_remove("PLUGHOST_STATE_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed:\n{}\n{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let r: Value = serde_json::from_str(util::stdout(&out).trim()).unwrap();
    let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
    println!("the client's report: {r:#}");

    assert_eq!(
        r["capabilities"],
        json!(["completions", "logging", "prompts", "resources"])
    );
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in [
        "ev_echo",
        "ev_trigger-sampling-request",
        "ev_trigger-elicitation-request",
        "ev_get-roots-list",
        "ev_trigger-url-elicitation",
        "ev_gzip-file-as-resource",
    ] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }
    // The server's own title and annotations; no write grant and no network:
    // plughost may only make them stricter, and these already are.
    assert_eq!(r["roots_tool"]["title"], "Get Roots List Tool");
    assert_eq!(r["roots_tool"]["annotations"]["readOnlyHint"], true);

    assert!(
        s("sampling").contains("sampled: ") && s("sampling").contains("the weather?"),
        "{}",
        s("sampling")
    );
    assert!(
        s("elicitation").contains("Name: Ada Lovelace"),
        "{}",
        s("elicitation")
    );
    // The client's root in the plugin's grants reaches the server; the
    // other does not.
    assert!(s("roots").contains("file:///srv/project"), "{}", s("roots"));
    assert!(!s("roots").contains("elsewhere"), "{}", s("roots"));

    assert_eq!(r["blob_intact"], true, "{:?}", r["blob_kinds"]);
    // Blocks in the server's order, with their annotations.
    let annotated = r["annotated"].as_array().unwrap();
    assert_eq!(annotated.len(), 2, "{annotated:?}");
    assert_eq!(annotated[0]["type"], "text");
    assert_eq!(annotated[0]["annotations"]["priority"], 1.0);
    assert_eq!(annotated[1]["type"], "image");
    assert!(annotated[1]["annotations"]["audience"].is_array());

    let resources = r["resources"].as_array().unwrap();
    assert!(
        resources.iter().any(|u| u
            .as_str()
            .unwrap()
            .starts_with("demo://resource/static/document/")),
        "{resources:?}"
    );
    assert!(
        r["templates"]
            .as_array()
            .unwrap()
            .contains(&json!("demo://resource/dynamic/text/{resourceId}")),
        "{}",
        r["templates"]
    );
    assert!(
        s("read_text").starts_with("Resource 7: This is a plaintext resource"),
        "{}",
        s("read_text")
    );
    assert!(
        s("read_blob").starts_with("Resource 7: This is a base64 blob"),
        "{}",
        s("read_blob")
    );
    assert!(
        r["prompts"]
            .as_array()
            .unwrap()
            .contains(&json!("ev_args-prompt")),
        "{}",
        r["prompts"]
    );
    assert!(s("prompt").contains("Lyon"), "{}", s("prompt"));
    assert_eq!(r["completion"], json!(["Engineering"]));

    let logs = r["logs"].as_array().unwrap();
    assert!(!logs.is_empty(), "no log message arrived");
    assert!(
        logs[0]["logger"]
            .as_str()
            .unwrap()
            .starts_with("everything"),
        "the log does not name the plugin: {logs:?}"
    );

    // Three 2-second calls at once take about the time of one, not three.
    let one = r["one_slow_call_s"].as_f64().unwrap();
    let three = r["three_slow_calls_s"].as_f64().unwrap();
    assert!(
        three < one * 1.5,
        "three concurrent calls took {three:.2} s, one took {one:.2} s"
    );
    assert_no_processes_in(&dir);
}

/// An embedder's own client answers the server's sampling request during a
/// library call; without one the request is refused in a sentence that says
/// why; resources and prompts are read through the library.
#[tokio::test]
async fn through_the_library_an_embedders_client_answers_the_server() {
    use plughost::client::{BoxFuture, CallClient, ClientCapabilities, ClientRequestError};
    use plughost::{CallOptions, PluginHost};
    use std::sync::Arc;

    struct Model;
    impl CallClient for Model {
        fn capabilities(&self) -> ClientCapabilities {
            let mut c = ClientCapabilities::default();
            c.sampling = true;
            c
        }
        fn session(&self) -> String {
            "embedder".into()
        }
        fn request<'a>(
            &'a self,
            method: &'a str,
            params: Value,
        ) -> BoxFuture<'a, Result<Value, ClientRequestError>> {
            Box::pin(async move {
                assert_eq!(method, "sampling/createMessage");
                let asked = params["messages"][0]["content"]["text"].clone();
                Ok(json!({"role": "assistant", "model": "embedded",
                          "content": {"type": "text", "text": format!("embedded model saw {asked}")}}))
            })
        }
    }

    let Some(install) = server_everything() else {
        return;
    };
    let sandbox = Sandbox::new();
    let dir = everything_plugin(&sandbox, &install);
    let host = PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .build()
        .unwrap();
    host.approve("everything").await.unwrap();

    let sample = json!({"prompt": "a haiku", "maxTokens": 10});
    let options = CallOptions {
        client: Some(Arc::new(Model)),
        ..CallOptions::default()
    };
    let o = host
        .call_with("ev_trigger-sampling-request", sample.clone(), options)
        .await
        .unwrap();
    assert!(
        !o.is_error && o.result.contains("embedded model saw"),
        "{}",
        o.result
    );
    // No client: the server's request is refused, and the server says so.
    let o = host
        .call_with(
            "ev_trigger-sampling-request",
            sample,
            CallOptions::default(),
        )
        .await;
    let text = match o {
        Ok(o) => o.result,
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains("cannot answer sampling/createMessage"),
        "{text}"
    );

    // An embedded blob resource, with its bytes, in the outcome's content.
    let o = host
        .call_with(
            "ev_get-resource-reference",
            json!({"resourceType": "Blob", "resourceId": 5}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    let blob = o
        .content
        .iter()
        .find(|c| c["type"] == "resource")
        .unwrap_or_else(|| panic!("no embedded resource in {:?}", o.content));
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob["resource"]["blob"].as_str().unwrap())
        .unwrap();
    assert!(
        String::from_utf8(bytes)
            .unwrap()
            .starts_with("Resource 5: This is a base64 blob"),
    );

    let read = host
        .read_resource("demo://resource/dynamic/text/3", CallOptions::default())
        .await
        .unwrap();
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Resource 3:"),
        "{read}"
    );
    let prompt = host
        .get_prompt("ev_simple-prompt", None, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(prompt["messages"][0]["role"], "user", "{prompt}");
    drop(host);
    assert_no_processes_in(&dir);
}

/// server-everything approved in a sandbox of its own, with the Python SDK:
/// the sandbox, the plugin's folder and the SDK's folder.
fn approved_everything() -> Option<(Sandbox, PathBuf, PathBuf)> {
    let install = server_everything()?;
    let pydeps = util::python_mcp_sdk()?;
    let sandbox = Sandbox::new();
    let dir = everything_plugin(&sandbox, &install);
    let approve = util::run({
        let mut c = sandbox.cmd();
        c.args(["approve", "everything", "--yes"]);
        c
    });
    assert!(approve.status.success(), "{}", util::stderr(&approve));
    Some((sandbox, dir, pydeps))
}

/// `tests/gateway_client_2026.py` over `transport` (`stdio`, or `http URL
/// TOKEN`): its report, and what it wrote to stderr (on stdio, plughost's
/// log too).
fn client_2026(sandbox: &Sandbox, pydeps: &std::path::Path, transport: &[&str]) -> (Value, String) {
    let out = Command::new(util::real_python3())
        .arg(util::repo().join("tests/gateway_client_2026.py"))
        .arg(util::plughost())
        .arg(sandbox.plugins())
        .arg(sandbox.state())
        .args(transport)
        .env("PYTHONPATH", pydeps)
        .env_remove("PLUGHOST_PLUGINS_DIR")
        .env_remove("PLUGHOST_STATE_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the 2026-07-28 client failed:\n{}\n{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let report: Value = serde_json::from_str(util::stdout(&out).trim()).unwrap();
    println!("the 2026-07-28 client's report: {report:#}");
    (report, util::stderr(&out).to_owned())
}

/// What the Python SDK's 2026-07-28 client must have seen: no handshake, a
/// plain call, and for each of the server's elicitation, sampling and roots
/// requests one `input_required` round whose answer (from the SDK's
/// callback) reached the server, which put it in its result. `log` is
/// plughost's log of the session.
fn assert_2026_rounds(r: &Value, log: &str) {
    let text = |k: &str| r[k]["text"].as_str().unwrap_or_default().to_owned();
    // server/discover, never initialize: the SDK's `auto` mode falls back to
    // the handshake when discover does not name 2026-07-28.
    assert_eq!(r["protocol_version"], "2026-07-28", "{r:#}");
    assert_eq!(r["discovered"], true, "{r:#}");
    assert_eq!(r["initialized"], false, "{r:#}");
    assert!(
        r["supported_versions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25")),
        "{}",
        r["supported_versions"]
    );
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in [
        "ev_echo",
        "ev_trigger-elicitation-request",
        "ev_trigger-sampling-request",
        "ev_get-roots-list",
    ] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }

    assert_eq!(
        r["echo"],
        json!({"text": "Echo: hello 2026", "is_error": false})
    );
    for k in ["elicitation", "sampling", "roots"] {
        assert_eq!(r[k]["is_error"], false, "{k}: {}", text(k));
    }
    // What each callback answered, as the server reports it.
    assert!(
        text("elicitation").contains("Name: Grace Hopper"),
        "{}",
        text("elicitation")
    );
    assert!(
        text("sampling").contains("sampled: ") && text("sampling").contains("the tide?"),
        "{}",
        text("sampling")
    );
    // server-everything asks for roots as it starts, when no call's client
    // is there to ask: plughost answers with the folders the plugin was
    // granted, and the server keeps them (so no roots round below).
    assert!(
        text("roots").contains("URI: file:///srv\n") && !text("roots").contains("project"),
        "{}",
        text("roots")
    );

    // The rounds: each asking call was answered `input_required` with the
    // server's one request under plughost's key and a state, and retried
    // with the callback's answer under that key and the state.
    let round = |tool: &str, key: &str, method: &str| {
        json!([
            {"tool": tool, "sent_responses": [], "sent_state": false,
             "got": "input_required", "input_requests": {key: method}, "got_state": true},
            {"tool": tool, "sent_responses": [key], "sent_state": true, "got": "complete"},
        ])
    };
    let mut legs = vec![
        json!({"tool": "ev_echo", "sent_responses": [], "sent_state": false, "got": "complete"}),
    ];
    for (tool, key, method) in [
        (
            "ev_trigger-elicitation-request",
            "elicitation-1",
            "elicitation/create",
        ),
        (
            "ev_trigger-sampling-request",
            "sampling-1",
            "sampling/createMessage",
        ),
    ] {
        legs.extend(round(tool, key, method).as_array().unwrap().iter().cloned());
    }
    legs.push(json!({"tool": "ev_get-roots-list", "sent_responses": [], "sent_state": false, "got": "complete"}));
    assert_eq!(r["legs"], Value::Array(legs), "the rounds");
    // The callbacks were asked through the rounds (by input key), never by a
    // request of the server's own (a JSON-RPC id).
    assert_eq!(
        r["asked"],
        json!([
            {"callback": "elicitation", "key": "elicitation-1"},
            {"callback": "sampling", "key": "sampling-1"},
        ])
    );

    for tool in [
        "ev_echo",
        "ev_trigger-elicitation-request",
        "ev_trigger-sampling-request",
        "ev_get-roots-list",
    ] {
        assert!(
            log.contains(&format!("call {tool} (everything): ok")),
            "{tool} not logged as ok:\n{log}"
        );
    }
    assert!(
        !log.contains("refused"),
        "plughost refused something:\n{log}"
    );
}

/// The acceptance test of MCP 2026-07-28 on stdio: the Python SDK 2.3's
/// client at 2026-07-28 through `plughost serve` to server-everything (a
/// 2025-11-25 server), a plain call and the elicitation, sampling and
/// roots rounds.
#[test]
fn a_2026_client_on_stdio_answers_server_everything_in_input_required_rounds() {
    let Some((sandbox, dir, pydeps)) = approved_everything() else {
        return;
    };
    let (report, log) = client_2026(&sandbox, &pydeps, &["stdio"]);
    assert_2026_rounds(&report, &log);
    assert_no_processes_in(&dir);
}

/// The same over `plughost serve --http` with a bearer token.
#[test]
fn a_2026_client_over_http_answers_server_everything_in_input_required_rounds() {
    let Some((sandbox, dir, pydeps)) = approved_everything() else {
        return;
    };
    let server = util::http::Server::start(&sandbox, &[]);
    let url = server.url();
    let (report, _) = client_2026(&sandbox, &pydeps, &["http", &url, util::http::TOKEN]);
    assert_2026_rounds(&report, &server.log_text());
    drop(server);
    assert_no_processes_in(&dir);
}
