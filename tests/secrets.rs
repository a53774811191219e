//! The secret store through the real binary: a value set from stdin reaches
//! the plugin it is bound to, in the variable it lists, and no other plugin;
//! it is never printed, never in plugin.json, and no plugin can read the
//! store; a corrupt store withholds every secret and says so.

use crate::util;

use std::process::Output;

use serde_json::json;
use util::{Sandbox, stderr, stdout};

const VALUE: &str = "tok-7f3a9c-SECRET";

/// `plughost ARGS` with `input` on stdin, without the variable in the
/// environment (so only the store can give it).
fn run_with(sandbox: &Sandbox, args: &[&str], input: &str) -> Output {
    let mut cmd = sandbox.cmd();
    cmd.args(args).env_remove("API_TOKEN");
    util::run_input(cmd, input)
}

/// A plugin listing `API_TOKEN` whose tool answers what it got in it.
fn env_plugin(sandbox: &Sandbox, name: &str, tool: &str) {
    let mut m = util::manifest(name, tool);
    m["env"] = json!(["API_TOKEN"]);
    sandbox.write_plugin(
        name,
        &m,
        "#!/bin/sh\ncat >/dev/null\nprintf '{\"result\":\"got [%s]\"}\\n' \"$API_TOKEN\"\n",
    );
}

fn call(sandbox: &Sandbox, tool: &str, env_value: Option<&str>) -> Output {
    let mut cmd = sandbox.cmd();
    cmd.args(["call", tool, "{}"]).env_remove("API_TOKEN");
    if let Some(v) = env_value {
        cmd.env("API_TOKEN", v);
    }
    util::run(cmd)
}

