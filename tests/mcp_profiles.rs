//! Profiles and tool search through `plughost serve`, over stdio and HTTP,
//! driven by the official Python SDK (`tests/profile_client.py`): a profile
//! hides what it leaves out and refuses calls to it, an edit is picked up in
//! an open session, a broken profile shows nothing, tenants see only their
//! profile's tools, and `--tool-search` finds and calls a tool among the
//! real servers' tools of `benches/search/tool-catalog.json` while a tool
//! that needs approval is never found.
#![cfg(feature = "mcp-server")]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{self, Sandbox};

/// Runs `plan` in one stdio session of `serve` with `args`; `None` when the
/// Python MCP SDK is missing (see `util::python_mcp_sdk`).
fn stdio(sandbox: &Sandbox, args: &[&str], plan: Value) -> Option<Vec<Value>> {
    let pydeps = util::python_mcp_sdk()?;
    let mut server_args: Vec<String> = vec![
        "--plugins-dir".into(),
        sandbox.plugins().to_str()?.into(),
        "--state-dir".into(),
        sandbox.state().to_str()?.into(),
        "--profiles-dir".into(),
        profiles(sandbox).to_str()?.into(),
        "serve".into(),
        "--log-file".into(),
        sandbox.root.path().join("serve.log").to_str()?.into(),
    ];
    server_args.extend(args.iter().map(|a| a.to_string()));
    let mut c = Command::new("python3");
    c.arg(util::repo().join("tests/profile_client.py"))
        .arg("stdio")
        .arg(util::plughost())
        .arg(json!(server_args).to_string())
        .arg(plan.to_string())
        .env("PYTHONPATH", pydeps)
        .env_remove("PLUGHOST_PROFILES_DIR");
    Some(results(c))
}

/// Runs `plan` in one HTTP session with `token`.
fn http(server: &util::http::Server, token: &str, plan: Value) -> Option<Vec<Value>> {
    let pydeps = util::python_mcp_sdk()?;
    let mut c = Command::new("python3");
    c.arg(util::repo().join("tests/profile_client.py"))
        .args(["http", &server.url(), token, &plan.to_string()])
        .env("PYTHONPATH", pydeps);
    Some(results(c))
}

fn results(c: Command) -> Vec<Value> {
    let out = util::run(c);
    assert!(
        out.status.success(),
        "client failed: {}",
        util::stderr(&out)
    );
    serde_json::from_str(util::stdout(&out).trim()).expect("one JSON array")
}

fn profiles(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.root.path().join("profiles")
}

