//! Claude Code's own health check of a configured server (`claude mcp
//! list`, offline) against `plughost serve` as `plughost connect` configures
//! it: Claude Code opens at MCP 2026-07-28 (`server/discover`), and plughost
//! answers it at that revision, so Claude Code never falls back to a
//! 2025-11-25 `initialize`.
#![cfg(feature = "mcp-server")]

use std::path::PathBuf;
use std::process::Command;

use crate::util::{self, Sandbox};

/// Claude Code's native binary, installed by `scripts/test` into target/npm.
fn claude() -> Option<PathBuf> {
    let binary = util::repo()
        .join("target/npm/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    util::prerequisite(
        "Claude Code in target/npm/claude-code (npm install --prefix target/npm/claude-code --ignore-scripts @anthropic-ai/claude-code@2.1.332)",
        binary.is_file(),
    )
    .then_some(binary)
}

#[test]
fn claude_code_connects_at_2026_07_28_without_falling_back() {
    let Some(claude) = claude() else {
        return;
    };
    let sandbox = Sandbox::new().with_examples();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The entry `plughost connect` writes, then the same command behind a
    // script that keeps what Claude Code sends and what plughost answers.
    let connect = util::run({
        let mut c = sandbox.cmd();
        c.env("HOME", &home)
            .args(["connect", "claude-code", "--yes"]);
        c
    });
    assert!(connect.status.success(), "{}", util::stderr(&connect));
    let config = home.join(".claude.json");
    let mut entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    let server = &mut entry["mcpServers"]["plughost"];
    let command = server["command"].as_str().unwrap().to_owned();
    let args: Vec<String> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let (sent, answered) = (
        sandbox.root.path().join("sent"),
        sandbox.root.path().join("answered"),
    );
    let wrapper = sandbox.root.path().join("plughost-recorded.sh");
    let quoted: Vec<String> = std::iter::once(&command)
        .chain(&args)
        .map(|a| format!("'{a}'"))
        .collect();
    util::write_executable(
        &wrapper,
        &format!(
            "#!/bin/sh\ntee '{}' | {} | tee '{}'\n",
            sent.display(),
            quoted.join(" "),
            answered.display()
        ),
    );
    *server = serde_json::json!({"type": "stdio", "command": wrapper, "args": []});
    std::fs::write(&config, entry.to_string()).unwrap();

    let list = util::run({
        let mut c = Command::new(&claude);
        // Nothing but the health check: no updates, telemetry or other
        // traffic off this machine.
        c.env("HOME", &home)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env_remove("PLUGHOST_PLUGINS_DIR")
            .env_remove("PLUGHOST_STATE_DIR")
            .args(["mcp", "list"]);
        c
    });
    let out = util::stdout(&list);
    assert!(
        out.lines()
            .any(|l| l.starts_with("plughost:") && l.contains("Connected")),
        "claude mcp list:\n{out}\n{}",
        util::stderr(&list)
    );
    let sent = std::fs::read_to_string(&sent).unwrap();
    let answered = std::fs::read_to_string(&answered).unwrap();
    let messages = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let (sent, answered) = (messages(&sent), messages(&answered));
    assert!(
        sent.iter().all(|m| m["method"] != "initialize"),
        "Claude Code fell back to initialize: {sent:#?}"
    );
    let discover = sent
        .iter()
        .find(|m| m["method"] == "server/discover")
        .unwrap_or_else(|| panic!("no server/discover: {sent:#?}"));
    assert_eq!(
        discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let reply = answered
        .iter()
        .find(|m| m["id"] == discover["id"])
        .unwrap_or_else(|| panic!("server/discover unanswered: {answered:#?}"));
    assert!(
        reply["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.iter().any(|v| v == "2026-07-28")),
        "{reply}"
    );
    // Its tool listing, answered at the revision it asked for.
    let list = sent
        .iter()
        .find(|m| m["method"] == "tools/list")
        .unwrap_or_else(|| panic!("no tools/list: {sent:#?}"));
    let tools = answered.iter().find(|m| m["id"] == list["id"]).unwrap();
    assert_eq!(tools["result"]["resultType"], "complete", "{tools}");
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "hello_greet")),
        "{tools}"
    );
}