#[test]
fn a_secret_reaches_the_plugin_it_is_bound_to_and_no_other() {
    let sandbox = Sandbox::new();
    env_plugin(&sandbox, "bound", "bound_echo");
    env_plugin(&sandbox, "other", "other_echo");
    for p in ["bound", "other"] {
        let out = util::run({
            let mut c = sandbox.cmd();
            c.args(["approve", p, "--yes"]);
            c
        });
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = run_with(
        &sandbox,
        &["secret", "set", "API_TOKEN", "--plugin", "bound"],
        &format!("{VALUE}\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains(VALUE), "{}", stdout(&out));

    // The store's value wins over plughost's own environment.
    let out = call(&sandbox, "bound_echo", Some("from-the-environment"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("got [{VALUE}]"));
    // Another plugin listing the same variable does not get it.
    let out = call(&sandbox, "other_echo", None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "got []");

    let out = run_with(&sandbox, &["secret", "list"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "API_TOKEN  bound  (clear)");
    let store = sandbox.state().join("secrets.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&store).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the store is readable by others: {mode:o}");

    // No plugin reads the store, even one granted every file.
    let mut m = util::manifest("reader", "reader_read");
    m["permissions"] = json!(["filesystem:read"]);
    sandbox.write_plugin(
        "reader",
        &m,
        &format!(
            "#!/bin/sh\ncat >/dev/null\nif cat '{}' >/dev/null 2>&1; then echo '{{\"result\":\"read it\"}}'; else echo '{{\"result\":\"refused\"}}'; fi\n",
            store.display()
        ),
    );
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["approve", "reader", "--yes"]);
        c
    });
    assert!(out.status.success(), "{}", stderr(&out));
    let out = call(&sandbox, "reader_read", None);
    assert_eq!(stdout(&out).trim(), "refused", "{}", stderr(&out));

    // Removed: the plugin gets nothing (the environment has none).
    let out = run_with(&sandbox, &["secret", "rm", "API_TOKEN"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = call(&sandbox, "bound_echo", None);
    assert_eq!(stdout(&out).trim(), "got []");
    let out = run_with(&sandbox, &["secret", "rm", "API_TOKEN"], "");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no secret named API_TOKEN"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_corrupt_store_withholds_secrets_and_says_so() {
    let sandbox = Sandbox::new();
    env_plugin(&sandbox, "bound", "bound_echo");
    sandbox.write_plugin(
        "plain",
        &util::manifest("plain", "plain_ping"),
        &util::answer_script("pong"),
    );
    let out = util::run({
        let mut c = sandbox.cmd();
        c.args(["approve", "bound", "--yes"]);
        c
    });
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::create_dir_all(sandbox.state()).unwrap();
    std::fs::write(
        sandbox.state().join("secrets.json"),
        "{\"version\": 1, \"secrets\": ",
    )
    .unwrap();
    let out = call(&sandbox, "bound_echo", Some("from-the-environment"));
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("secret store") && stderr(&out).contains("is corrupt"),
        "{}",
        stderr(&out)
    );
    // A plugin that lists no variable runs as before.
    let out = call(&sandbox, "plain_ping", None);
    assert!(out.status.success(), "{}", stderr(&out));
    // Setting over a corrupt store is refused, not a silent reset.
    let out = run_with(&sandbox, &["secret", "set", "API_TOKEN"], "v\n");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is corrupt"), "{}", stderr(&out));
}

#[test]
fn add_with_a_secret_keeps_it_out_of_the_manifest() {
    let sandbox = Sandbox::new();
    let out = run_with(
        &sandbox,
        &[
            "add",
            "--name",
            "tokened",
            "--secret",
            "API_TOKEN",
            "--",
            "/bin/cat",
        ],
        &format!("{VALUE}\n"),
    );
    // cat is no MCP server: the listing fails, the plugin folder stays.
    let manifest = std::fs::read_to_string(sandbox.plugins().join("tokened/plugin.json"))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    assert!(!manifest.contains(VALUE), "{manifest}");
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(m["env"], json!(["API_TOKEN"]));
    let out = run_with(&sandbox, &["secret", "list"], "");
    assert_eq!(
        stdout(&out).trim(),
        "API_TOKEN  tokened  (clear)",
        "{}",
        stderr(&out)
    );
    let text = std::fs::read_to_string(sandbox.state().join("secrets.json")).unwrap();
    assert!(text.contains(VALUE));
}

/// `add --secret NAME` never shares a secret kept for another plugin
/// without asking: with no terminal to ask on, it is refused and says how
/// to share it; the secret stays bound as it was.
#[test]
fn add_does_not_share_a_secret_kept_for_another_plugin() {
    let sandbox = Sandbox::new();
    let out = run_with(
        &sandbox,
        &["secret", "set", "API_TOKEN", "--plugin", "github"],
        "v\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_with(
        &sandbox,
        &[
            "add",
            "--name",
            "newcomer",
            "--secret",
            "API_TOKEN",
            "--",
            "/bin/cat",
        ],
        "",
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is kept for github; to share it with newcomer run: plughost secret set API_TOKEN --plugin newcomer --plugin github"),
        "{}",
        stderr(&out)
    );
    let out = run_with(&sandbox, &["secret", "list"], "");
    assert_eq!(stdout(&out).trim(), "API_TOKEN  github  (clear)");
}

/// A running worker does not keep a secret that was changed or removed:
/// the next call gets a worker with the store as it is now.
#[tokio::test]
async fn a_changed_secret_reaches_the_next_call_of_a_running_worker() {
    let sandbox = Sandbox::new();
    let mut m = util::manifest("keeper", "keeper_echo");
    m["env"] = json!(["API_TOKEN"]);
    m["persistent"] = json!({});
    sandbox.write_plugin(
        "keeper",
        &m,
        "#!/bin/sh\nwhile IFS= read -r line; do printf '{\"result\":\"got [%s]\"}\\n' \"$API_TOKEN\"; done\n",
    );
    let store = plughost::secrets::SecretStore::new(sandbox.state())
        .keeping_in(plughost::secrets::Kept::File);
    store.set("API_TOKEN", "first", &["keeper".into()]).unwrap();
    let host = plughost::PluginHost::builder()
        .plugins_dir(sandbox.plugins())
        .state_dir(sandbox.state())
        .build()
        .unwrap();
    host.approve("keeper").await.unwrap();
    let call = || host.call("keeper_echo", json!({}), Default::default());
    assert_eq!(call().await.unwrap().result, "got [first]");
    assert_eq!(call().await.unwrap().result, "got [first]");
    store
        .set("API_TOKEN", "second", &["keeper".into()])
        .unwrap();
    assert_eq!(call().await.unwrap().result, "got [second]");
    store.remove("API_TOKEN").unwrap();
    assert_eq!(call().await.unwrap().result, "got []");
    host.stop_workers().await;
}