fn write_profile(sandbox: &Sandbox, name: &str, text: &str) -> String {
    let dir = profiles(sandbox);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Plugins `alpha` (alpha_one, alpha_two) and `beta` (beta_one), each
/// answering with its own name.
fn two_plugins() -> Sandbox {
    let sandbox = Sandbox::new();
    for (plugin, tools) in [
        ("alpha", &["alpha_one", "alpha_two"][..]),
        ("beta", &["beta_one"]),
    ] {
        let mut m = util::manifest(plugin, tools[0]);
        m["tools"] = tools
            .iter()
            .map(|t| {
                json!({"name": t, "description": format!("The {t} tool."),
                "input_schema": {"type": "object", "properties": {}}})
            })
            .collect();
        sandbox.write_plugin(
            plugin,
            &m,
            &util::answer_script(&format!("ok from {plugin}")),
        );
    }
    sandbox
}

fn text(r: &Value) -> &str {
    r["text"].as_str().unwrap_or_default()
}

#[test]
fn a_profile_hides_and_refuses_what_it_leaves_out_and_an_edit_is_seen_in_the_open_session() {
    let sandbox = two_plugins();
    let path = write_profile(
        &sandbox,
        "work",
        r#"{"plugins": ["alpha"], "tools": ["alpha_o*"]}"#,
    );
    let plan = json!([
        {"op": "list"},
        {"op": "call", "name": "alpha_one"},
        {"op": "call", "name": "beta_one"},
        {"op": "call", "name": "alpha_two"},
        {"op": "write", "path": path, "text": r#"{"plugins": ["beta"]}"#},
        {"op": "list_until", "has": "beta_one", "within": 10},
        {"op": "call", "name": "beta_one"},
        {"op": "call", "name": "alpha_one"},
        {"op": "write", "path": path, "text": "{\"plugins\": [\"beta\"],"},
        {"op": "list_until", "lacks": "beta_one", "within": 10},
        {"op": "call", "name": "beta_one"},
    ]);
    let Some(r) = stdio(&sandbox, &["--profile", "work"], plan) else {
        return;
    };
    assert_eq!(r[0], json!(["alpha_one"]), "only what the profile admits");
    assert_eq!(text(&r[1]), "ok from alpha");
    for refused in [&r[2], &r[3]] {
        assert_eq!(refused["is_error"], true, "{refused}");
        assert!(text(refused).contains("not_found"), "{refused}");
        assert!(
            text(refused).contains("the profile \"work\" leaves it out"),
            "{refused}"
        );
    }
    assert!(!text(&r[2]).contains("ok from"), "nothing ran: {}", r[2]);
    // Edited while the session is open: no restart.
    assert_eq!(r[5], json!({"ok": true, "tools": ["beta_one"]}));
    assert_eq!(text(&r[6]), "ok from beta");
    assert_eq!(r[7]["is_error"], true, "{}", r[7]);
    // Broken: nothing is offered, the call is refused with the reason.
    assert_eq!(r[9], json!({"ok": true, "tools": []}));
    assert_eq!(r[10]["is_error"], true);
    assert!(text(&r[10]).contains("the profile \"work\""), "{}", r[10]);
    assert!(text(&r[10]).contains("is invalid"), "{}", r[10]);
    let log = std::fs::read_to_string(sandbox.root.path().join("serve.log")).unwrap();
    assert!(log.contains("offers no tool until it is fixed"), "{log}");
}

#[test]
fn a_profile_naming_an_unknown_plugin_shows_nothing_and_says_which() {
    let sandbox = two_plugins();
    write_profile(&sandbox, "typo", r#"{"plugins": ["alpha", "gamma"]}"#);
    let plan = json!([{"op": "list"}, {"op": "call", "name": "alpha_one"}]);
    let Some(r) = stdio(&sandbox, &["--profile", "typo"], plan) else {
        return;
    };
    assert_eq!(r[0], json!([]), "fails closed");
    assert!(
        text(&r[1]).contains("names the plugin \"gamma\", which is not loaded"),
        "{}",
        r[1]
    );
    // A profile that does not exist is the same: nothing, and why.
    let plan = json!([{"op": "list"}, {"op": "call", "name": "alpha_one"}]);
    let r = stdio(&sandbox, &["--profile", "nosuch"], plan).unwrap();
    assert_eq!(r[0], json!([]));
    assert!(
        text(&r[1]).contains("there is no profile \"nosuch\": create"),
        "{}",
        r[1]
    );
}

#[test]
fn each_tenant_sees_only_its_profile_and_a_broken_one_sees_nothing() {
    let sandbox = two_plugins();
    write_profile(&sandbox, "a", r#"{"plugins": ["alpha"]}"#);
    write_profile(&sandbox, "b", r#"{"tools": ["beta_*"]}"#);
    write_profile(&sandbox, "broken", r#"{"plugin": ["alpha"]}"#);
    let tokens = sandbox.root.path().join("tokens");
    let (alice, bob, carol, dave) = (
        "alice-0123456789abcdef",
        "bob-0123456789abcdef00",
        "carol-0123456789abcdef",
        "dave-0123456789abcdef0",
    );
    std::fs::write(
        &tokens,
        format!("alice {alice} profile=a\nbob {bob} profile=b\ncarol {carol}\ndave {dave} profile=broken\n"),
    )
    .unwrap();
    let dir = profiles(&sandbox);
    let server = util::http::Server::start(
        &sandbox,
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--profiles-dir",
            dir.to_str().unwrap(),
        ],
    );
    let plan = json!([
        {"op": "list"},
        {"op": "call", "name": "alpha_one"},
        {"op": "call", "name": "beta_one"},
    ]);
    let Some(a) = http(&server, alice, plan.clone()) else {
        return;
    };
    assert_eq!(a[0], json!(["alpha_one", "alpha_two"]));
    assert_eq!(text(&a[1]), "ok from alpha");
    assert_eq!(a[2]["is_error"], true, "{}", a[2]);
    let b = http(&server, bob, plan.clone()).unwrap();
    assert_eq!(b[0], json!(["beta_one"]));
    assert_eq!(b[1]["is_error"], true, "{}", b[1]);
    assert_eq!(text(&b[2]), "ok from beta");
    let c = http(&server, carol, plan.clone()).unwrap();
    assert_eq!(c[0], json!(["alpha_one", "alpha_two", "beta_one"]));
    let d = http(&server, dave, plan).unwrap();
    assert_eq!(d[0], json!([]), "a broken profile shows nothing");
    assert!(text(&d[1]).contains("unknown field `plugin`"), "{}", d[1]);
    // With tool search, a tenant's search ranks only its own tools.
    drop(server);
    let server = util::http::Server::start(
        &sandbox,
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--profiles-dir",
            dir.to_str().unwrap(),
            "--tool-search",
        ],
    );
    let plan = json!([
        {"op": "list"},
        {"op": "call", "name": "search_tools", "args": {"query": "the beta_one tool", "limit": 10}},
        {"op": "call", "name": "call_tool", "args": {"name": "beta_one", "arguments": {}}},
    ]);
    let a = http(&server, alice, plan).unwrap();
    assert_eq!(a[0], json!(["call_tool", "search_tools"]));
    let found = found(&a[1]);
    assert!(
        !found.is_empty() && found.iter().all(|n| n.starts_with("alpha_")),
        "{}",
        a[1]
    );
    assert_eq!(a[2]["is_error"], true, "{}", a[2]);
}

/// The names a `search_tools` result holds, checking that its text and its
/// structured content say the same.
fn found(r: &Value) -> Vec<String> {
    assert_eq!(r["is_error"], false, "{r}");
    let structured = &r["structured"];
    let from_text: Value = serde_json::from_str(text(r)).unwrap();
    assert_eq!(&from_text, structured);
    structured["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(
                t["inputSchema"].is_object() && t["description"].is_string(),
                "{t}"
            );
            t["name"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// One plugin per server of the benchmark's catalog, each declaring that
/// server's tools (a name two servers share gets its server's prefix), and
/// answering every call with its plugin's name. Returns the tool count.
fn catalog_plugins(sandbox: &Sandbox) -> usize {
    let text =
        std::fs::read_to_string(util::repo().join("benches/search/tool-catalog.json")).unwrap();
    let catalog: Value = serde_json::from_str(&text).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut count = 0;
    for server in catalog["servers"].as_array().unwrap() {
        let plugin = server["name"].as_str().unwrap();
        let tools: Vec<Value> = server["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let mut name = t["name"].as_str().unwrap().to_owned();
                if !seen.insert(name.clone()) {
                    name = format!("{}_{name}", plugin.replace('-', "_"));
                    seen.insert(name.clone());
                }
                json!({"name": name, "description": t["description"].as_str().unwrap_or("-"),
                       "input_schema": t["inputSchema"]})
            })
            .collect();
        count += tools.len();
        let mut m = util::manifest(plugin, "x");
        m["tools"] = Value::Array(tools);
        sandbox.write_plugin(
            plugin,
            &m,
            &util::answer_script(&format!("ok from {plugin}")),
        );
    }
    count
}

#[test]
fn tool_search_finds_and_calls_a_tool_among_the_catalog_and_never_an_unapproved_one() {
    let sandbox = Sandbox::new();
    let count = catalog_plugins(&sandbox);
    assert!(count >= 200, "{count} tools");
    let mut m = util::manifest("rockets", "launch_rockets");
    m["permissions"] = json!(["network"]);
    m["tools"][0]["description"] = json!("Launch the rockets at a target.");
    sandbox.write_plugin("rockets", &m, &util::answer_script("launched"));
    // The plain listing shows every tool (the unapproved one asks first).
    let Some(plain) = stdio(&sandbox, &[], json!([{"op": "list"}])) else {
        return;
    };
    let listed = plain[0].as_array().unwrap().len();
    assert!(
        listed >= 200,
        "{listed} tools listed; the serve log says why: {}",
        std::fs::read_to_string(sandbox.root.path().join("serve.log")).unwrap_or_default()
    );
    assert!(
        plain[0]
            .as_array()
            .unwrap()
            .contains(&json!("launch_rockets"))
    );
    let plan = json!([
        {"op": "list"},
        {"op": "call", "name": "search_tools", "args": {"query": "what time is it now in Berlin"}},
        {"op": "call", "name": "call_tool", "args": {"name": "get_current_time", "arguments": {"timezone": "Europe/Berlin"}}},
        {"op": "call", "name": "search_tools", "args": {"query": "launch the rockets at a target", "limit": 50}},
        {"op": "call", "name": "call_tool", "args": {"name": "launch_rockets", "arguments": {}}},
        {"op": "call", "name": "get_current_time", "args": {"timezone": "Europe/Berlin"}},
        {"op": "call", "name": "call_tool", "args": {"name": "get_current_time", "arguments": {"timezone": 7}}},
    ]);
    let r = stdio(&sandbox, &["--tool-search"], plan).unwrap();
    assert_eq!(
        r[0],
        json!(["call_tool", "search_tools"]),
        "exactly two tools"
    );
    let hits = found(&r[1]);
    assert!(hits.len() <= 5, "the default limit: {hits:?}");
    assert!(hits.contains(&"get_current_time".to_owned()), "{hits:?}");
    assert_eq!(text(&r[2]), "ok from time", "{}", r[2]);
    assert!(
        !found(&r[3]).contains(&"launch_rockets".to_owned()),
        "never ranked: {}",
        r[3]
    );
    assert_eq!(r[4]["is_error"], true, "{}", r[4]);
    assert!(
        text(&r[4]).contains("not among the tools search_tools finds"),
        "{}",
        r[4]
    );
    assert!(
        text(&r[5]).contains("call \"get_current_time\" with call_tool"),
        "{}",
        r[5]
    );
    // The same checks as a direct call: the input schema.
    assert!(text(&r[6]).contains("invalid_args"), "{}", r[6]);
    assert!(!Path::new(&sandbox.state().join("data/rockets")).exists());
}

/// MCP servers run as plugins, each `tests/fixtures/mcp/chatty.py` under
/// its name with these grants (tools `NAME_wipe`, `NAME_look`,
/// `NAME_plain`), approved.
fn chatty_plugins(sandbox: &Sandbox, plugins: &[(&str, &[&str])]) {
    for (name, grants) in plugins {
        let dir = sandbox.plugins().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            util::repo().join("tests/fixtures/mcp/chatty.py"),
            dir.join("server.py"),
        )
        .unwrap();
        let manifest = json!({"name": name, "version": "1.0.0", "description": "A chatty server.",
            "entrypoint": "main.sh", "protocol": "mcp", "tool_prefix": format!("{name}_"),
            "permissions": grants});
        std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
        util::write_executable(
            &dir.join("main.sh"),
            &format!(
                "#!/bin/sh\nPYTHONDONTWRITEBYTECODE=1 exec '{}' \"$(dirname \"$0\")/server.py\" {name}\n",
                util::real_python3().display()
            ),
        );
        let mut approve = sandbox.cmd();
        approve.args(["approve", name, "--yes"]);
        let out = util::run(approve);
        assert!(out.status.success(), "{}", util::stderr(&out));
    }
}

#[test]
fn a_read_only_profile_goes_by_the_grants_not_by_what_a_server_says() {
    let sandbox = Sandbox::new();
    let notes = sandbox.root.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let write = format!("filesystem:write:{}", notes.display());
    chatty_plugins(
        &sandbox,
        &[
            ("writer", &[write.as_str()]),
            ("poster", &["network"]),
            ("runner", &["shell:exec"]),
            ("calm", &[]),
        ],
    );
    write_profile(&sandbox, "ro", r#"{"read_only": true}"#);
    let plan = json!([
        {"op": "list"},
        {"op": "call", "name": "writer_wipe"},
        {"op": "call", "name": "poster_look"},
        {"op": "call", "name": "calm_look"},
    ]);
    let Some(r) = stdio(&sandbox, &["--profile", "ro"], plan) else {
        return;
    };
    // Each server calls wipe and look read-only; only the plugin that can
    // change nothing is taken at its word, and a tool without the hint
    // may write.
    assert_eq!(r[0], json!(["calm_look", "calm_wipe"]));
    for refused in [&r[1], &r[2]] {
        assert_eq!(refused["is_error"], true, "{refused}");
        assert!(
            text(refused).contains("the profile \"ro\" leaves it out"),
            "{refused}"
        );
    }
    assert_eq!(text(&r[3]), "ok from calm");
    // Without a profile the listing says the same as the profile went by.
    let plan = json!([{"op": "annotations"}]);
    let r = stdio(&sandbox, &[], plan).unwrap();
    let hints = &r[0];
    assert_eq!(hints["writer_wipe"]["readOnlyHint"], false, "{hints}");
    assert_eq!(hints["poster_look"]["readOnlyHint"], false, "{hints}");
    assert_eq!(hints["runner_look"]["readOnlyHint"], false, "{hints}");
    assert_eq!(hints["calm_look"]["readOnlyHint"], true, "{hints}");
    assert_ne!(hints["calm_plain"]["readOnlyHint"], true, "{hints}");
}

#[test]
fn a_profile_that_is_a_fifo_or_a_link_fails_closed_without_naming_the_file() {
    let sandbox = two_plugins();
    let dir = profiles(&sandbox);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("pipe.json");
    let made = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path we own; no memory is shared.
    assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink(&fifo, dir.join("linked.json")).unwrap();
    let real = write_profile(&sandbox, "real", r#"{"plugins": ["alpha"]}"#);
    std::os::unix::fs::symlink(&real, dir.join("alias.json")).unwrap();
    for (name, what) in [
        ("pipe", "named pipe"),
        ("linked", "symbolic link"),
        ("alias", "symbolic link"),
    ] {
        let plan = json!([{"op": "list"}, {"op": "call", "name": "alpha_one"}]);
        let Some(r) = stdio(&sandbox, &["--profile", name], plan) else {
            return;
        };
        assert_eq!(r[0], json!([]), "{name}: fails closed");
        let said = text(&r[1]);
        assert!(
            said.contains(&format!(
                "the profile \"{name}\" cannot be read: it is a {what}"
            )),
            "{name}: {said}"
        );
        assert!(!said.contains(dir.to_str().unwrap()), "{name}: {said}");
        let log = std::fs::read_to_string(sandbox.root.path().join("serve.log")).unwrap();
        assert!(log.contains(&format!("{name}.json")), "{log}");
    }
    // A file larger than a profile may be is refused the same way.
    write_profile(&sandbox, "huge", &" ".repeat(300 * 1024));
    let plan = json!([{"op": "list"}, {"op": "call", "name": "alpha_one"}]);
    let r = stdio(&sandbox, &["--profile", "huge"], plan).unwrap();
    assert_eq!(r[0], json!([]));
    assert!(
        text(&r[1]).contains("the profile \"huge\" cannot be read: it is larger than"),
        "{}",
        r[1]
    );
}

#[test]
fn what_a_profile_leaves_out_sends_the_client_no_logs_and_no_updates() {
    let sandbox = Sandbox::new();
    chatty_plugins(&sandbox, &[("kept", &[]), ("left", &[])]);
    let path = write_profile(&sandbox, "live", r#"{"plugins": ["kept", "left"]}"#);
    let (kept, left) = ("chatty://kept/note", "chatty://left/note");
    let plan = json!([
        {"op": "call", "name": "left_look"},
        {"op": "subscribe", "uri": kept},
        {"op": "subscribe", "uri": left},
        {"op": "heard", "after": 1.5},
        {"op": "write", "path": path, "text": r#"{"plugins": ["kept"]}"#},
        {"op": "list_until", "lacks": "left_look", "within": 10},
        {"op": "heard", "after": 1},
        {"op": "heard", "after": 1.5},
        {"op": "subscribe", "uri": left},
        {"op": "write", "path": path, "text": r#"{"plugins": ["kept", "left"]}"#},
        {"op": "list_until", "has": "left_look", "within": 10},
        {"op": "heard", "after": 1},
        {"op": "heard", "after": 1.5},
    ]);
    let Some(r) = stdio(&sandbox, &["--profile", "live"], plan) else {
        return;
    };
    assert_eq!(text(&r[0]), "ok from left");
    assert_eq!(r[1]["ok"], true, "{}", r[1]);
    assert_eq!(r[2]["ok"], true, "{}", r[2]);
    let heard = |i: usize| (r[i]["logs"].to_string(), r[i]["updated"].to_string());
    let (logs, updated) = heard(3);
    assert!(
        logs.contains("secret log of left") && logs.contains("secret log of kept"),
        "{logs}"
    );
    assert!(
        updated.contains(left) && updated.contains(kept),
        "{updated}"
    );
    // Left out: its logs and updates stop; another's go on.
    assert_eq!(r[5]["ok"], true, "{}", r[5]);
    let (logs, updated) = heard(7);
    assert!(!logs.contains("secret log of left"), "{logs}");
    assert!(logs.contains("secret log of kept"), "{logs}");
    assert!(!updated.contains(left), "{updated}");
    assert!(updated.contains(kept), "{updated}");
    assert_eq!(r[8]["ok"], false, "{}", r[8]);
    // Taken back in: its logs come again, but the subscription the change
    // dropped is gone for good.
    assert_eq!(r[10]["ok"], true, "{}", r[10]);
    let (logs, updated) = heard(12);
    assert!(logs.contains("secret log of left"), "{logs}");
    assert!(!updated.contains(left), "{updated}");
}
